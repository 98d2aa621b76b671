"""Reading a paper through the facade: its stored PDF's pages as images, and citations placed on them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.errors import NotFound, SourceError
from paperchat.settings import Settings
from paperchat.types import Answer

if TYPE_CHECKING:
    from paperchat.library import Library
    from paperchat.reading import PageView, Reader


class ReadingOps:
    """The reading half of `Assistant` (a mixin: it needs `settings` and an open `library`)."""

    settings: Settings
    library: Library
    _reader: Reader | None = None

    @property
    def reader(self) -> Reader:
        """The page renderer and quote placer, with its bounded image cache (made on first use)."""
        if self._reader is None:
            from paperchat.reading import Reader

            self._reader = Reader(self.settings.viewer_cache_mb, self.settings.viewer_scale)
        return self._reader

    def stored_pdf(self, paper_id: str) -> Path | None:
        """The app's own stored copy of the paper's PDF (`uploads/<sha256>.pdf`), or None: the only files the
        viewer reads, whatever a request names."""
        from paperchat.ingestion.pdfstore import stored_copy

        p = self.library.catalog.get(paper_id)
        return stored_copy(p.pdf_path, self.settings) if p is not None else None

    def page_view(self, paper_id: str, page: int = 1, quote: str = "", zoom: float = 1.0) -> PageView | None:
        """A page of the paper's stored PDF as the viewer shows it, with `quote` highlighted when it can be
        placed; None when the paper has no stored PDF. A PDF whose pages cannot be rendered gives a view
        whose `error` says so.

        Raises:
            NotFound: the paper is not in the library.
        """
        if self.library.catalog.get(paper_id) is None:
            raise NotFound(f"paper {paper_id} is not in the library", "open a paper from a topic page")
        pdf = self.stored_pdf(paper_id)
        if pdf is None:
            return None
        return self.reader.view(paper_id, pdf, page, quote, zoom)

    def place_citations(self, answer: Answer) -> Answer:
        """The answer with each citation of a stored PDF's page given its `highlight` (the quote's line boxes
        in page coordinates); citations of abstracts, and of PDFs that cannot be read, keep None."""
        pdfs: dict[str, Path | None] = {}
        cites = []
        for c in answer.citations:
            if c.page is not None and c.paper_id not in pdfs:
                pdfs[c.paper_id] = self.stored_pdf(c.paper_id)
            pdf = pdfs.get(c.paper_id)
            highlight = None
            if pdf is not None and c.page is not None:
                try:
                    highlight = self.reader.highlight(pdf, c.page, c.quote)
                except SourceError:
                    highlight = None
            cites.append(c.model_copy(update={"highlight": highlight}))
        return answer.model_copy(update={"citations": cites})
