"""Answerers: numbered sources + question -> cited text. Chosen by `Settings.answerer`:
'extractive' (no LLM), 'openai:<model>' (any OpenAI-compatible endpoint), 'local' (bundled llama.cpp)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from paperchat.errors import AnswererError, ConfigError
from paperchat.prompts import CANNOT_ANSWER, SYSTEM_PROMPT, USER_TEMPLATE
from paperchat.text import Tokenizer, split_sentences
from paperchat.types import Source

if TYPE_CHECKING:
    from paperchat.providers.embedders import Embedder
    from paperchat.settings import Settings


class Answerer(Protocol):
    """Streams the answer text for a question over numbered sources.

    `can_complete` says whether `complete` works: LLM answerers complete any prompt (follow-up rewrites,
    the evaluation judge); the extractive one cannot, and callers ask this instead of testing the class.
    """

    name: str
    model: str
    can_complete: bool

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool) -> Iterator[str]:
        """Yield pieces of the answer text (tokens for LLMs, sentences for the extractive answerer)."""
        ...

    def complete(self, prompt: str) -> str:
        """One non-streamed completion of a free prompt (only when `can_complete`).

        Raises:
            AnswererError: the answerer cannot complete prompts, or its endpoint failed.
        """
        ...


class AnswererSpec(NamedTuple):
    """An answerer name taken apart: `kind` is 'extractive', 'openai' or 'local'; `model` the model of 'openai'."""

    kind: str
    model: str


def parse_answerer(name: str) -> AnswererSpec:
    """The one reader of the answerer grammar: 'extractive' | 'openai:<model>' | 'local'.

    Raises:
        ConfigError: the name is none of these; the message lists the valid choices.
    """
    if name in ("extractive", "local"):
        return AnswererSpec(name, "")
    kind, sep, model = name.partition(":")
    if kind == "openai" and sep and model:
        return AnswererSpec("openai", model)
    raise ConfigError(f"unknown answerer {name!r}", "set PAPERCHAT_ANSWERER to 'extractive', 'openai:<model>' or 'local'")


_NUMBERISH = re.compile(r"^[\d.,%±()/+\-x]+$")
# A sentence that states what a paper does ("we propose ...") answers "what do papers do about X" better
# than the opening sentence that restates the problem in the question's own words.
_CONTRIBUTION = re.compile(
    r"\b(?:we|this (?:paper|work|study)|our (?:method|approach|framework))\s+(?:\w+\s+)?"
    r"(?:propose|introduce|present|develop|design|build|formulate)s?\b",
    re.I,
)


def _tabular(sentence: str) -> bool:
    """A 'sentence' that is mostly numbers is a table row run together by the PDF text extractor, not prose."""
    words = sentence.split()
    return len(words) >= 8 and sum(bool(_NUMBERISH.match(w)) for w in words) / len(words) > 0.3


def _sentences(src: Source) -> list[str]:
    """The sentences of a source that can be quoted as an answer."""
    sents = split_sentences(src.text)
    if src.page is None and len(sents) > 1:
        sents = sents[1:]  # an abstract chunk starts with the title: not an answer sentence
    return [s for s in sents if 25 <= len(s) <= 600 and not _tabular(s)]


def _what_it_does(src: Source, best: str, order: dict[str, int]) -> str:
    """For a topic answer, the paper's own statement of what it does (the best ranked one when it has
    several) rather than its best-matching sentence, which is often the opening restatement of the problem."""
    if _CONTRIBUTION.search(best):
        return best
    said = [s for s in _sentences(src) if _CONTRIBUTION.search(s)]
    if not said:
        return best
    return min(said, key=lambda s: order.get(s, len(order)))


class ExtractiveAnswerer:
    """Composes an answer from the most relevant sentences of the sources, quoting them verbatim.

    Sentences are scored by the stemmed query words they contain (each word counts once, rarer words in
    the sources count more), plus a small bonus for the source's rank. With an embedder, the best
    `rerank` of them are then re-scored by adding their MiniLM similarity to the question (a sentence
    that says the answer in other words than the question's). Topic answers name each of the best
    papers and quote the sentence where it says what it does ("we propose ..."), falling back to its best
    sentence; paper answers give the best sentences in order of relevance.
    """

    name = "extractive"
    model = "extractive"
    can_complete = False

    def __init__(self, max_sentences: int = 4, per_paper: int = 1, embedder: Embedder | None = None, rerank: int = 8) -> None:
        self.max_sentences = max_sentences
        self.per_paper = per_paper
        self.embedder = embedder
        self.rerank = rerank
        self._tok = Tokenizer()

    def rank_sentences(self, question: str, sources: Sequence[Source]) -> list[tuple[float, int, str]]:
        """(score, source number, sentence) for every quotable sentence that shares a word with the question, best first."""
        q = set(self._tok(question))
        if not q:
            return []
        df: dict[str, int] = {}
        sent_rows: list[tuple[int, str, set[str]]] = []
        for src in sources:
            for s in _sentences(src):
                toks = set(self._tok(s))
                sent_rows.append((src.n, s, toks))
                for t in toks & q:
                    df[t] = df.get(t, 0) + 1
        n = max(len(sent_rows), 1)
        out = []
        for src_n, s, toks in sent_rows:
            hit = toks & q
            if not hit:
                continue
            score = sum(1.0 + (n / df[t]) ** 0.5 / 4 for t in hit) / (len(q) ** 0.5)
            score += 0.3 / src_n  # earlier sources were ranked higher by retrieval
            out.append((score, src_n, s))
        out.sort(key=lambda r: -r[0])
        if self.embedder is not None and len(out) > 1 and self.rerank > 1:
            out = self._rerank(self.embedder, question, out)
        return out

    def _rerank(self, embedder: Embedder, question: str, ranked: list[tuple[float, int, str]]) -> list[tuple[float, int, str]]:
        """The head of the word ranking re-scored: word score relative to the best one, plus cosine."""
        head = ranked[: max(self.rerank, self.max_sentences)]
        cos = embedder.embed([s for _, _, s in head]) @ embedder.embed_query(question)
        top = head[0][0]
        rescored = [(score / top + float(c), n, s) for (score, n, s), c in zip(head, cos, strict=True)]
        rescored.sort(key=lambda r: -r[0])
        return rescored + ranked[len(head) :]

    def compose(self, question: str, sources: Sequence[Source], topic_level: bool) -> list[str]:
        """The answer as pieces: one line per paper for a topic, the best sentences in order for a paper."""
        ranked = self.rank_sentences(question, sources)
        if not ranked:
            return [CANNOT_ANSWER]
        by_n = {s.n: s for s in sources}
        seen: set[str] = set()
        picked: list[tuple[float, int, str]] = []
        per_paper: dict[str, int] = {}
        for score, n, s in ranked:
            key = re.sub(r"\W+", " ", s.lower()).strip()
            if key in seen:
                continue
            pid = by_n[n].paper_id
            if topic_level and per_paper.get(pid, 0) >= self.per_paper:
                continue
            seen.add(key)
            per_paper[pid] = per_paper.get(pid, 0) + 1
            picked.append((score, n, s))
            if len(picked) >= self.max_sentences:
                break
        if topic_level:
            papers = {by_n[n].paper_id for _, n, _ in picked}
            lines = [f"Across {len(papers)} paper{'s' if len(papers) != 1 else ''} in this topic:"]
            order = {s: i for i, (_, _, s) in enumerate(ranked)}
            for _, n, s in picked:
                s = _what_it_does(by_n[n], s, order)
                src = by_n[n]
                lines.append(f"- {src.title} ({src.date.isoformat() if src.date else 'n.d.'}): \"{s}\" [{n}]")
            return [line + "\n" for line in lines]
        pieces = []
        for i, (_, n, s) in enumerate(picked):
            page = by_n[n].page
            lead = "The paper says" if i == 0 else "It also notes"
            where = f" (p. {page})" if page else ""
            pieces.append(f"{lead}{where}: \"{s}\" [{n}]\n")
        return pieces

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool) -> Iterator[str]:
        """The composed pieces, one by one."""
        yield from self.compose(question, sources, topic_level)

    def complete(self, prompt: str) -> str:
        """Not available: the extractive answerer only quotes sources."""
        raise AnswererError("the extractive answerer cannot complete a prompt", "use an LLM answerer (openai:<model> or local)")


def format_sources(sources: Sequence[Source], max_chars: int = 1200) -> str:
    """The numbered sources as the prompt shows them (each cut at max_chars)."""
    rows = []
    for s in sources:
        where = f", page {s.page}" if s.page else ""
        text = s.text if len(s.text) <= max_chars else s.text[:max_chars] + " ..."
        rows.append(f"[{s.n}] {s.title} ({s.date.isoformat() if s.date else 'n.d.'}{where})\n{text}")
    return "\n\n".join(rows)


class OpenAIAnswerer:
    """Any OpenAI-compatible chat endpoint through langchain-openai's ChatOpenAI, streamed token by token.

    The key comes from OPENAI_API_KEY as the OpenAI SDK reads it; local servers get a placeholder key.
    `name` is what answer records show ('openai', or 'local' for the bundled llama.cpp server).
    """

    can_complete = True

    def __init__(self, model: str, base_url: str | None, timeout: float, max_retries: int, name: str = "openai") -> None:
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
        )

    def messages(self, question: str, sources: Sequence[Source]) -> list[tuple[str, str]]:
        """The chat messages of one question: the system prompt and the question with its numbered sources."""
        return [("system", SYSTEM_PROMPT), ("user", USER_TEMPLATE.format(question=question, sources=format_sources(sources)))]

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool) -> Iterator[str]:
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


def get_answerer(settings: Settings, name: str | None = None, embedder: Embedder | None = None) -> Answerer:
    """The answerer named by `settings.answerer` (or `name`); the extractive one reranks its sentences
    with `embedder` when given."""
    spec = parse_answerer(name or settings.answerer)
    if spec.kind == "extractive":
        return ExtractiveAnswerer(embedder=embedder)
    if spec.kind == "openai":
        return OpenAIAnswerer(spec.model, settings.llm_base_url, settings.llm_timeout_s, settings.llm_max_retries)
    # the bundled llama.cpp server, spoken to through the same OpenAI-compatible path
    from paperchat.providers.local_llm import MODEL_ALIAS, shared_server

    server = shared_server(settings)
    return OpenAIAnswerer(MODEL_ALIAS, server.base_url, settings.llm_timeout_s, settings.llm_max_retries, name="local")
