"""Chunks: one per abstract record; page-aware, offset-carrying chunks for PDFs."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from langchain_text_splitters import RecursiveCharacterTextSplitter

from paperchat.types import Chunk, ChunkKind, Page, Paper

MIN_CHUNK_CHARS = 40


def chunk_id(paper_id: str, kind: ChunkKind, page: int | None, text: str) -> str:
    """Content hash of a chunk: the same text of the same paper and page always gets the same id."""
    h = hashlib.sha256(f"{paper_id}\x00{kind}\x00{page}\x00{text}".encode())
    return h.hexdigest()[:32]


def abstract_chunk(paper: Paper) -> Chunk | None:
    """Title and abstract as one chunk (None when the paper has no abstract)."""
    if not paper.abstract.strip():
        return None
    text = f"{paper.title}\n\n{paper.abstract}".strip()
    return Chunk(
        id=chunk_id(paper.id, "abstract", None, text),
        paper_id=paper.id,
        text=text,
        kind="abstract",
        page=None,
        start=0,
        end=len(text),
    )


class PageChunker:
    """Splits each page on its own, so every chunk names exactly one page and its character offsets."""

    def __init__(self, chunk_size: int, chunk_overlap: int) -> None:
        self.chunk_size = chunk_size
        self.chunk_overlap = min(chunk_overlap, chunk_size // 2)
        self._splitter = RecursiveCharacterTextSplitter(
            chunk_size=chunk_size,
            chunk_overlap=self.chunk_overlap,
            separators=[". ", "? ", "! ", "; ", ", ", " ", ""],
            keep_separator="end",
            add_start_index=True,
            strip_whitespace=True,
        )

    def chunk_pages(self, paper_id: str, pages: Sequence[Page]) -> list[Chunk]:
        """Chunks of all pages in page order; pages with too little text are skipped."""
        chunks: list[Chunk] = []
        seen: set[str] = set()
        for page in pages:
            if len(page.text) < MIN_CHUNK_CHARS:
                continue
            for doc in self._splitter.create_documents([page.text]):
                text = doc.page_content
                start = int(doc.metadata.get("start_index", -1))
                if start < 0:
                    start = page.text.find(text)
                if len(text) < MIN_CHUNK_CHARS:  # a short tail: widen it backwards, never drop its words
                    end = max(start, 0) + len(text)
                    start = max(0, end - MIN_CHUNK_CHARS)
                    text = page.text[start:end]
                cid = chunk_id(paper_id, "pdf", page.number, text)
                if cid in seen:  # the same text twice on one page adds nothing
                    continue
                seen.add(cid)
                chunks.append(
                    Chunk(
                        id=cid,
                        paper_id=paper_id,
                        text=text,
                        kind="pdf",
                        page=page.number,
                        start=max(start, 0),
                        end=max(start, 0) + len(text),
                    )
                )
        return chunks
