"""The answerer named by a setting: 'extractive' (no LLM), 'openai:<model>' (any OpenAI-compatible endpoint) or
'local[:model]' (the bundled llama.cpp server)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from paperchat.errors import ConfigError
from paperchat.providers.answerers import Answerer, ExtractiveAnswerer, OpenAIAnswerer
from paperchat.providers.local_answerer import LocalAnswerer
from paperchat.providers.local_llm import shared_server
from paperchat.providers.local_models import get_model

if TYPE_CHECKING:
    from paperchat.settings import Settings
    from paperchat.types import Embedder


class AnswererSpec(NamedTuple):
    """An answerer name taken apart: `kind` is 'extractive', 'openai' or 'local'; `model` the model of 'openai', or
    of 'local' ('' = Settings.local.model)."""

    kind: str
    model: str


def parse_answerer(name: str) -> AnswererSpec:
    """The one reader of the answerer grammar: 'extractive' | 'openai:<model>' | 'local' | 'local:<model>' (the
    models of `providers.local_models`: qwen1.5b, tiny).

    Raises:
        ConfigError: the name is none of these; the message lists the valid choices.
    """
    if name in ("extractive", "local"):
        return AnswererSpec(name, "")
    kind, sep, model = name.partition(":")
    if kind == "openai" and sep and model:
        return AnswererSpec("openai", model)
    if kind == "local" and sep and model:
        return AnswererSpec("local", get_model(model).name)
    raise ConfigError(f"unknown answerer {name!r}", "set PAPERCHAT_ANSWERER to 'extractive', 'openai:<model>', 'local' or 'local:tiny'")


def get_answerer(settings: Settings, name: str | None = None, embedder: Embedder | None = None) -> Answerer:
    """The answerer named by `settings.answerer` (or `name`); the extractive one reranks its sentences
    with `embedder` when given."""
    spec = parse_answerer(name or settings.answerer)
    if spec.kind == "extractive":
        return ExtractiveAnswerer(embedder=embedder)
    if spec.kind == "openai":
        return OpenAIAnswerer(spec.model, settings.llm_base_url, settings.llm_timeout_s, settings.llm_max_retries)
    # the bundled llama.cpp server, spoken to through the same OpenAI-compatible path (short prompt, cleaned stream)
    server = shared_server(settings, spec.model)
    loc = settings.local
    return LocalAnswerer(
        server.alias, server.base_url, settings.llm_timeout_s, settings.llm_max_retries, loc.max_tokens, loc.max_sources, loc.source_chars, loc.sentences,
        embedder,
    )
