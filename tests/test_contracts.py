"""One contract per interface: every embedder and every answerer passes the same tests.

A new implementation gets its tests by subclassing the contract and saying how to make one (`make`, or the
`embedder` / `answerer` fixture when it needs other fixtures). MiniLM and the local llama.cpp answerer are
in the slow layer; the hashing embedder, the extractive answerer and the OpenAI path (against the
deterministic server of tests/fake_llm.py) are fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from paperchat.citations import parse_citations
from paperchat.errors import ConfigError
from paperchat.library import Library
from paperchat.providers.answerer_factory import get_answerer
from paperchat.providers.answerers import Answerer, ExtractiveAnswerer, OpenAIAnswerer
from paperchat.providers.embedders import get_embedder
from paperchat.providers.hashing import HashingEmbedder
from paperchat.providers.minilm import MiniLMEmbedder
from paperchat.qa import QA
from paperchat.settings import Settings
from paperchat.types import Embedder, Scope, Source

from .conftest import ROOT
from .corpus import PAPER_ID, PAPER_PAGES, PAPER_TITLE
from .fake_llm import FakeLLM

# -- embedders -------------------------------------------------------------------------------------

RELEVANT = "Negative passages for training the dense retriever are chosen with BM25 and from the same batch."
OTHERS = [
    "The recipe needs rye flour, water, salt and a sourdough starter, and the dough rests overnight.",
    "Heavy rain and strong winds are expected along the coast on Sunday afternoon.",
    "The orchestra played a symphony by Sibelius after the interval.",
]
ODD = ["", " ", "a", "Ünïcödé — ∑ 数据 🙂", "word " * 3000, "[1] (2) {3} <4> 5%"]


class EmbedderContract:
    """What every embedder promises: unit-length float32 vectors of its dimension, the same for the same
    text however it is batched, and a query nearest to the passage that answers it."""

    name: str  # its Settings.embedder value

    def make(self) -> Embedder:
        raise NotImplementedError

    @pytest.fixture
    def embedder(self) -> Embedder:
        return self.make()

    def test_identity_and_factory(self, embedder: Embedder, tmp_path: object) -> None:
        assert isinstance(embedder.id, str) and embedder.id and isinstance(embedder.dim, int) and embedder.dim > 0
        chosen = get_embedder(Settings(embedder=self.name))  # type: ignore[call-arg]
        assert type(chosen) is type(embedder) and chosen.id == embedder.id and chosen.dim == embedder.dim

    def test_shapes_and_empty_batch(self, embedder: Embedder) -> None:
        none = embedder.embed([])
        assert none.shape == (0, embedder.dim) and none.dtype == np.float32
        two = embedder.embed(["one text", "another text"])
        assert two.shape == (2, embedder.dim) and two.dtype == np.float32
        q = embedder.embed_query("a question?")
        assert q.shape == (embedder.dim,) and q.dtype == np.float32

    def test_unit_length_for_any_text(self, embedder: Embedder) -> None:
        vecs = embedder.embed(ODD)
        assert np.isfinite(vecs).all()
        assert np.linalg.norm(vecs, axis=1) == pytest.approx(np.ones(len(ODD)), abs=1e-4)
        for text in ODD:
            assert float(np.linalg.norm(embedder.embed_query(text))) == pytest.approx(1.0, abs=1e-4)

    def test_deterministic_and_batch_independent(self, embedder: Embedder) -> None:
        texts = [RELEVANT, *OTHERS]
        once = embedder.embed(texts)
        assert np.allclose(once, embedder.embed(texts), atol=1e-5)
        assert np.allclose(once, embedder.embed(texts, batch_size=1), atol=1e-5)
        assert np.allclose(once[2], embedder.embed([texts[2]])[0], atol=1e-5)
        assert np.allclose(embedder.embed_query(RELEVANT), once[0], atol=1e-5)  # a query is embedded as a document

    def test_query_nearest_to_the_passage_that_answers_it(self, embedder: Embedder) -> None:
        docs = embedder.embed([*OTHERS, RELEVANT])
        q = embedder.embed_query("How are the negative passages chosen when the retriever is trained?")
        sims = docs @ q
        assert int(np.argmax(sims)) == len(OTHERS) and sims[-1] > 0.2 and sims[:-1].max() < sims[-1] - 0.1


class TestHashingEmbedder(EmbedderContract):
    name = "hashing"

    def make(self) -> Embedder:
        return HashingEmbedder()

    def test_same_vectors_in_a_fresh_process_without_torch(self, embedder: Embedder) -> None:
        """blake2b, not Python's per-process `hash`: a store built in one process is queried by another."""
        code = (
            "import json, sys\n"
            "from paperchat.providers.hashing import HashingEmbedder\n"
            f"v = HashingEmbedder().embed_query({RELEVANT!r})\n"
            "print(json.dumps({'v': v.tolist(), 'torch': 'torch' in sys.modules}))\n"
        )
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                           env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT / "src")})
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["torch"] is False
        assert np.array_equal(np.asarray(out["v"], dtype=np.float32), embedder.embed_query(RELEVANT))

    def test_words_not_meaning(self, embedder: Embedder) -> None:
        """It only knows words (stemmed, stop words dropped): say it in other words and it is lost."""
        a, b, c = embedder.embed(["Cars are fast.", "The car was fast", "Automobiles have high speed."])
        assert float(a @ b) == pytest.approx(1.0, abs=1e-5) and float(a @ c) == pytest.approx(0.0, abs=0.2)


