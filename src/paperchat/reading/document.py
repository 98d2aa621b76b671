"""Pages of a stored PDF through PDFium (pypdfium2): their characters and boxes, and page images.

Every call into PDFium runs in one bounded worker process (`paperchat.workers.BoundedWorker`: a deadline per
call, a memory budget for the process), because a 10 KB PDF of nested form XObjects or a 14,400-pt page makes
PDFium allocate gigabytes in seconds: the worker is killed and restarted, and the caller gets "this page cannot
be shown" while answers keep working (issue 33, case 1). Rendering is capped at `MAX_PIXELS` per page (the
scale is lowered for absurd page sizes). Nothing is kept open between calls (opening the 83-page shared PDF
takes about 5 ms); what costs is cached with a bound: a page's characters (`TEXT_PAGES` pages, in the worker)
and rendered PNG images (by bytes, `PageCache`, here).

Page numbers are 1-based physical pages, as pypdf counts them (PDFium's index + 1), the numbers chunks carry.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from paperchat.errors import SourceError
from paperchat.reading.placement import Box, PageText, fold, place
from paperchat.types import Highlight
from paperchat.workers import BoundedWorker, WorkerFailed

_LOCK = threading.RLock()
TEXT_PAGES = 64
MAX_PIXELS = 4096 * 4096  # a rendered page holds at most this many pixels (about 50 MB as RGB)
WORKER = BoundedWorker(timeout_s=20.0, memory_mb=768.0)  # PDFium's process: replaced when a PDF exceeds either
_HINT = "AskPDF still answers from the text; re-save the PDF with another tool (or upload it again) to see its pages"


class _Lru:
    """A small least-recently-used map bounded by the summed size of its values."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self.size = 0
        self._items: OrderedDict[Any, tuple[Any, int]] = OrderedDict()

    def get(self, key: Any) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= old[1]
        self._items[key] = (value, size)
        self.size += size
        while self.size > self.max_size and len(self._items) > 1:
            _, (_, s) = self._items.popitem(last=False)
            self.size -= s

    def clear(self) -> None:
        self._items.clear()
        self.size = 0


_TEXT = _Lru(TEXT_PAGES)


@contextmanager
def _document(path: Path) -> Iterator[Any]:
    """The PDF open in PDFium (under the lock), closed after; SourceError when PDFium cannot open it."""
    import pypdfium2 as pdfium

    with _LOCK:
        try:
            doc = pdfium.PdfDocument(str(path))
        except (pdfium.PdfiumError, OSError, ValueError) as exc:
            raise SourceError(f"the pages of this PDF cannot be shown ({exc})", _HINT) from exc
        try:
            yield doc
        finally:
            doc.close()


def _page(doc: Any, number: int) -> Any:
    import pypdfium2 as pdfium

    if not 1 <= number <= len(doc):
        raise SourceError(f"the PDF has no page {number} (it has {len(doc)})", f"pick a page from 1 to {len(doc)}")
    try:
        return doc[number - 1]
    except pdfium.PdfiumError as exc:
        raise SourceError(f"page {number} of this PDF cannot be read ({exc})", _HINT) from exc


class _Frame:
    """Turns PDFium's page coordinates (origin bottom-left, unrotated) into the shown page's (origin
    top-left, after the page's rotation), in points."""

    def __init__(self, page: Any) -> None:
        left, bottom, right, top = page.get_bbox()
        self.left, self.top = left, top
        self.w, self.h = right - left, top - bottom
        self.rotation = page.get_rotation() % 360

    @property
    def size(self) -> tuple[float, float]:
        """(width, height) of the page as shown."""
        return (self.h, self.w) if self.rotation in (90, 270) else (self.w, self.h)

    def box(self, left: float, bottom: float, right: float, top: float) -> Box:
        """A box in shown-page coordinates (x0, top, x1, bottom)."""
        x0, x1, y0, y1 = left - self.left, right - self.left, self.top - top, self.top - bottom
        if self.rotation == 90:
            x0, x1, y0, y1 = self.h - y1, self.h - y0, x0, x1
        elif self.rotation == 180:
            x0, x1, y0, y1 = self.w - x1, self.w - x0, self.h - y1, self.h - y0
        elif self.rotation == 270:
            x0, x1, y0, y1 = y0, y1, self.w - x1, self.w - x0
        return (x0, y0, x1, y1)


def _page_text(path: Path, number: int, page: Any, textpage: Any) -> PageText:
    import pypdfium2.raw as pdfium_c

    key = (str(path), number)
    cached = _TEXT.get(key)
    if cached is not None:
        return cached
    n = textpage.count_chars()
    chars = "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage, i) or 32) for i in range(n))
    folded, index = fold(chars)
    w, h = _Frame(page).size
    text = PageText(number, chars, folded, index, round(w, 2), round(h, 2))
    _TEXT.put(key, text, 1)
    return text


# -- in the worker process ----------------------------------------------------------------------


def _w_clear() -> None:
    with _LOCK:
        _TEXT.clear()


