"""Answerers: numbered sources + question -> cited text. Chosen by `Settings.answerer`:
'extractive' (no LLM), 'openai:<model>' (any OpenAI-compatible endpoint), 'local[:<model>]' (bundled llama.cpp)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from paperchat.answering import Reading, read_sources, topic_map
from paperchat.answering.combine import Combiner
from paperchat.answering.select import SentenceScorer
from paperchat.answering.text import widen
from paperchat.answering.topic_map import TopicContext
from paperchat.errors import AnswererError, ConfigError
from paperchat.passages import clip
from paperchat.prompts import CANNOT_ANSWER, REMOVED_INSTRUCTION, SYSTEM_PROMPT, USER_TEMPLATE
from paperchat.text import Tokenizer
from paperchat.types import Source

if TYPE_CHECKING:
    from paperchat.types import Embedder


class Answerer(Protocol):
    """Streams the answer text for a question over numbered sources.

    `can_complete` says whether `complete` works: LLM answerers complete any prompt (follow-up rewrites,
    the evaluation judge); the extractive one cannot, and callers ask this instead of testing the class.
    """

    name: str
    model: str
    can_complete: bool
    synthesizes: bool  # a model writes the text: each sentence is checked against what it cites, the quotes kept as evidence

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool, context: TopicContext | None = None) -> Iterator[str]:
        """Yield pieces of the answer text (tokens for LLMs, sentences for the extractive answerer); `context` is
        what the topic holds beyond the sources (the extractive topic map reads it; an LLM is given the sources)."""
        ...

    def complete(self, prompt: str) -> str:
        """One non-streamed completion of a free prompt (only when `can_complete`).

        Raises:
            AnswererError: the answerer cannot complete prompts, or its endpoint failed.
        """
        ...


class ExtractiveAnswerer:
    """Answers by quoting the sentences of the sources that answer the question (paperchat.answering).

    Paper answers: the sentence that holds the answer first, cited with its page, then at most
    `context_sentences` more. Topic answers: a map of the literature, the papers grouped by what they do
    and each quoted where it answers this question (at most `max_papers`). With an embedder, sentences are
    also scored by their MiniLM similarity to the question.
    """

    name = "extractive"
    model = "extractive"
    can_complete = False
    synthesizes = False

    def __init__(
        self,
        max_sentences: int = 4,
        per_paper: int = 1,
        embedder: Embedder | None = None,
        rerank: int = 8,
        max_papers: int = 10,
        context_sentences: int = 2,
        stored_vectors: Callable[[Sequence[str]], Mapping[str, np.ndarray]] | None = None,
        reader: SentenceScorer | None = None,
        reader_mix: float = 0.0,
        reader_orders: bool = True,
        reader_combine: Combiner | None = None,
    ) -> None:
        # max_sentences, per_paper and rerank are kept for callers of the earlier answerer; unused
        self.embedder = embedder
        # the store's vectors of the sources' chunks: the topic map groups papers by them instead of embedding
        # the same texts again (the chunk text is what was embedded at ingest)
        self.stored_vectors = stored_vectors
        self.max_papers = max_papers
        self.context_sentences = context_sentences
        self.reader = reader  # the trained sentence reader: paper answers only (topic maps keep the rules)
        self.reader_mix = reader_mix
        self.reader_orders = reader_orders  # False: the reader only joins the refusal check; the rules order the sentences
        self.reader_combine = reader_combine  # the fitted combination of logit and rules (None: the fixed mix)
        self.tokenizer = Tokenizer()
        self._lock = threading.Lock()
        self._last: tuple[tuple[str, tuple[str, ...], bool], Reading] | None = None

    def read(self, question: str, sources: Sequence[Source], paper: bool = False) -> Reading:
        """The question read against the sources (the last reading is kept: QA's evidence check and the
        answer share it); for a paper question the sentence reader, when there is one, ranks the sentences."""
        reader = self.reader if paper else None
        key = (question, tuple(f"{s.n}:{s.chunk_id or s.text[:64]}" for s in sources), reader is not None)
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
        reading = read_sources(question, sources, self.tokenizer, self.embedder, reader=reader, reader_mix=self.reader_mix, reorder=self.reader_orders,
                                combine=self.reader_combine)
        with self._lock:
            self._last = (key, reading)
        return reading

    def compose(self, question: str, sources: Sequence[Source], topic_level: bool, context: TopicContext | None = None) -> list[str]:
        """The answer as lines; the cannot-answer phrase when no sentence shares a word with the question."""
        reading = self.read(question, sources, paper=not topic_level)
        if not reading.ranked or reading.ranked[0].lexical <= 0.0 and reading.ranked[0].cosine <= 0.0:
            return [CANNOT_ANSWER]
        if topic_level:
            return self._map(reading, sources, context)
        return self._paper(reading, sources)

    def _paper(self, reading: Reading, sources: Sequence[Source]) -> list[str]:
        """The best sentence first (with the sentence it leans on, `widen`), then up to `context_sentences` more
        that the first line does not already quote."""
        by_n = {s.n: s for s in sources}
        pieces: list[str] = []
        quoted: list[str] = []
        for sc in reading.ranked:
            if len(pieces) > self.context_sentences:
                break
            if any(sc.text in q for q in quoted):
                continue
            src = by_n[sc.cand.n]
            text = widen(sc.text, src.text, reading.focus, self.tokenizer, titled=src.page is None) if not pieces else sc.text
            quoted.append(text)
            where = f" (p. {src.page})" if src.page else ""
            lead = "The paper says" if not pieces else "It also notes"
            pieces.append(f'{lead}{where}: "{text}" [{sc.cand.n}]\n')
        return pieces

    def _map(self, reading: Reading, sources: Sequence[Source], context: TopicContext | None) -> list[str]:
        lines = topic_map.paper_lines(reading.focus, reading.ranked, sources)[: self.max_papers]
        if not lines:
            return [CANNOT_ANSWER]
        vectors = self._vectors([p.source for p in lines]) if self.embedder is not None and len(lines) > 3 else None
        if vectors is None:
            groups = [topic_map.Group("", lines)]
        else:
            groups = topic_map.build_groups(lines, vectors, reading.focus)
        return topic_map.render(groups, topic_map.header(reading.focus, len(lines), context), context)

    def _vectors(self, sources: Sequence[Source]) -> np.ndarray:
        """The sources' vectors: the stored ones when every chunk has one, else embedded now."""
        if self.stored_vectors is not None and all(s.chunk_id for s in sources):
            try:
                got = self.stored_vectors([s.chunk_id for s in sources])
            except Exception:  # noqa: BLE001 - a store that cannot answer costs time, not the answer: embed instead
                got = {}
            if all(s.chunk_id in got for s in sources):
                return np.stack([got[s.chunk_id] for s in sources])
        assert self.embedder is not None
        return np.asarray(self.embedder.embed([s.text for s in sources]))

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool, context: TopicContext | None = None) -> Iterator[str]:
        """Yield the composed answer, one line at a time."""
        yield from self.compose(question, sources, topic_level, context)

    def complete(self, prompt: str) -> str:
        """Not available: the extractive answerer only quotes sources."""
        raise AnswererError("the extractive answerer cannot complete a prompt", "use an LLM answerer (openai:<model> or local)")


