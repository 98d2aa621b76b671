"""`Assistant`: an open library and what the edges do with it (questions, topics, papers, PDFs, lists)."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.assistant.discovery import DiscoveryOps
from paperchat.assistant.feed import FeedOps
from paperchat.assistant.ingest import IngestOps
from paperchat.assistant.reading import ReadingOps
from paperchat.assistant.records import PdfResult, TopicSummary
from paperchat.assistant.standalone import check_question, llm_model, pdf_folder
from paperchat.assistant.topic_pages import TopicPageOps
from paperchat.dates import plausible
from paperchat.errors import NotFound, PaperchatError
from paperchat.settings import RetrievalSettings, Settings
from paperchat.tables.builder import TableBuilder, scope_papers
from paperchat.tables.columns import Column, Table, column_of
from paperchat.topics import momentum
from paperchat.types import Answer, Hit, Paper, Scope

if TYPE_CHECKING:
    from paperchat.library import Library
    from paperchat.providers.answerers import Answerer
    from paperchat.qa import QA


class Assistant(IngestOps, DiscoveryOps, ReadingOps, FeedOps, TopicPageOps):
    """An open library and what can be done with it. Build once per process; safe to share between threads
    as the library and QA are.

    Args:
        settings: the settings.
        library: an already open library (tests, benchmarks); opened from `settings` when None.
        qa: the question answering over that library; made when None.
    """

    def __init__(self, settings: Settings, library: Library | None = None, qa: QA | None = None) -> None:
        from paperchat.library import Library
        from paperchat.qa import QA

        self.settings = settings
        self.library = library or Library(settings)
        self.qa = qa or QA(self.library)
        self._answerers: dict[str, Answerer] = {}
        self._table_builder: TableBuilder | None = None

    @classmethod
    def open(cls, settings: Settings) -> Assistant:
        """Open the library and get it ready to answer at once: topic membership synced with the rules (the
        explicit step, logged when it changes something), search index loaded, model warmed up."""
        assistant = cls(settings)
        assistant.sync_topics()
        assistant.ready()
        assistant.warm_up()
        return assistant

    def sync_topics(self) -> None:
        """Apply the topic rules to every paper when they changed since the last sync (chunk flags and the
        search index; nothing is re-embedded). Making an Assistant never does this by itself."""
        self.library.sync_topics()

    def ready(self) -> None:
        """Load the search index now (consistent with the store), not on the first question."""
        self.library.ready_index()

    def warm_up(self) -> None:
        """Load the embedding model now, not on the first question."""
        self.library.embedder.embed_query("warm up")

    @property
    def warnings(self) -> list[str]:
        """Disagreements between the store and the catalogue found at open, one line each."""
        return list(self.library.warnings)

    def close(self) -> None:
        """Close the catalogue (the store needs no closing)."""
        self.library.close()

    # -- questions ---------------------------------------------------------------------------------

    def answerer(self, name: str | None = None) -> Answerer:
        """The answerer named `name` (settings.answerer when None), made once per name."""
        if not name or name == self.settings.answerer:
            return self.qa.answerer
        if name not in self._answerers:
            from paperchat.providers.answerer_factory import get_answerer

            self._answerers[name] = get_answerer(self.settings, name, self.library.embedder)
        return self._answerers[name]

    def answerer_choices(self) -> list[str]:
        """The answerers a person can pick: extractive, local, and the configured LLM when it is one."""
        return ["extractive", "local"] + ([self.settings.answerer] if llm_model(self.settings.answerer) else [])

    def check_question(self, question: str) -> None:
        """Raise InputError when the question is over settings.max_question_chars."""
        check_question(question, self.settings)

    def stream(self, question: str, scope: Scope, history: Sequence[str] = (), k: int | None = None, answerer: str | None = None) -> Iterator[str | Answer]:
        """Pieces of the answer text as they come, then the final Answer record.

        Raises:
            InputError: the question is too long.
            NotFound: the scope's paper or topic does not exist.
            ConfigError: an unknown answerer name.
        """
        impl = self.answerer(answerer) if answerer and answerer != self.settings.answerer else None
        return self.qa.stream(question, scope, history, k, impl)

    def ask(self, question: str, scope: Scope, history: Sequence[str] = (), k: int | None = None, answerer: str | None = None) -> Answer:
        """The final Answer record (see `stream`)."""
        impl = self.answerer(answerer) if answerer and answerer != self.settings.answerer else None
        return self.qa.ask(question, scope, history, k, impl)

    def search(self, question: str, scope: Scope, k: int | None = None, retrieval: RetrievalSettings | None = None) -> list[Hit]:
        """Retrieval alone (no answer): the ranked hits, with other retrieval knobs when given."""
        if retrieval is None:
            return self.qa.retriever.search(question, scope, k)
        from paperchat.retrieval import Retriever  # heavy (the store): importing the facade stays light

        return Retriever.of(self.library, retrieval).search(question, scope, k)

    # -- topics ------------------------------------------------------------------------------------

    def topic_summaries(self, query: str = "", chunks: bool = False) -> list[TopicSummary]:
        """Every topic (whose name or slug contains `query`) with paper counts, momentum and follow state;
        `chunks` also counts each topic's chunks in the store (one store query per topic)."""
        lib = self.library
        counts = lib.catalog.topic_counts()
        weekly = lib.weekly_counts()
        followed = set(lib.catalog.followed())
        out = []
        for t in lib.topics.topics:
            if query and query.lower() not in (t.name + " " + t.slug).lower():
                continue
            m = momentum(lib.catalog.topic_dates(t.slug), weekly)
            n_chunks = len(lib.store.ids_in_topic(t.slug)) if chunks else 0
            out.append(TopicSummary(t.slug, t.name, counts.get(t.slug, 0), n_chunks, t.slug in followed, m))
        return out

    def newest_date(self) -> dt.date:
        """The newest plausible paper date in the library (today when it is empty): 'now' for `--weeks`."""
        return max(plausible(self.library.catalog.topic_dates(None)), default=dt.date.today())

    def counts(self) -> tuple[int, int]:
        """(papers in the catalogue, chunks in the store)."""
        return self.library.catalog.count(), self.library.store.count()

    # -- papers, follows and saves -------------------------------------------------------------------

    def paper(self, paper_id: str) -> Paper | None:
        """The paper with its topics, or None."""
        return self.library.catalog.get(paper_id)

    def local_pdf(self, paper: Paper) -> Path | None:
        """The app's own stored copy of the paper's PDF (the only PDFs it serves), or None."""
        from paperchat.ingestion.pdfstore import stored_copy

        return stored_copy(paper.pdf_path, self.settings)

    def pdf_folder(self) -> Path:
        """The one folder of stored PDF copies (`<sha256>.pdf`), made when missing."""
        return pdf_folder(self.settings)

    def followed(self) -> list[str]:
        """Slugs of the followed topics (of any kind) that still exist."""
        names = self.all_topic_names()
        return [s for s in self.library.catalog.followed() if s in names]

    def saved(self) -> list[Paper]:
        """The saved papers still in the library, in the order they were saved."""
        ids = self.library.catalog.saved()
        got = self.library.catalog.get_many(ids)
        return [got[i] for i in ids if i in got]

    def is_saved(self, paper_id: str) -> bool:
        """Whether the paper is saved."""
        return paper_id in self.library.catalog.saved()

    def toggle_follow(self, slug: str) -> bool:
        """Follow or unfollow a topic; returns whether it is followed now."""
        on = slug not in self.library.catalog.followed()
        self.library.catalog.follow(slug, on)
        return on

    def toggle_save(self, paper_id: str) -> bool:
        """Save or unsave a paper; returns whether it is saved now.

        Raises:
            PaperchatError: the paper is not in the library.
        """
        on = paper_id not in self.library.catalog.saved()
        if self.library.catalog.get(paper_id) is None:
            raise PaperchatError(f"paper {paper_id} is not in the library")
        self.library.catalog.save(paper_id, on)
        return on

    # -- adding PDFs --------------------------------------------------------------------------------

    def add_pdf(self, path: Path, paper_id: str | None = None) -> PdfResult:
        """Add one PDF (an upload): checked, hashed once, kept as the stored copy `<sha256>.pdf` and ingested
        from there; the same bytes again are found by their hash at once. A PDF that fails leaves no stored
        copy behind.

        Raises:
            SourceError: the file is missing, empty, too big or not a PDF.
        """
        from paperchat.ingestion.pdf import check_pdf_file, sha256_file
        from paperchat.ingestion.pdfstore import store_pdf, stored_copy
        from paperchat.ingestion.pipeline import Ingester

        check_pdf_file(path, self.settings.max_pdf_mb)
        sha = sha256_file(path)
        cat = self.library.catalog
        known = cat.find_by_pdf_sha(sha)
        if known is not None and paper_id in (None, known.id):
            return PdfResult("known", known)
        existed = stored_copy(f"{sha}.pdf", self.settings) is not None
        stored: Path | None = None
        try:
            stored = store_pdf(path, sha, self.settings)
            rep = self._tagged(Ingester(self.library).ingest_pdfs([stored], paper_id=paper_id, hashes={stored: sha}))
        except BaseException:  # a failed upload leaves no file behind, whatever failed
            if stored is not None and not existed and cat.find_by_pdf_sha(sha) is None:
                stored.unlink(missing_ok=True)
            raise
        if rep.failures:
            if not existed and cat.find_by_pdf_sha(sha) is None:
                stored.unlink(missing_ok=True)
            return PdfResult("failed", error=rep.failures[0].reason)
        pid = rep.paper_ids[0]
        return PdfResult("added", cat.get(pid) or Paper(id=pid, title=pid), rep.chunks_added, rep.seconds)

    def fetch_arxiv_pdf(self, paper_id: str) -> PdfResult:
        """Download the paper's PDF from arXiv and add it to that paper.

        Raises:
            NotFound: the paper is not in the library.
            NetworkError: arXiv cannot be reached (offline: the message says to upload the PDF instead).
        """
        from paperchat.ingestion.records import fetch_arxiv_pdf

        p = self.library.catalog.get(paper_id)
        if p is None:
            raise NotFound(f"paper {paper_id} is not in the library")
        if p.pdf_path:
            return PdfResult("had_pdf", p)
        # downloaded into a temporary folder: add_pdf keeps the one stored copy (uploads/<sha256>.pdf)
        with tempfile.TemporaryDirectory() as tmp:
            path = fetch_arxiv_pdf(paper_id, Path(tmp), self.settings.max_pdf_mb)
            return self.add_pdf(path, paper_id=paper_id)

    def paper_for_pdf(self, path: Path) -> Paper | None:
        """The paper whose PDF has exactly these bytes, or None."""
        from paperchat.ingestion.pdf import sha256_file

        return self.library.catalog.find_by_pdf_sha(sha256_file(path))

    def comparison(self, paper_ids: Sequence[str], columns: Sequence[Column | str], progress: Callable[[int, int], None] | None = None) -> Table:
        """Papers by columns, every cell a quote with its citation or "not stated" (cells cached in the data folder).

        Raises:
            InputError: no paper, no column, an unknown paper, or more than 50 x 12.
        """
        if self._table_builder is None:
            self._table_builder = TableBuilder(self)
        cols = [c if not isinstance(c, str) else column_of(c) for c in columns]
        return self._table_builder.build(paper_ids, cols, progress)

    def comparison_papers(self, topic: str | None = None, collection: str | None = None, papers: str | None = None,
                          question: str | None = None, limit: int = 10) -> list[str]:
        """The papers of a table: a topic's (or collection's) newest, the given ids, or those a topic answer cites."""
        return scope_papers(self, topic=topic, collection=collection, papers=papers, question=question, limit=limit)
