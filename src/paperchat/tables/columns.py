"""What a comparison table is: columns (a header and the question every paper is read against), the presets,
cells (a quote with its page, or "not stated") and the table with its Markdown, CSV and JSON forms."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from paperchat.errors import InputError

MAX_PAPERS, MAX_COLUMNS = 50, 12
VALUE_WORDS = 12


@dataclass(frozen=True)
class Column:
    """A column: its header, the question the reader reads every sentence against, the text searched for the
    paper's chunks (the question when empty), and whether it summarises the paper (read from the abstract and
    first page, where a paper says what it does, instead of searched)."""

    name: str
    question: str
    search: str = ""
    summary: bool = False


PRESETS: dict[str, list[Column]] = {
    "empirical": [
        Column("Task", "What task or problem does the paper address?"),
        Column("Approach", "What is the proposed method, in one line?"),
        Column("Datasets", "Which datasets or benchmarks are used for evaluation?"),
        Column("Metric and best result", "What is the main metric and the best result reported?"),
        Column("Model and size", "Which model(s) and parameter sizes are used or trained?"),
        Column("Compute", "What hardware or compute budget is used for training (GPUs, GPU-hours, TPU)?"),
        Column("Code", "Is code or data released, and where?"),
    ],
    "method": [
        Column("Problem", "What problem does the paper address?"),
        Column("Key idea", "What is the key idea of the proposed method?"),
        Column("Compared with", "Which baselines or prior methods is it compared with?"),
        Column("Main finding", "What is the main finding?"),
        Column("Limitations", "What limitations do the authors state?"),
    ],
    "survey": [
        Column("Scope", "What area does the paper survey or cover?"),
        Column("Taxonomy", "How does the paper categorise the approaches?"),
        Column("Open problems", "Which open problems or future directions are named?"),
    ],
}


def column_of(text: str) -> Column:
    """A column from the command line: 'Name' (asked as "What is the Name?"), 'Name=question', or a question."""
    text = " ".join(text.split())
    if not text:
        raise InputError("a column is empty", 'give a name or a question, e.g. --column "Datasets"')
    if "=" in text:
        name, _, q = text.partition("=")
        return Column(name.strip() or q.strip()[:40], q.strip() or f"What is the {name.strip()}?")
    for preset in PRESETS.values():
        for c in preset:
            if c.name.lower() == text.lower():
                return c
    if text.endswith("?"):
        return Column(text[:-1][:60], text)
    return Column(text, f"What {'are' if text.lower().endswith('s') else 'is'} the {text.lower()} of this paper?")


@dataclass
class Cell:
    """One paper's answer to one column."""

    paper_id: str
    column: str
    quote: str = ""  # the sentence (or table row) that answers; "" when not stated
    page: int | None = None  # None: the abstract
    not_stated: bool = False
    low_confidence: bool = False
    reader: float | None = None  # the sentence reader's logit for (question, quote)
    value: str = ""  # an LLM's short value, kept only when its content words are in the quote
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    page_size: tuple[float, float] | None = None  # (width, height) of the page, in points, for the boxes
    seconds: float = 0.0
    cached: bool = False

    def citation(self) -> str:
        """'p. 6', 'abstract' or '' (not stated)."""
        if self.not_stated:
            return ""
        return f"p. {self.page}" if self.page is not None else "abstract"

    def text(self) -> str:
        """What the table shows: the value (when kept) or the quote, or 'not stated'."""
        if self.not_stated:
            return "not stated"
        return self.value or self.quote


@dataclass
class Table:
    """Rows (papers) by columns, with each row's title."""

    papers: list[tuple[str, str]]  # (paper id, title)
    columns: list[Column]
    cells: dict[tuple[str, str], Cell]
    seconds: float = 0.0

    def cell(self, paper_id: str, column: str) -> Cell:
        """The cell of a row and a column (by column name)."""
        return self.cells[(paper_id, column)]

    def sorted_by(self, column: str | None) -> list[tuple[str, str]]:
        """Rows sorted by a column's text (not-stated cells last), or as built."""
        if not column:
            return self.papers
        return sorted(self.papers, key=lambda p: (self.cell(p[0], column).not_stated, self.cell(p[0], column).text().lower()))

    def to_markdown(self) -> str:
        """A Markdown table: each cell its text and citation, low-confidence cells marked (?)."""

        def esc(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", " ")

        head = ["Paper", *[c.name for c in self.columns]]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for pid, title in self.papers:
            row = [f"{esc(title)} ({pid})"]
            for c in self.columns:
                cell = self.cell(pid, c.name)
                cite = f" [{cell.citation()}]" if cell.citation() else ""
                row.append(esc(cell.text()) + cite + (" (?)" if cell.low_confidence else ""))
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)

    def to_csv(self) -> str:
        """CSV: paper id, title, then per column its text and its citation."""
        out = io.StringIO()
        w = csv.writer(out)
        w.writerow(["paper_id", "title", *[x for c in self.columns for x in (c.name, f"{c.name} (citation)")]])
        for pid, title in self.papers:
            row = [pid, title]
            for c in self.columns:
                cell = self.cell(pid, c.name)
                row += [cell.text() + (" (low confidence)" if cell.low_confidence else ""), cell.citation()]
            w.writerow(row)
        return out.getvalue()

    def to_json(self) -> dict[str, Any]:
        """Columns, rows and every cell with its quote, page, boxes, flags and reader score."""
        return {
            "columns": [asdict(c) for c in self.columns],
            "rows": [
                {"paper_id": pid, "title": title, "cells": {c.name: _cell_json(self.cell(pid, c.name)) for c in self.columns}}
                for pid, title in self.papers
            ],
            "seconds": round(self.seconds, 3),
        }


def _cell_json(c: Cell) -> dict[str, Any]:
    d = asdict(c)
    d["citation"] = c.citation()
    d["text"] = c.text()
    return d


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*")
_STOP = frozenset("a an and are as at be by for from in is it its of on or the this that to was were with which uses used using".split())


def _content(text: str) -> set[str]:
    return {w.lower().strip(".-") for w in _WORD.findall(text)} - _STOP - {""}


def value_supported(value: str, quote: str) -> bool:
    """A short value is kept only when every content word of it is in the quote."""
    words = _content(value)
    return bool(words) and words <= _content(quote) and len(value.split()) <= VALUE_WORDS