@pytest.mark.slow
class TestMiniLMEmbedder(EmbedderContract):
    name = "minilm"

    @pytest.fixture
    def embedder(self, minilm: MiniLMEmbedder) -> Embedder:  # the session's one loaded model
        return minilm


def test_unknown_embedder_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown embedder 'bert'.*hashing, minilm"):
        get_embedder(Settings(embedder="bert"))  # type: ignore[call-arg]


# -- answerers -------------------------------------------------------------------------------------

QUESTION = "How are negative passages chosen when training the encoders?"
FAKE_REPLY = "Negative passages come from BM25 and from the other questions of the batch [2]. The encoders are two BERT networks [2]."


def paper_sources() -> list[Source]:
    """Pages 1 and 2 of the test paper as numbered sources (two: a short prompt for the local model)."""
    return [Source(n=i, paper_id=PAPER_ID, title=PAPER_TITLE, page=i, text=text, score=1.0 / i) for i, text in enumerate(PAPER_PAGES[:2], start=1)]


class AnswererContract:
    """What every answerer promises: a name and a model, an answer streamed as text pieces over numbered
    sources, and through QA an answer recorded under its name whose surviving citations were offered."""

    choice: str  # its Settings.answerer value

    def make(self) -> Answerer:
        raise NotImplementedError

    @pytest.fixture
    def answerer(self) -> Answerer:
        return self.make()

    @pytest.fixture
    def settings(self, fast_settings: Settings) -> Settings:
        """Settings whose `answerer` chooses this implementation."""
        return fast_settings.model_copy(update={"answerer": self.choice})

    def test_identity_and_factory(self, answerer: Answerer, settings: Settings) -> None:
        assert isinstance(answerer.name, str) and answerer.name and isinstance(answerer.model, str) and answerer.model
        chosen = get_answerer(settings)
        assert type(chosen) is type(answerer) and chosen.name == answerer.name and chosen.model == answerer.model

    def test_streams_text_pieces(self, answerer: Answerer) -> None:
        pieces = list(answerer.stream(QUESTION, paper_sources(), topic_level=False))
        assert pieces and all(isinstance(p, str) for p in pieces)
        assert "".join(pieces).strip()

    def test_through_qa_cites_only_what_it_was_offered(self, answerer: Answerer, demo_library: Library) -> None:
        ans = QA(demo_library, answerer=answerer).ask(QUESTION, Scope.for_paper(PAPER_ID), k=2)
        assert ans.answerer == answerer.name and ans.model == answerer.model and not ans.fallback
        assert ans.answer.strip() and not ans.abstained and len(ans.sources) <= 2
        offered = {s.n for s in ans.sources}
        assert set(parse_citations(ans.answer)) <= offered and {c.n for c in ans.citations} <= offered
        assert all(c.paper_id == PAPER_ID for c in ans.citations)


class TestExtractiveAnswerer(AnswererContract):
    choice = "extractive"

    def make(self) -> Answerer:
        return ExtractiveAnswerer()

    def test_quotes_the_sources_verbatim(self, answerer: Answerer) -> None:
        text = "".join(answerer.stream(QUESTION, paper_sources(), topic_level=False))
        assert "the top passages returned by BM25" in text and "[2]" in text


class TestExtractiveReranked(TestExtractiveAnswerer):
    """The extractive answerer as QA builds it: sentences reranked by the library's embedder."""

    def make(self) -> Answerer:
        return ExtractiveAnswerer(embedder=HashingEmbedder())


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    """One scripted OpenAI-compatible server for the module."""
    with FakeLLM(FAKE_REPLY) as server:
        yield server


class TestOpenAIAnswerer(AnswererContract):
    """The OpenAI path against the deterministic OpenAI-compatible server of tests/fake_llm.py."""

    choice = "openai:fake"

    @pytest.fixture
    def answerer(self, llm: FakeLLM) -> Answerer:
        return OpenAIAnswerer("fake", llm.url, timeout=10.0, max_retries=0)

    @pytest.fixture
    def settings(self, fast_settings: Settings, llm: FakeLLM) -> Settings:
        return fast_settings.model_copy(update={"answerer": self.choice, "llm_base_url": llm.url})

    def test_sends_the_numbered_sources(self, answerer: Answerer, llm: FakeLLM) -> None:
        assert "".join(answerer.stream(QUESTION, paper_sources(), topic_level=False)) == FAKE_REPLY
        prompt = json.dumps(llm.requests[-1])
        assert "[1]" in prompt and "[2]" in prompt and PAPER_PAGES[1][:60] in prompt and QUESTION in prompt


@pytest.mark.slow
class TestLocalAnswerer(AnswererContract):
    """The bundled llama.cpp server (the `local` extra) with its tiny model, started by the factory as the app starts
    it (the default model, Qwen 1.5B, answers in tests/test_local_llm.py)."""

    choice = "local:tiny"

    @pytest.fixture
    def answerer(self, settings: Settings) -> Answerer:
        from .test_local_llm import need_local

        need_local()
        # bounded: SmolLM2 on 2 busy cores wrote one unbounded answer in 190 s
        ans = get_answerer(settings.model_copy(update={"local": settings.local.model_copy(update={"max_tokens": 40})}))
        assert isinstance(ans, OpenAIAnswerer)
        return ans


def test_unknown_answerer_names_the_choices(fast_settings: Settings) -> None:
    with pytest.raises(ConfigError, match="'extractive', 'openai:<model>', 'local' or 'local:tiny'"):
        get_answerer(fast_settings, "gpt")
