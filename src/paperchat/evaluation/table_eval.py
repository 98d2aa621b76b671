"""`paperchat eval table`: comparison-table cells against gold cells written by reading (eval/table_gold.jsonl).

Each gold line is one (paper, column): the column's question, whether the paper states it, a short gold value
with aliases, the gold pages and the evidence sentence(s). The papers are ingested into the data folder from
`--data` (their PDFs with metadata.json, or their abstract records), the table is built as `paperchat table`
builds it, and each cell is scored:
- holds-gold: a stated gold cell whose quote contains the gold value or an alias, or is (nearly) one of its
  evidence sentences (half of the evidence's content words or more, on the gold page or in the abstract);
- not-stated precision and recall: cells said "not stated" against gold cells the paper does not state;
- citation validity: a quoted cell whose quote is on its cited page (or in the abstract), letters and digits
  compared.
The papers are split into two halves by a hash of their id (A and B): report one half when the other was used
to choose anything.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperchat.tables.builder import TableBuilder
from paperchat.tables.cells import answers, letters_and_digits
from paperchat.tables.columns import Column, column_of
from paperchat.tables.train import ingest_gold_papers, read_gold

if TYPE_CHECKING:
    from paperchat.assistant import Assistant

def half_of(paper_id: str) -> str:
    """'A' or 'B': a stable split of the papers."""
    return "A" if int(hashlib.sha1(paper_id.encode()).hexdigest(), 16) % 2 == 0 else "B"


@dataclass
class CellScore:
    """One gold cell and what the table said."""

    id: str
    paper_id: str
    column: str
    gold_not_stated: bool
    said_not_stated: bool
    holds: bool
    citation_valid: bool | None  # None: not stated (nothing cited)
    low_confidence: bool
    quote: str
    page: int | None
    half: str


@dataclass
class TableEval:
    """Every scored cell and the summary by half."""

    cells: list[CellScore] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self, half: str | None = None) -> dict[str, Any]:
        """holds-gold, not-stated precision and recall, citation validity (and counts) over a half or all."""
        cs = [c for c in self.cells if half is None or c.half == half]
        stated = [c for c in cs if not c.gold_not_stated]
        said_ns = [c for c in cs if c.said_not_stated]
        gold_ns = [c for c in cs if c.gold_not_stated]
        cited = [c for c in cs if c.citation_valid is not None]
        low = [c for c in cs if not c.said_not_stated and c.low_confidence]
        return {
            "cells": len(cs),
            "holds_gold": round(sum(c.holds for c in stated) / len(stated), 3) if stated else None,
            "not_stated_precision": round(sum(c.gold_not_stated for c in said_ns) / len(said_ns), 3) if said_ns else None,
            "not_stated_recall": round(sum(c.said_not_stated for c in gold_ns) / len(gold_ns), 3) if gold_ns else None,
            "citation_validity": round(sum(bool(c.citation_valid) for c in cited) / len(cited), 3) if cited else None,
            "low_confidence_holds": round(sum(c.holds for c in low if not c.gold_not_stated) / max(1, sum(1 for c in low if not c.gold_not_stated)), 3),
            "confident_holds": round(
                sum(c.holds for c in stated if not c.low_confidence and not c.said_not_stated)
                / max(1, sum(1 for c in stated if not c.low_confidence and not c.said_not_stated)), 3),
            "stated": len(stated), "gold_not_stated": len(gold_ns), "said_not_stated": len(said_ns), "low_confidence": len(low),
        }

    def table(self) -> str:
        """The summary as Markdown, by half and in all."""
        rows = [("A", self.summary("A")), ("B", self.summary("B")), ("all", self.summary())]
        keys = ["cells", "holds_gold", "not_stated_precision", "not_stated_recall", "citation_validity", "confident_holds", "low_confidence_holds"]
        lines = ["| half | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 1)]
        lines += [f"| {h} | " + " | ".join(str(s[k]) for k in keys) + " |" for h, s in rows]
        return "\n".join(lines) + f"\n\n{len(self.cells)} cells in {self.seconds:.1f} s"


def _page_texts(data: Path, pdf: str) -> list[str]:
    from pypdf import PdfReader

    return [pg.extract_text() or "" for pg in PdfReader(str(data / "pdfs" / pdf)).pages]


def evaluate_table(core: Assistant, gold_path: Path, data: Path, builder: TableBuilder | None = None) -> TableEval:
    """Build every gold cell and score it."""
    import time

    gold = read_gold(gold_path)
    ingest_gold_papers(core, gold, data)
    builder = builder or TableBuilder(core)
    pages: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    ev = TableEval()
    for g in gold:
        pid = g["paper_id"]
        col = column_of(g["column"])
        cell = builder.cell(pid, col if col.question == g["question"] else Column(g["column"], g["question"]))
        quote = cell.quote
        # the same test the cell picker's training labels candidates with
        holds = not cell.not_stated and answers(quote, cell.page, g)
        valid: bool | None = None
        if not cell.not_stated:
            if cell.page is None:
                paper = core.paper(pid)
                valid = bool(paper) and letters_and_digits(quote)[:200] in letters_and_digits(paper.abstract + " " + paper.title)  # type: ignore[union-attr]
            else:
                pdf = g.get("pdf") or ""
                if pdf and pdf not in pages:
                    pages[pdf] = _page_texts(data, pdf)
                texts = pages.get(pdf, [])
                valid = 0 < cell.page <= len(texts) and letters_and_digits(quote)[:200] in letters_and_digits(texts[cell.page - 1]) if texts else None
        ev.cells.append(CellScore(
            g["id"], pid, g["column"], bool(g["not_stated"]), cell.not_stated, holds, valid, cell.low_confidence, quote, cell.page, half_of(pid)
        ))
    ev.seconds = time.perf_counter() - t0
    return ev