# A sentence that addresses the model rather than describing research: prompt-injection phrasing. Kept narrow
# (an imperative to the assistant about its instructions, its answer or its role) so papers about prompt injection
# still read normally; such a sentence is replaced, and the answer's support check does the rest.
_INJECTION = re.compile(
    r"(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|preceding|system)\s+(?:instructions?|prompts?|rules|messages?)"
    r"|(?:answer|reply|respond|say|output|print|write)\s+(?:only\s+|just\s+|exactly\s+|with\s+)+['\"“]?(?-i:[A-Z0-9]{3,})\b"
    r"|\byou\s+are\s+now\b|\bnew\s+instructions?\s*:|\bsystem\s+prompt\s*:|</?\s*(?:source|system|instructions?)\b",
    re.IGNORECASE,
)
_TO_END = re.compile(f"(?:{_INJECTION.pattern})[^.!?]*[.!?]?", re.IGNORECASE)
_SENT = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")


def fence(text: str) -> str:
    """A source's text made safe to quote inside <source> tags: a sentence with prompt-injection phrasing is
    replaced by REMOVED_INSTRUCTION, and no tag can be closed or opened from inside."""
    if _INJECTION.search(text):
        text = "".join(REMOVED_INSTRUCTION + " " if _INJECTION.search(m.group(0)) else m.group(0) for m in _SENT.finditer(text) if m.group(0))
        text = _TO_END.sub(REMOVED_INSTRUCTION, text)  # a phrase across a line break is in no one sentence: to its end
    return text.replace("<", "‹").replace(">", "›")


