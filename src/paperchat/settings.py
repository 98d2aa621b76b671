"""One Settings object, read from the environment (PAPERCHAT_ prefix, nested with __) and passed explicitly.

`load_settings` is how a command builds it: a misspelled PAPERCHAT_ variable or a bad value is a
`ConfigError` of one line (with the closest valid name), not a silent default or a pydantic traceback.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from paperchat.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _default_topics_file() -> Path:
    bundled = PROJECT_ROOT / "ingest" / "topics.toml"
    return bundled if bundled.exists() else Path("ingest/topics.toml")


class RetrievalSettings(BaseModel):
    """Hybrid retrieval: fusion, scope and abstention (where the defaults come from: docs/measured.md)."""

    k: int = Field(default=10, ge=1, le=50, description="sources offered to the answerer")
    candidates: int = Field(
        default=100, ge=10, description="candidates taken from each of dense and BM25 before fusion",
    )
    rrf_k: int = Field(default=10, ge=1, description="reciprocal-rank-fusion constant")
    dense_weight: float = Field(default=0.8, ge=0.0, description="weight of the dense ranking in the fusion")
    lexical_weight: float = Field(default=1.0, ge=0.0, description="weight of the BM25 ranking in the fusion")
    paper_dense_weight: float = Field(
        default=0.5, ge=0.0, description="weight of the dense ranking for questions about one paper",
    )
    rerank_depth: int = Field(
        default=30, ge=1, le=100, description="with the paper reranker on: papers of the fused ranking it reorders",
    )
    rerank_weight: float = Field(
        default=0.5, ge=0.0, description="with the paper reranker on: weight of its logit against the fused rank",
    )
    scope_idf: float = Field(
        default=0.5, ge=0.0,
        description="BM25 IDF from inside the scope: (scope IDF / store IDF) ** this (0 = store-wide IDF)",
    )
    feedback_chunks: int = Field(
        default=3, ge=0,
        description="topic questions: move the dense query toward BM25's best this-many chunks (0 = off)",
    )
    feedback_weight: float = Field(
        default=0.5, ge=0.0, description="how far the dense query moves toward those chunks' mean vector",
    )
    lexical_feedback_terms: int = Field(
        default=0, ge=0,
        description="topic questions: add this many words of BM25's best chunks to its query (0 = off)",
    )
    lexical_feedback_weight: float = Field(
        default=0.3, ge=0.0, description="weight of the strongest expansion word relative to a query word",
    )
    context_chars: int = Field(
        default=500, ge=0, le=2000,
        description="PDF passages: characters of the page read on either side of a chunk (0 = none)",
    )
    sentence_weight: float = Field(
        default=0.0, ge=0.0,
        description="paper questions: weight of a ranking by each chunk's best sentence pair (0 = off)",
    )
    topic_outside_weight: float = Field(
        default=0.85, ge=0.0, le=1.0,
        description="topic questions: score share kept by papers outside the topic's rules (0 = hard filter)",
    )
    topic_similarity: float = Field(
        default=0.0, ge=0.0, le=1.0,
        description="topic questions: chunks this close to the topic's mean vector count as members (0 = off)",
    )
    topic_learned: bool = Field(
        default=False,
        description="topic questions: the topic's learned members (`paperchat topics learn`) count as members",
    )
    title_weight: float = Field(
        default=0.1, ge=0.0,
        description="topic questions: weight of the BM25 of a paper's title added to its chunks' (0 = off)",
    )
    aspect_weight: float = Field(
        default=1.0, ge=0.0,
        description="topic questions: share of the fusion given to a many-sided question's sides (0 = off)",
    )
    neighbour_weight: float = Field(
        default=0.0, ge=0.0,
        description="topic questions: weight of a dense ranking around the best papers found first (0 = off)",
    )
    neighbour_papers: int = Field(
        default=5, ge=1, description="how many of the best papers found first make the neighbour ranking's centre",
    )
    neighbour_move: float = Field(
        default=1.0, ge=0.0,
        description="how far the question's vector moves toward that centre (1 = as far as its own length)",
    )
    dense_backend: Literal["memory", "chroma"] = Field(
        default="memory",
        description="dense search: 'memory' (exact cosine over the index's vectors) or 'chroma' (HNSW)",
    )
    max_per_paper: int = Field(default=2, ge=1, description="topic scope: at most this many chunks of one paper")
    max_per_page: int = Field(
        default=0, ge=0,
        description="paper questions: at most this many chunks of one page before other pages (0 = off)",
    )
    abstain_below: float = Field(
        default=0.20, description="abstain when the best dense cosine similarity is below this",
    )


class AnswerSettings(BaseModel):
    """How answers are composed without an LLM and when they are refused (docs/measured.md, Quality)."""

    max_papers: int = Field(default=10, ge=1, le=50, description="topic answers: at most this many papers in the map")
    context_sentences: int = Field(
        default=2, ge=0, le=5, description="paper answers: sentences of context after the one that holds the answer",
    )
    refuse_below: float = Field(
        default=0.26, description="paper questions: refuse when the evidence strength is below this",
    )
    reader_mix: float = Field(
        default=24.0, ge=0.0, le=100.0,
        description="with the reader on: weight of the rules' score added to the reader's logit",
    )
    reader_combine: bool = Field(
        default=True,
        description="with the reader on: order sentences by the fitted combination (reader-sentence/combine.json)",
    )
    reader_refuse_below: float | None = Field(
        default=-2.8,
        description="with the reader on: refuse when the reader's best logit is below this (None = never)",
    )
    refuse_below_topic: float = Field(
        default=0.0, description="topic questions: the same evidence-strength refusal threshold (0 = off)",
    )
    min_support: float = Field(
        default=0.5, ge=0.0, le=1.0,
        description="LLM answers: share of a sentence's content words its cited passages must hold",
    )
    refuse_asked_below: float = Field(
        default=0.0, ge=0.0, le=1.0,
        description="paper questions: refuse when no top-3 sentence holds this share of what is asked (0 = off)",
    )
    refuse_missing_names: bool = Field(
        default=True, description="paper questions: refuse when a name the question gives (MS MARCO) is in no passage",
    )
    refuse_unstated_setting: bool = Field(
        default=True,
        description="paper questions: refuse 'what learning rate'-style questions no sentence gives a value for",
    )
    refuse_unstated_measure: bool = Field(
        default=True,
        description="paper questions: refuse asking for money, a duration or a count that no sentence states",
    )


class LocalLLMSettings(BaseModel):
    """The bundled llama.cpp server of the `local` answerer (extra `local`; docs/guide.md)."""

    model: str = Field(
        default="qwen1.5b",
        description="what plain 'local' serves: 'qwen1.5b' (Qwen2.5-Coder-1.5B) or 'tiny' (SmolLM2-135M, tests)",
    )
    threads: int = Field(
        default=0, ge=0,
        description="llama.cpp threads for generation and prompt reading (0 = usable CPUs - 1, at least 1)",
    )
    extra_bufts: bool = Field(
        default=False, description="let llama.cpp repack weights into CPU-specific buffer types (AMX, AVX-512)",
    )
    n_ctx: int = Field(default=4096, ge=512, description="context window of the local server, in tokens")
    max_tokens: int = Field(default=256, ge=16, description="longest local answer, in tokens")
    max_sources: int = Field(
        default=5, ge=1, description="local answers with sentences = 0: how many sources the model is shown",
    )
    source_chars: int = Field(
        default=700, ge=100,
        description="local answers with sentences = 0: each shown source cut at this many characters",
    )
    sentences: int = Field(
        default=8, ge=0,
        description="local answers: the model reads the question's best this-many sentences (0 = whole sources)",
    )


class Settings(BaseSettings):
    """Every setting of paperchat. Environment: PAPERCHAT_<FIELD>, nested as PAPERCHAT_RETRIEVAL__K."""

    model_config = SettingsConfigDict(
        env_prefix="PAPERCHAT_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    data_dir: Path = Field(default=Path(".paperchat"), description="where the store, search index and user data live")
    embedder: str = Field(
        default="minilm-openvino",
        description="embedding backend: minilm-openvino, minilm-onnx, minilm, minilm-onnx-int8 or hashing",
    )
    chunk_size: int = Field(default=1000, ge=200, le=4000, description="PDF chunk size in characters")
    chunk_overlap: int = Field(default=150, ge=0, le=1000, description="overlap between PDF chunks in characters")
    batch_size: int = Field(default=64, ge=1, le=1024, description="texts embedded per batch")
    topics_file: Path = Field(default_factory=_default_topics_file, description="TOML file defining topics")
    chroma_url: str | None = Field(
        default=None, description="use a Chroma server (http://host:port) instead of the local store",
    )
    pdf_extractor: Literal["pypdf", "pdfium"] = Field(
        default="pypdf",
        description="PDF text extractor: 'pypdf' (the reference) or 'pdfium' (faster; changing it re-chunks)",
    )
    pdf_timeout_s: float = Field(default=120.0, gt=0, description="give up parsing one PDF after this many seconds")
    max_pdf_mb: float = Field(default=50.0, gt=0, description="largest PDF accepted, in MB")
    max_pdf_pages: int = Field(default=2000, gt=0, description="most pages accepted in one PDF")
    max_record_line_mb: float = Field(
        default=8.0, gt=0,
        description="longest line of a JSONL metadata file, in MB; a longer one is reported and skipped",
    )
    answerer: str = Field(
        default="extractive", description="'extractive' (no LLM), 'openai:<model>', 'local' or 'local:<model>'",
    )
    reader: Literal["on", "off", "refuse"] = Field(
        default="on",
        description="paper answers: our sentence reader orders sentences and refuses ('on'), or only refuses ('refuse')",
    )
    reranker: Literal["on", "off"] = Field(
        default="on",
        description="topic answers: 'on' reorders the fused top papers by our paper reranker (models/reader-papers)",
    )
    judge: str = Field(
        default="", description="eval --judge: 'openai:<model>' (default: the answerer when it is openai:*)",
    )
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp); key from OPENAI_API_KEY",
    )
    llm_timeout_s: float = Field(default=60.0, gt=0, description="timeout of one LLM request, in seconds")
    llm_max_retries: int = Field(default=2, ge=0, description="retries (with backoff) of a failed LLM request")
    host: str = Field(default="127.0.0.1", description="address the app binds to")
    mcp_allowed_folders: list[Path] = Field(
        default_factory=list,
        description="`paperchat mcp`: folders whose PDFs add_pdf may read (JSON list; none: add_pdf is off)",
    )
    mcp_token: str | None = Field(
        default=None, description="`paperchat mcp --http`: bearer token clients must send (required beyond 127.0.0.1)",
    )
    port: int | None = Field(default=None, description="port of the app (else GRADIO_SERVER_PORT, else 7860)")
    auth: str | None = Field(default=None, description="'user:password' required when serving beyond 127.0.0.1")
    max_question_chars: int = Field(
        default=4000, ge=1, description="longest question accepted by the CLI, the app and its API, in characters",
    )
    retrieval: RetrievalSettings = Field(
        default_factory=RetrievalSettings, description="hybrid retrieval: fusion, scope and abstention",
    )
    answers: AnswerSettings = Field(default_factory=AnswerSettings, description="extractive answers and refusals")
    viewer_scale: float = Field(
        default=1.5, gt=0.2, le=4.0, description="paper viewer: pixels per PDF point at zoom 100% (1.5 = 108 dpi)",
    )
    viewer_cache_mb: float = Field(
        default=64.0, ge=1.0, description="most megabytes of rendered page images the viewer keeps in memory",
    )
    local: LocalLLMSettings = Field(
        default_factory=LocalLLMSettings, description="the local answerer's llama.cpp server",
    )
    arxiv_categories: list[str] = Field(
        default_factory=lambda: ["cs.CL", "cs.AI"], min_length=1,
        description="`paperchat update`: arXiv categories whose newest papers it fetches (JSON list)",
    )
    arxiv_api_url: str = Field(
        default="http://export.arxiv.org/api/query",
        description="`paperchat update`: the arXiv API (Atom) endpoint; tests point it at 127.0.0.1",
    )
    arxiv_delay_s: float = Field(
        default=3.0, ge=0.0,
        description="`paperchat update`: seconds between two requests to the arXiv API (arXiv asks for 3)",
    )
    arxiv_page_size: int = Field(
        default=200, ge=1, le=2000, description="`paperchat update`: entries asked for per request (max_results)",
    )
    arxiv_max_papers: int = Field(
        default=2000, ge=1,
        description="`paperchat update`: most entries read in one run (an empty store: the newest this many)",
    )
    arxiv_retries: int = Field(
        default=3, ge=0, le=10,
        description="`paperchat update`: retries of a failed request, waiting arxiv_delay_s x 2^n before each",
    )
    arxiv_timeout_s: float = Field(
        default=30.0, gt=0,
        description="`paperchat update`: most seconds one request may take, headers and body together",
    )
    arxiv_run_timeout_s: float = Field(
        default=900.0, gt=0,
        description="`paperchat update`: most seconds one run may spend; pages stored before it stay",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto",
        description="where the embedder runs: 'auto' (CUDA when there is a GPU), 'cpu' or 'cuda' (else CPU)",
    )
    models_dir: Path | None = Field(
        default=None, description="where exported models (minilm-onnx) are cached; default <data_dir>/models",
    )

    @property
    def chroma_dir(self) -> Path:
        """The local Chroma folder."""
        return self.data_dir / "chroma"

    @property
    def catalog_path(self) -> Path:
        """The SQLite catalogue."""
        return self.data_dir / "catalog.sqlite"

    @property
    def search_index_dir(self) -> Path:
        """The search index snapshots."""
        return self.data_dir / "lexical"

    @property
    def models_path(self) -> Path:
        """The exported-model cache (`models_dir`, else `<data_dir>/models`)."""
        return self.models_dir or self.data_dir / "models"

    @property
    def uploads_dir(self) -> Path:
        """The stored PDF copies (`<sha256>.pdf`)."""
        return self.data_dir / "uploads"


# -- building Settings for a command ---------------------------------------------------------------

PREFIX = "PAPERCHAT_"
# PAPERCHAT_ variables that are not settings: read by the test suite (tests/conftest.py, test_chroma_server.py,
# test_load.py, test_ray_ingest.py) and exported by scripts/test.sh, so every command the tests start sees them
NOT_SETTINGS = frozenset(
    {"PAPERCHAT_TEST_DATA", "PAPERCHAT_TEST_CHROMA_URL", "PAPERCHAT_TEST_RAY_ADDRESS", "PAPERCHAT_LOAD_SECONDS"}
)


def setting_names(model: type[BaseModel] = Settings, prefix: str = PREFIX) -> list[str]:
    """Every environment name that sets a field: PAPERCHAT_<FIELD>, and PAPERCHAT_<GROUP>__<FIELD> for
    nested groups (the group itself takes JSON)."""
    names = []
    for name, field in model.model_fields.items():
        env = prefix + name.upper()
        names.append(env)
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            names += setting_names(sub, env + "__")
    return names


def check_environment(environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")) -> None:
    """Refuse PAPERCHAT_ variables that set nothing (pydantic-settings would ignore them silently).

    Args:
        environ: the environment (os.environ when None).
        env_file: a .env file whose PAPERCHAT_ keys are checked too (read as Settings reads it).

    Raises:
        ConfigError: one line naming the unknown variable and the closest valid name.
    """
    valid = set(setting_names()) | NOT_SETTINGS
    found = [(k, "the environment") for k in (os.environ if environ is None else environ)]
    if env_file is not None and env_file.is_file():
        from dotenv import dotenv_values

        found += [(k, str(env_file)) for k in dotenv_values(env_file)]
    for key, where in found:
        name = key.upper()  # pydantic-settings reads names case-insensitively
        if name.startswith(PREFIX) and name not in valid:
            # compared without the prefix, which every name shares and which would make any name look close
            close = difflib.get_close_matches(
                name[len(PREFIX) :], [v[len(PREFIX) :] for v in sorted(valid - NOT_SETTINGS)], n=1, cutoff=0.6
            )
            hint = f"did you mean {PREFIX}{close[0]}? " if close else ""
            raise ConfigError(
                f"unknown setting {key} in {where}", f"{hint}fix or unset it; .env.example lists every setting"
            )


def _env_name(loc: tuple[int | str, ...]) -> str:
    return PREFIX + "__".join(str(part).upper() for part in loc)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment and .env (checked first, see `check_environment`) with overrides.

    Raises:
        ConfigError: an unknown PAPERCHAT_ variable, or a value that is not valid, in one line.
    """
    check_environment()
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = [f"{_env_name(e['loc'])}={e['input']!r}: {e['msg']}" for e in exc.errors()]
        raise ConfigError(
            f"bad setting {'; '.join(problems)}", "fix the value or unset it; .env.example lists every setting"
        ) from None
    except SettingsError as exc:  # a nested group given as malformed JSON
        raise ConfigError(
            f"bad setting: {exc}", "fix the value or unset it; .env.example lists every setting"
        ) from None
