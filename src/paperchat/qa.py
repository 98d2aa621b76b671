"""Question -> (rewrite) -> retrieval in scope -> answer with checked citations, streamed."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterator, Sequence

import numpy as np

from paperchat.answering import evidence
from paperchat.answering.evidence import Evidence, scope_counts
from paperchat.answering.topic_map import TopicContext
from paperchat.citations import build_citations, parse_citations, statements, strip_invalid
from paperchat.dates import plausible
from paperchat.errors import AnswererError, InputError, NotFound
from paperchat.library import Library
from paperchat.passages import in_context, page_text
from paperchat.prompts import CANNOT_ANSWER, REWRITE_PROMPT, SYSTEM_PROMPT, UNSUPPORTED_LLM
from paperchat.providers.answerer_factory import get_answerer
from paperchat.providers.answerers import Answerer, ExtractiveAnswerer
from paperchat.query import rewrite_followup
from paperchat.reader.model import sentence_combiner, sentence_reader
from paperchat.retrieval import Retriever
from paperchat.types import Answer, Hit, Scope, Source

log = logging.getLogger(__name__)

NEW_WEEKS = 4  # a topic answer marks the papers of the topic's last four weeks as new, as its page's momentum counts

_PROMPT_LINES = [ln.strip() for ln in SYSTEM_PROMPT.splitlines() if len(ln.strip()) > 30]


def redact_prompt(text: str) -> str:
    """Remove any line of the system prompt that a model repeats (a prompt-injection leak)."""
    low = text.lower()
    for line in _PROMPT_LINES:
        i = low.find(line.lower())
        while i >= 0:
            text = text[:i] + "[instructions withheld]" + text[i + len(line):]
            low = text.lower()
            i = low.find(line.lower())
    return text


def check_question(question: str, limit: int) -> None:
    """Refuse a question over `limit` characters (settings.max_question_chars), before any work is done.

    Raises:
        InputError: the question is too long; the message gives its length and the limit.
    """
    if len(question) > limit:
        raise InputError(f"the question is {len(question):,} characters, over the {limit:,} limit", "shorten it")


class QA:
    """Answers questions over a Library. Build once per process; `stream` is safe to call from threads."""

    def __init__(self, library: Library, retriever: Retriever | None = None, answerer: Answerer | None = None) -> None:
        self.lib = library
        self.retriever = retriever or Retriever.of(library)
        self._answerer = answerer
        conf = library.settings.answers
        self.extractive = ExtractiveAnswerer(
            embedder=library.embedder, max_papers=conf.max_papers, context_sentences=conf.context_sentences, stored_vectors=self._stored_vectors,
            reader=sentence_reader(library.settings), reader_mix=conf.reader_mix, reader_orders=library.settings.reader == "on",
            reader_combine=sentence_combiner(library.settings),
        )

    def _stored_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks, from the search snapshot (a row-aligned copy of the store's own), so
        an answer reads no vector from Chroma; a chunk the snapshot lacks comes from the store."""
        snap = self.lib.ready_index()
        out: dict[str, np.ndarray] = {}
        missing = []
        for cid in ids:
            i = snap.pos.get(cid)
            if i is not None and snap.vectors is not None:
                out[cid] = snap.vectors[i]
            else:
                missing.append(cid)
        if missing:
            out.update(self.lib.store.vectors(missing))
        return out

    @property
    def answerer(self) -> Answerer:
        """The answerer, created from the settings on first use."""
        if self._answerer is None:
            self._answerer = get_answerer(self.lib.settings, embedder=self.lib.embedder)
        return self._answerer

    def sources(self, hits: Sequence[Hit]) -> list[Source]:
        """Numbered sources for the hits, with their papers' metadata."""
        papers = self.lib.catalog.get_many(h.chunk.paper_id for h in hits)
        out = []
        for i, h in enumerate(hits, start=1):
            p = papers.get(h.chunk.paper_id)
            out.append(
                Source(
                    n=i,
                    paper_id=h.chunk.paper_id,
                    title=p.title if p else h.chunk.paper_id,
                    authors=p.authors if p else [],
                    date=p.date if p else None,
                    url=p.abs_url if p and p.abs_url.lower().startswith(("http://", "https://")) else "",  # never javascript: for API clients
                    page=h.chunk.page,
                    text=h.chunk.text,
                    score=h.score,
                    dense=h.dense,
                    lexical=h.lexical,
                    chunk_id=h.chunk.id,
                )
            )
        return self._with_context(hits, out)

    def _with_context(self, hits: Sequence[Hit], sources: list[Source]) -> list[Source]:
        """PDF sources widened by their page's text around them (`retrieval.context_chars`, paperchat.passages);
        a store that cannot give the pages leaves the chunks as they are."""
        chars = self.lib.settings.retrieval.context_chars
        pdf = [(h, s) for h, s in zip(hits, sources, strict=True) if chars and h.chunk.kind == "pdf" and h.chunk.page]
        if not pdf:
            return sources
        try:
            pages = self.lib.store.page_chunks({(h.chunk.paper_id, h.chunk.page or 0) for h, _ in pdf})
        except Exception as exc:  # noqa: BLE001 - chromadb raises its own types; the chunks alone still answer
            log.warning("could not read the pages around the retrieved chunks (%s): answering from the chunks alone", exc)
            return sources
        texts = {key: page_text(chunks) for key, chunks in pages.items()}  # once per page, however many hits it holds
        wide = {s.n: in_context(h.chunk, texts.get((h.chunk.paper_id, h.chunk.page or 0), ""), chars) for h, s in pdf}
        return [s.model_copy(update={"text": wide[s.n]}) if s.n in wide else s for s in sources]

    def evidence(self, query: str, scope: Scope, sources: Sequence[Source]) -> Evidence:
        """What the best sentences of the sources hold of the question (for the refusal decision); for a
        paper, which question words the paper uses anywhere is read from the lexical index."""
        reading = self.extractive.read(query, sources, paper=scope.kind == "paper")
        counts: dict[str, int] | None = None
        if scope.kind == "paper" and scope.paper_id:
            lex = self.lib.ready_index()
            mask = lex.scope_mask(paper_id=scope.paper_id)
            if mask is not None and mask.any():
                counts = scope_counts(query, reading.focus, lex.scores, mask, self.extractive.tokenizer)
        return evidence.read(reading.focus, reading.ranked, reading.candidates, sources, counts)

    def refusal(self, query: str, scope: Scope, sources: Sequence[Source]) -> str | None:
        """The cannot-answer text with the nearest sentence found, when the evidence is too thin; else None."""
        conf = self.lib.settings.answers
        paper = scope.kind == "paper"
        rule = evidence.Refusal(
            conf.refuse_below if paper else conf.refuse_below_topic, names=paper and conf.refuse_missing_names,
            min_asked=conf.refuse_asked_below if paper else 0.0,
            measures=paper and conf.refuse_unstated_measure, settings=paper and conf.refuse_unstated_setting,
            min_reader=conf.reader_refuse_below if paper else None,
        )
        if not paper and conf.refuse_below_topic == 0.0:
            return None
        ev = self.evidence(query, scope, sources)
        if not rule.refuse(ev):
            return None
        text = f"{CANNOT_ANSWER} ({rule.why(ev)})"
        near = rule.nearest(ev)
        if near is not None:
            src = next(s for s in sources if s.n == near.cand.n)
            where = f" (p. {src.page})" if src.page else ""
            text += f'\nThe nearest passage{where}: "{near.text}" [{src.n}]'
        return text

    def topic_context(self, scope: Scope) -> TopicContext | None:
        """The topic's name, size and date span for a topic answer's header."""
        if scope.kind != "topic" or not scope.topic:
            return None
        topic = self.lib.topics.get(scope.topic)
        total = len(self.lib.catalog.topic_papers(scope.topic, scope.since, scope.until))
        dates = [d for d in self.lib.catalog.topic_dates(scope.topic) if (not scope.since or d >= scope.since) and (not scope.until or d <= scope.until)]
        last = max(plausible(dates), default=None)
        if scope.since:  # a window was asked: the papers in it are the new ones
            new_since, new_what = scope.since, f"since {scope.since.isoformat()} (the window asked)"
        elif last is not None:  # else the topic's last NEW_WEEKS weeks, as its page counts momentum
            new_since, new_what = last - dt.timedelta(weeks=NEW_WEEKS) + dt.timedelta(days=1), f"in the last {NEW_WEEKS} weeks"
        else:
            new_since, new_what = None, ""
        return TopicContext(topic.name, total, min(dates, default=None), max(dates, default=None), new_since, new_what)

    def _check_scope(self, scope: Scope) -> None:
        if scope.kind == "paper":
            if not scope.paper_id or self.lib.catalog.get(scope.paper_id) is None:
                raise NotFound(f"paper {scope.paper_id!r} is not in the library", "ingest it first (paperchat ingest pdf FILE)")
        if scope.kind == "topic":
            self.lib.topics.get(scope.topic or "")
        if scope.kind == "collection" and scope.topic not in {c.slug for c in self.lib.catalog.collections()}:
            raise NotFound(f"no collection {scope.topic!r}", "list them with `paperchat import --list`")
        if scope.kind == "discovered" and scope.topic not in {t.slug for t in self.lib.catalog.discovered()}:
            raise NotFound(f"no discovered topic {scope.topic!r}", "list them with `paperchat topics --trending`")

    def rewrite(self, question: str, history: Sequence[str], answerer: Answerer) -> str:
        """The follow-up question made standalone from the history (by the LLM when it can)."""
        if not history:
            return question
        if answerer.can_complete:  # an LLM rewrites the follow-up; else the deterministic rewrite
            try:
                text = answerer.complete(REWRITE_PROMPT.format(history="\n".join(f"- {h}" for h in history[-4:]), question=question)).strip()
                if 3 <= len(text) <= 400:
                    return text.splitlines()[0].strip().strip('"')
            except AnswererError:
                pass  # fall back to the deterministic rewrite
        return rewrite_followup(question, history)

    def stream(
        self, question: str, scope: Scope, history: Sequence[str] = (), k: int | None = None, answerer: Answerer | None = None
    ) -> Iterator[str | Answer]:
        """Yield answer text pieces as they come, then the final Answer record.

        Raises:
            InputError: the question is over settings.max_question_chars.
            NotFound: the scope's paper or topic does not exist.
        """
        check_question(question, self.lib.settings.max_question_chars)
        self._check_scope(scope)
        answerer = answerer or self.answerer
        if not answerer.synthesizes and getattr(answerer, "embedder", None) is self.extractive.embedder:
            answerer = self.extractive  # configured from settings, and shares its reading with the refusal check
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        query = self.rewrite(question, history, answerer)
        timings["rewrite"] = (time.perf_counter() - t0) * 1000
        t1 = time.perf_counter()
        hits = self.retriever.search(query, scope, k)
        timings["retrieve"] = (time.perf_counter() - t1) * 1000
        sources = self.sources(hits)
        record = Answer(
            question=question, query=query, rewritten=query != question, answer="", scope=scope, sources=sources, answerer=answerer.name, model=answerer.model
        )
        best = max((h.dense or 0.0 for h in hits), default=0.0)
        t2 = time.perf_counter()
        refusal = self.refusal(query, scope, sources) if hits and best >= self.lib.settings.retrieval.abstain_below else None
        if hits and scope.kind == "paper" and self.extractive.reader is not None:  # the reading the refusal check made (cached)
            record.reader_top = max((s.reader for s in self.extractive.read(query, sources, paper=True).ranked if s.reader is not None), default=None)
        if not hits or best < self.lib.settings.retrieval.abstain_below:
            record.abstained = True
            record.answer = f'{CANNOT_ANSWER} Searched {scope.describe()} for "{query}"; the closest passages were not relevant enough.'
            yield record.answer
        elif refusal is not None:
            record.abstained = True
            record.answer = refusal
            record.citations = build_citations(refusal, sources)
            yield record.answer
        else:
            topic_level = scope.kind != "paper"
            context = self.topic_context(scope) if topic_level else None
            pieces: list[str] = []
            try:
                for piece in answerer.stream(query, sources, topic_level, context):
                    pieces.append(piece)
                    yield piece
            except AnswererError as exc:
                record.fallback = f"{exc.message}; showing the extractive answer instead."
                record.answerer, record.model = self.extractive.name, self.extractive.model
                yield f"\n\n[{record.fallback}]\n\n"
                pieces = list(self.extractive.stream(query, sources, topic_level, context))
                yield from pieces
            text = redact_prompt(("".join(pieces)).strip())
            text, record.dropped_citations = strip_invalid(text, [s.n for s in sources])
            record.answer = text
            record.abstained = CANNOT_ANSWER.lower() in text.lower()
            record.citations = build_citations(text, sources)
            record.uncited = not record.abstained and not parse_citations(text)
            if answerer.synthesizes and record.fallback is None and not record.abstained:
                # an LLM's synthesis: each sentence checked against what it cites, and the extractive answer from
                # the same sources kept below it as the evidence
                record.statements = statements(text, sources, self.lib.settings.answers.min_support)
                record.evidence = "".join(self.extractive.stream(query, sources, topic_level, context)).strip()
                if not any(st.supported for st in record.statements):
                    # nothing the model said is backed by what it cites (an injected "PWNED [1]", an answer from
                    # its own memory): the extractive answer from the same sources replaces it, and says so
                    record.fallback = UNSUPPORTED_LLM
                    record.answer, record.evidence = record.evidence or CANNOT_ANSWER, ""
                    record.answerer, record.model = self.extractive.name, self.extractive.model
                    record.dropped_citations = []
                    record.uncited = False
                    record.abstained = CANNOT_ANSWER.lower() in record.answer.lower()
                    record.citations = build_citations(record.answer, sources)
                    record.statements = []
                    yield f"\n\n[{record.fallback}]\n\n"
            if scope.kind == "topic" and scope.topic:
                total = context.total if context is not None else len(self.lib.catalog.topic_papers(scope.topic, scope.since, scope.until))
                drew = len({c.paper_id for c in record.citations})
                record.coverage = f"drew on {drew} of {total} papers in this topic"
        timings["answer"] = (time.perf_counter() - t2) * 1000
        timings["total"] = (time.perf_counter() - t0) * 1000
        record.timings_ms = {k2: round(v, 2) for k2, v in timings.items()}
        yield record

    def ask(self, question: str, scope: Scope, history: Sequence[str] = (), k: int | None = None, answerer: Answerer | None = None) -> Answer:
        """The final Answer (streaming consumed)."""
        for item in self.stream(question, scope, history, k, answerer):
            if isinstance(item, Answer):
                return item
        raise AssertionError("stream ended without an answer")  # pragma: no cover