def format_sources(sources: Sequence[Source], max_chars: int = 1200, page_chars: int = 2200) -> str:
    """The numbered sources as the prompt shows them: an abstract cut at max_chars, a PDF passage (a chunk read in
    its page, up to about 2,000 characters) at page_chars around its middle, where the matched chunk is."""
    rows = []
    for s in sources:
        where = f", page {s.page}" if s.page else ""
        if s.page:
            text = clip(s.text, page_chars)
        else:
            text = s.text if len(s.text) <= max_chars else s.text[:max_chars] + " ..."
        title = fence(" ".join(s.title.split()))
        rows.append(f"[{s.n}] {title} ({s.date.isoformat() if s.date else 'n.d.'}{where})\n<source>\n{fence(text)}\n</source>")
    return "\n\n".join(rows)


class OpenAIAnswerer:
    """Any OpenAI-compatible chat endpoint through langchain-openai's ChatOpenAI, streamed token by token.

    The key comes from OPENAI_API_KEY as the OpenAI SDK reads it; local servers get a placeholder key.
    `name` is what answer records show ('openai', or 'local' for the bundled llama.cpp server).
    """

    can_complete = True
    synthesizes = True

    def __init__(self, model: str, base_url: str | None, timeout: float, max_retries: int, name: str = "openai", max_tokens: int | None = None) -> None:
        import os

        from langchain_openai import ChatOpenAI

        self.name = name
        self.model = model
        self.base_url = base_url
        key = os.environ.get("OPENAI_API_KEY")
        if not key and not base_url:
            raise ConfigError(
                f"the answerer openai:{model} needs OPENAI_API_KEY",
                "export OPENAI_API_KEY=..., or set PAPERCHAT_LLM_BASE_URL to a local server, or use PAPERCHAT_ANSWERER=extractive",
            )
        self.llm = ChatOpenAI(
            model=model,
            base_url=base_url,
            api_key=key or "not-needed",
            timeout=timeout,
            max_retries=max_retries,
            temperature=0.0,
            streaming=True,
            max_tokens=max_tokens,
        )

    def messages(self, question: str, sources: Sequence[Source]) -> list[tuple[str, str]]:
        """The chat messages of one question: the system prompt and the question with its numbered sources."""
        return [("system", SYSTEM_PROMPT), ("user", USER_TEMPLATE.format(question=question, sources=format_sources(sources)))]

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool, context: TopicContext | None = None) -> Iterator[str]:
        """Tokens as the endpoint sends them (AnswererError when it fails or stops without finishing)."""
        finished = False
        try:
            for chunk in self.llm.stream(self.messages(question, sources)):
                text = chunk.content if isinstance(chunk.content, str) else ""
                finished = finished or bool(chunk.response_metadata.get("finish_reason"))
                if text:
                    yield text
        except Exception as exc:  # openai/httpx raise many types; all mean "the endpoint failed"
            where = self.base_url or "api.openai.com"
            raise AnswererError(
                f"the LLM endpoint {where} failed ({type(exc).__name__}: {str(exc)[:200]})",
                "check that the server is running and the model name is right",
            ) from exc
        if not finished:
            raise AnswererError(
                f"the LLM endpoint {self.base_url or 'api.openai.com'} cut the answer off midway (no end of stream)",
                "check the server's logs; the answer below is the extractive one",
            )

    def complete(self, prompt: str) -> str:
        """One non-streamed completion (follow-up rewrites, the evaluation judge)."""
        try:
            res = self.llm.invoke([("user", prompt)])
        except Exception as exc:
            raise AnswererError(f"the LLM endpoint failed ({type(exc).__name__})", "check the server") from exc
        return res.content if isinstance(res.content, str) else ""
