"""Our own data types. Third-party objects are converted into these where they enter."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, Field

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
        if self.url:
            return self.url
        return f"https://arxiv.org/abs/{self.id}" if is_arxiv_id(self.id) else ""

    @property
    def pdf_url(self) -> str:
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


def is_arxiv_id(value: str) -> bool:
    """True for new-style (2301.01234) and old-style (cs/0101001) arXiv ids."""
    import re

    return bool(re.fullmatch(r"\d{4}\.\d{4,5}|[a-z\-]+(\.[A-Z]{2})?/\d{7}", value))