def _w_page_count(path: Path) -> int:
    with _document(path) as doc:
        return len(doc)


def _w_page_text(path: Path, number: int) -> PageText:
    with _document(path) as doc:
        page = _page(doc, number)
        textpage = page.get_textpage()
        return _page_text(path, number, page, textpage)


def _w_locate(path: Path, number: int, quote: str) -> Highlight:
    with _document(path) as doc:
        page = _page(doc, number)
        textpage = page.get_textpage()
        text = _page_text(path, number, page, textpage)
        frame = _Frame(page)
        return place(text, quote, lambda i: frame.box(*textpage.get_charbox(i, loose=True)))


def _w_render(path: Path, number: int, scale: float) -> tuple[bytes, int, int]:
    import pypdfium2 as pdfium

    with _document(path) as doc:
        page = _page(doc, number)
        w, h = page.get_size()
        if not (w > 0 and h > 0):
            raise SourceError(f"page {number} of this PDF has no size ({w} x {h} points)", _HINT)
        scale = min(scale, (MAX_PIXELS / (w * h)) ** 0.5)  # an absurd page size is drawn smaller, not bigger
        try:
            image = page.render(scale=scale, may_draw_forms=False).to_pil()
        except (pdfium.PdfiumError, ValueError, OSError) as exc:
            raise SourceError(f"page {number} of this PDF cannot be rendered ({exc})", _HINT) from exc
    buf = io.BytesIO()
    image.save(buf, "PNG", compress_level=1)  # fast: level 1 is a third of the default's time, ~15% bigger
    return (buf.getvalue(), image.width, image.height)


# -- in the caller's process ----------------------------------------------------------------------


def _bounded(what: str, fn: Any, *args: Any) -> Any:
    try:
        return WORKER.call(fn, *args)
    except WorkerFailed as exc:
        raise SourceError(f"{what} cannot be shown: {exc.why}", _HINT) from None


def clear_text_cache() -> None:
    """Forget every page's characters (benchmarks measure a cold start with it)."""
    _bounded("this PDF", _w_clear)


def page_count(path: Path) -> int:
    """The number of pages PDFium finds in the PDF (SourceError when it cannot open it)."""
    return int(_bounded("this PDF", _w_page_count, path))


def page_text(path: Path, number: int) -> PageText:
    """The page's characters as PDFium reads them (cached in the worker)."""
    out: PageText = _bounded(f"page {number} of this PDF", _w_page_text, path, number)
    return out


def locate(path: Path, number: int, quote: str) -> Highlight:
    """The quote's line boxes on page `number` of the PDF (placed=False, no boxes, when it is not there).

    Raises:
        SourceError: PDFium cannot open the PDF or read that page, or the page exceeds the worker's bounds.
    """
    out: Highlight = _bounded(f"page {number} of this PDF", _w_locate, path, number, quote)
    return out


class PageCache:
    """Rendered pages as PNG bytes, least recently used dropped first once over `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self._lru = _Lru(max_bytes)
        self.hits = 0
        self.misses = 0

    @property
    def held_bytes(self) -> int:
        """Bytes of PNG held now."""
        return self._lru.size

    def clear(self) -> None:
        """Forget every image."""
        with _LOCK:
            self._lru.clear()

    def png(self, path: Path, number: int, scale: float) -> tuple[bytes, int, int]:
        """The page as PNG at `scale` (1.0 = 72 dpi): (bytes, width px, height px), from the cache when held.

        Raises:
            SourceError: PDFium cannot open the PDF or render that page.
        """
        with _LOCK:  # one lock for PDFium and the cache's bookkeeping (requests come from several threads)
            return self._png(path, number, scale)

    def _png(self, path: Path, number: int, scale: float) -> tuple[bytes, int, int]:
        key = (str(path), number, round(scale, 3))
        got = self._lru.get(key)
        if got is not None:
            self.hits += 1
            return got
        self.misses += 1
        out: tuple[bytes, int, int] = _bounded(f"page {number} of this PDF", _w_render, path, number, scale)
        self._lru.put(key, out, len(out[0]))
        return out


def draw_boxes(png: bytes, highlight: Highlight, scale: float) -> bytes:
    """A page image (PNG at `scale` pixels per point) with the highlight's boxes drawn: translucent orange,
    outlined, as the app's viewer shows them."""
    from PIL import Image, ImageDraw

    page = Image.open(io.BytesIO(png)).convert("RGBA")
    layer = Image.new("RGBA", page.size, (0, 0, 0, 0))
    pen = ImageDraw.Draw(layer)
    for x0, top, x1, bottom in highlight.boxes if highlight.placed else []:
        box = (scale * (x0 - 1), scale * (top - 1), scale * (x1 + 1), scale * (bottom + 1))
        pen.rectangle(box, fill=(249, 115, 22, 64), outline=(234, 88, 12, 220), width=2)
    out = io.BytesIO()
    Image.alpha_composite(page, layer).convert("RGB").save(out, "PNG", compress_level=1)
    return out.getvalue()
