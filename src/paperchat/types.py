"""Our own data types. Third-party objects are converted into these where they enter."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field

from paperchat.text import is_arxiv_id

ChunkKind = Literal["abstract", "pdf"]


class Paper(BaseModel):
    """A paper: its metadata and, when known, its abstract."""

    id: str = Field(description="arXiv id without version, or 'file:<sha12>' for PDFs without one")
    title: str
    authors: list[str] = Field(default_factory=list)
    abstract: str = ""
    date: dt.date | None = Field(default=None, description="first listing or submission date")
    categories: list[str] = Field(default_factory=list)
    url: str = ""
    pdf_path: str | None = Field(default=None, description="local PDF when one was ingested")
    topics: list[str] = Field(default_factory=list)

    @property
    def abs_url(self) -> str:
        """arXiv's page for arXiv ids; else the stored link when it is http(s) (never javascript: or data:)."""
        if is_arxiv_id(self.id):
            return f"https://arxiv.org/abs/{self.id}"
        url = self.url.strip()
        return url if url.lower().startswith(("https://", "http://")) and not any(c in url for c in " <>\"'") else ""

    @property
    def pdf_url(self) -> str:
        """Link to the paper's arXiv PDF, or '' when the id is not an arXiv id."""
        return f"https://arxiv.org/pdf/{self.id}" if is_arxiv_id(self.id) else ""

    def short_authors(self, n: int = 3) -> str:
        """First authors and '+N' for the rest."""
        if not self.authors:
            return ""
        head = ", ".join(self.authors[:n])
        rest = len(self.authors) - n
        return f"{head} +{rest}" if rest > 0 else head


class Page(BaseModel):
    """One page of a PDF, text already cleaned. `number` is 1-based (pypdf index + 1)."""

    number: int
    text: str


class ParsedPdf(BaseModel):
    """What the PDF reader returns."""

    path: str
    sha256: str
    title: str
    arxiv_id: str | None
    pages: list[Page]


class Chunk(BaseModel):
    """A piece of text that is embedded and indexed."""

    id: str
    paper_id: str
    text: str
    kind: ChunkKind
    page: int | None = None
    start: int = Field(default=0, description="character offset in the cleaned page (or abstract)")
    end: int = 0


class Hit(BaseModel):
    """A retrieved chunk with its scores."""

    chunk: Chunk
    score: float = Field(description="fused score used for ranking")
    dense: float | None = Field(default=None, description="cosine similarity, when dense found it")
    lexical: float | None = Field(default=None, description="BM25 score, when BM25 found it")
    rank: int = 0


ScopeKind = Literal["topic", "paper", "all", "collection", "discovered"]


class Scope(BaseModel):
    """What a question searches: one topic's papers, one paper, a personal collection or a discovered topic (its
    slug in `topic`; both hard filters on their papers), or everything; optional date window."""

    kind: ScopeKind = "all"
    topic: str | None = None
    paper_id: str | None = None
    since: dt.date | None = None
    until: dt.date | None = None

    @classmethod
    def for_topic(cls, slug: str, since: dt.date | None = None, until: dt.date | None = None) -> Scope:
        """Scope of one topic, optionally within a date window."""
        return cls(kind="topic", topic=slug, since=since, until=until)

    @classmethod
    def for_collection(cls, slug: str, since: dt.date | None = None, until: dt.date | None = None) -> Scope:
        """Scope of a personal collection (an imported reference list), optionally within a date window."""
        return cls(kind="collection", topic=slug, since=since, until=until)

    @classmethod
    def for_discovered(cls, slug: str, since: dt.date | None = None, until: dt.date | None = None) -> Scope:
        """Scope of a discovered topic: the papers tagged with it, optionally within a date window."""
        return cls(kind="discovered", topic=slug, since=since, until=until)

    @classmethod
    def for_paper(cls, paper_id: str) -> Scope:
        """Scope of a single paper."""
        return cls(kind="paper", paper_id=paper_id)

    def describe(self) -> str:
        """Human-readable description of the scope."""
        base = {"topic": f"topic {self.topic}", "paper": f"paper {self.paper_id}", "all": "all papers", "collection": f"collection {self.topic}",
                "discovered": f"discovered topic {self.topic}"}[self.kind]
        if self.since or self.until:
            base += f" ({self.since or '...'} to {self.until or 'now'})"
        return base


class NumberedRef(BaseModel):
    """Number, paper and page: what a source and a citation of it share."""

    n: int
    paper_id: str
    title: str
    authors: list[str] = Field(default_factory=list)
    date: dt.date | None = None
    url: str = ""
    page: int | None = None


class Source(NumberedRef):
    """A numbered source offered to the answerer."""

    text: str
    score: float
    dense: float | None = None
    lexical: float | None = None
    chunk_id: str = ""


class Highlight(BaseModel):
    """Where a quote sits on a PDF page: line boxes in page coordinates (PDF points, origin at the page's
    top-left corner, y growing downwards), so any viewer can draw them over the page."""

    page: int = Field(description="1-based physical page (pypdf's index + 1)")
    width: float = Field(description="page width in points")
    height: float = Field(description="page height in points")
    boxes: list[tuple[float, float, float, float]] = Field(default_factory=list, description="(x0, top, x1, bottom) per line of the quote")
    placed: bool = Field(default=False, description="the quote was found on the page (no boxes when it was not)")
    coverage: float = Field(default=0.0, description="share of the quote's letters and digits matched on the page, 0..1")


class Citation(NumberedRef):
    """A citation that survived checking: it points at an offered source."""

    quote: str = Field(description="the passage (or sentence of it) the claim rests on")
    support: float = Field(description="how much of the citing sentence the passage supports, 0..1")
    highlight: Highlight | None = Field(default=None, description="the quote's place on the page of the stored PDF, when asked for")


class Statement(BaseModel):
    """One sentence of an LLM answer, checked against the passages it cites."""

    text: str
    cited: list[int] = Field(default_factory=list)
    support: float = Field(description="share of its content words found in the passages it cites (0 when it cites none)")
    supported: bool


class Answer(BaseModel):
    """The answer record: what the UI shows, the CLI prints and the evaluation scores."""

    question: str
    query: str = Field(description="what was searched (the rewritten follow-up, or the question)")
    rewritten: bool = False
    answer: str
    abstained: bool = False
    citations: list[Citation] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    dropped_citations: list[int] = Field(default_factory=list, description="cited numbers that were not offered")
    uncited: bool = Field(default=False, description="an LLM answer with no citation at all")
    scope: Scope = Field(default_factory=Scope)
    coverage: str = ""
    answerer: str = "extractive"
    model: str = ""
    fallback: str | None = Field(default=None, description="why the configured answerer was replaced")
    statements: list[Statement] = Field(default_factory=list, description="an LLM answer's sentences, each with its support")
    evidence: str = Field(default="", description="an LLM answer's extractive answer from the same sources, shown below it")
    reader_top: float | None = Field(
        default=None,
        description="paper answers with the sentence reader on: its best logit over the sentences read (above 0: it would quote one rather than refuse)",
    )
    timings_ms: dict[str, float] = Field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The answer as a JSON-ready dict, with sources reduced to their key fields."""
        data = self.model_dump(mode="json")
        data["sources"] = [
            {
                "n": s.n, "paper_id": s.paper_id, "page": s.page, "score": round(s.score, 5), "dense": s.dense, "lexical": s.lexical, "title": s.title,
                "url": s.url, "chunk_id": s.chunk_id,
            }
            for s in self.sources
        ]
        return data


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    id: str
    dim: int

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed documents; returns an array of shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; returns shape (dim,)."""
        ...
