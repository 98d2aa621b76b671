"""Reading a paper beside AskPDF: page images of the stored PDF and a citation's quote placed on its page.

`Reader.view` gives everything the viewer draws (`PageView`: the page as a PNG data URI, its size and the
quote's line boxes); `Reader.highlight` gives a citation's boxes alone (for `paperchat ask --json`). Both
read only the app's own stored copies (`uploads/<sha256>.pdf`), which the caller resolves. Importing this
package loads neither PDFium nor Pillow.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path

from paperchat.errors import SourceError
from paperchat.types import Highlight

ZOOMS = (0.75, 1.0, 1.25, 1.5, 2.0)
MAX_QUOTE_CHARS = 2000  # a citation quotes a sentence or a passage; anything longer is cut before matching


@dataclass
class PageView:
    """One page of a paper as the viewer shows it.

    `image` is a `data:image/png;base64,...` URI ('' when the page cannot be shown, `error` then says why);
    `highlight` holds the quote's boxes in page points (None when no quote was asked for).
    """

    paper_id: str
    page: int
    pages: int
    zoom: float
    image: str = ""
    width_px: int = 0
    height_px: int = 0
    highlight: Highlight | None = None
    quote: str = ""
    error: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)

    def boxes_pct(self) -> list[tuple[float, float, float, float]]:
        """The highlight's boxes as percentages of the page (left, top, width, height), for overlays that
        scale with the image."""
        h = self.highlight
        if h is None or not h.placed or h.width <= 0 or h.height <= 0:
            return []
        pad = 1.0  # points around each line box: the highlight covers the letters' edges
        return [
            (
                round(100 * max(0.0, x0 - pad) / h.width, 3),
                round(100 * max(0.0, top - pad) / h.height, 3),
                round(100 * (x1 - x0 + 2 * pad) / h.width, 3),
                round(100 * (bottom - top + 2 * pad) / h.height, 3),
            )
            for x0, top, x1, bottom in h.boxes
        ]


class Reader:
    """Page images (cached, bounded by `cache_mb`) and quote placement over stored PDFs.

    Args:
        cache_mb: the most megabytes of rendered PNG pages kept in memory.
        scale: pixels per point at zoom 1.0 (1.5 = 108 dpi).
    """

    def __init__(self, cache_mb: float = 64.0, scale: float = 1.5) -> None:
        from paperchat.reading.document import PageCache

        self.cache = PageCache(int(cache_mb * 1024 * 1024))
        self.scale = scale

    def highlighted_png(self, pdf: Path, page: int, quote: str, zoom: float = 1.0) -> bytes:
        """The page as PNG with the quote's boxes drawn on it (translucent, outlined): for reports and
        screenshots outside the app, which draws the same boxes as page elements.

        Raises:
            SourceError: the PDF or the page cannot be read.
        """
        from paperchat.reading.document import draw_boxes

        png, w_px, _h = self.cache.png(pdf, page, self.scale * zoom)
        hl = self.highlight(pdf, page, quote)
        # the scale the page was drawn at (lower than asked for a page over MAX_PIXELS)
        return draw_boxes(png, hl, w_px / hl.width if hl.width > 0 else self.scale * zoom)

    def clear(self) -> None:
        """Forget every rendered page and every page's characters: the next view is a cold one."""
        from paperchat.reading.document import clear_text_cache

        self.cache.clear()
        clear_text_cache()

    def highlight(self, pdf: Path, page: int, quote: str) -> Highlight:
        """The quote's line boxes on the page (placed=False when it is not found there).

        Raises:
            SourceError: the PDF or the page cannot be read.
        """
        from paperchat.reading.document import locate

        return locate(pdf, page, quote[:MAX_QUOTE_CHARS])

    def view(self, paper_id: str, pdf: Path, page: int = 1, quote: str = "", zoom: float = 1.0) -> PageView:
        """The page (clamped to the PDF's pages) with the quote highlighted when it can be placed; a PDF whose
        pages cannot be shown gives a view with `error` set, never an exception."""
        import time

        from paperchat.reading.document import page_count

        t0 = time.perf_counter()
        view = PageView(paper_id, max(1, int(page or 1)), 0, zoom if zoom in ZOOMS else 1.0, quote=quote[:MAX_QUOTE_CHARS])
        try:
            view.pages = page_count(pdf)
            view.page = min(view.page, view.pages)
            png, view.width_px, view.height_px = self.cache.png(pdf, view.page, self.scale * view.zoom)
            t1 = time.perf_counter()
            view.image = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            if view.quote.strip():
                view.highlight = self.highlight(pdf, view.page, view.quote)
            view.timings_ms = {"render": round(1000 * (t1 - t0), 1), "total": round(1000 * (time.perf_counter() - t0), 1)}
        except SourceError as exc:
            view.image, view.error = "", str(exc)
        return view
