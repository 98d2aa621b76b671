"""Placing a quote on a PDF page: the page's characters and their boxes (PDFium), a folded form of both
sides, a match that tolerates what extraction does to text, and the matched characters merged into line
boxes.

Folding is the ingester's normalisation (`normalize_for_match`: ligatures, NFKC, hyphen breaks, whitespace,
lower case) taken one step further: only letters and digits are compared. pypdf (which made the quote) and
PDFium (which gives the boxes) disagree on spaces, line breaks, hyphens and quotation marks, never on the
letters, so comparing letters alone finds the quote whichever extractor wrote it, and each folded letter
keeps the index of the PDFium character it came from.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from paperchat.text import normalize_for_match
from paperchat.types import Highlight

_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"}
MIN_COVERAGE = 0.6  # a fuzzy match must account for this share of the quote's letters to count as placed
_PIECE = 16  # letters per anchor piece of the fuzzy match


def fold(text: str) -> tuple[str, list[int]]:
    """Lower-case letters and digits of `text` (ligatures expanded, NFKC) and, for each, the index of the
    character of `text` it came from."""
    out: list[str] = []
    idx: list[int] = []
    for i, ch in enumerate(text):
        if ch.isascii():
            if ch.isalnum():
                out.append(ch.lower())
                idx.append(i)
            continue
        for c in unicodedata.normalize("NFKC", _LIGATURES.get(ch, ch)).lower():
            if c.isalnum():
                out.append(c)
                idx.append(i)
    return "".join(out), idx


def fold_quote(quote: str) -> str:
    """The folded form of a quote, after the ingester's own normalisation."""
    return fold(normalize_for_match(quote))[0]


@dataclass(frozen=True)
class PageText:
    """A page's characters as PDFium reads them, their folded form and the page's geometry."""

    number: int
    chars: str
    folded: str
    index: list[int]  # folded position -> index into chars (and PDFium's character boxes)
    width: float
    height: float


def match_span(folded_page: str, folded_quote: str) -> tuple[list[tuple[int, int]], float]:
    """Where the quote lies in the page, as ranges of folded positions, and the share of the quote covered.

    An exact match first; else anchor pieces of the quote vote for where it starts, and the pieces that agree
    (within a third of the quote's length) are kept, with the small gaps between them filled. That survives a
    footnote mark, a dropped symbol or a formula that the two extractors spell differently.
    """
    n = len(folded_quote)
    if n == 0 or not folded_page:
        return [], 0.0
    at = folded_page.find(folded_quote)
    if at >= 0:
        return [(at, at + n)], 1.0
    size = min(_PIECE, max(6, n // 3))
    votes: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for q in range(0, max(1, n - size + 1), max(1, size // 2)):
        piece = folded_quote[q : q + size]
        start = folded_page.find(piece)
        hits = 0
        while start >= 0 and hits < 8:  # a common piece is found many times: it still votes, a few times
            votes[start - q].append((start, start + len(piece)))
            start = folded_page.find(piece, start + 1)
            hits += 1
    if not votes:
        return [], 0.0
    slack = max(size, n // 3)
    best: list[tuple[int, int]] = []
    for origin in votes:
        near = sorted({r for o, rs in votes.items() if abs(o - origin) <= slack for r in rs})
        if len(near) > len(best):
            best = near
    merged: list[list[int]] = []
    for a, b in best:
        if merged and a - merged[-1][1] <= size:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    covered = sum(b - a for a, b in merged)
    return [(a, b) for a, b in merged], min(1.0, covered / n)


Box = tuple[float, float, float, float]


def line_boxes(char_boxes: Sequence[Box]) -> list[Box]:
    """Character boxes (x0, top, x1, bottom, in reading order) merged into one box per line: a box grows while
    the next character sits on the same line, not far to its right."""
    out: list[list[float]] = []
    for x0, top, x1, bottom in char_boxes:
        if x1 <= x0 or bottom <= top:
            continue
        if out:
            cx0, ctop, cx1, cbottom = out[-1]
            h = min(bottom - top, cbottom - ctop)
            overlap = min(bottom, cbottom) - max(top, ctop)
            if overlap >= 0.5 * h and cx0 - 2 <= x0 and x0 - cx1 <= 3 * h:
                out[-1] = [cx0, min(top, ctop), max(x1, cx1), max(bottom, cbottom)]
                continue
        out.append([x0, top, x1, bottom])
    return [(round(a, 2), round(b, 2), round(c, 2), round(d, 2)) for a, b, c, d in out]


def place(page: PageText, quote: str, char_box: Callable[[int], Box]) -> Highlight:
    """The quote's line boxes on the page; `placed` is False (and no box) when it cannot be found."""
    spans, coverage = match_span(page.folded, fold_quote(quote))
    placed = bool(spans) and coverage >= MIN_COVERAGE
    boxes: list[Box] = []
    if placed:
        chars = sorted({page.index[i] for a, b in spans for i in range(a, b)})
        # the characters between matched letters (spaces, hyphens, punctuation) on the same line are filled
        # in by the line merge; a line break between them starts a new box
        boxes = line_boxes([char_box(i) for i in chars])
    return Highlight(page=page.number, width=page.width, height=page.height, boxes=boxes, placed=placed and bool(boxes), coverage=round(coverage, 3))

