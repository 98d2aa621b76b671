"""Comparison-table speed: a 10 x 6 table from abstracts and one from PDFs, fresh cache, with the cell picker
(the default) and, as the baseline in the same run, the AskPDF answerer alone (`TableBuilder(reader=False)`).

    PAPERCHAT_DATA_DIR=/tmp/tablestore .venv/bin/python scripts/bench_table.py --data ../shared/data [--workers N]

`--workers 1` has the sentence reader score a cell's pairs one after another, as before it ran them side by side.

The gold set's papers are ingested first (12 PDFs, 12 abstracts; see eval/table_gold.jsonl); the abstracts
table uses papers without a PDF from the library, the PDF table the papers with one. Prints seconds per table
and per cell, and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from paperchat.assistant import Assistant
from paperchat.reader.model import shipped_reader
from paperchat.evaluation.table_eval import ingest_gold_papers, read_gold
from paperchat.settings import PROJECT_ROOT, Settings
from paperchat.tables.columns import PRESETS
from paperchat.tables.cache import CellCache
from paperchat.tables.builder import TableBuilder

COLUMNS = PRESETS["empirical"][:6]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--workers", type=int, help="pairs the reader scores at once (default: its own choice)")
    args = p.parse_args()
    if args.workers:
        shipped_reader().workers = args.workers  # before its first load, which makes the thread pool
    core = Assistant(Settings())
    ingest_gold_papers(core, read_gold(PROJECT_ROOT / "eval" / "table_gold.jsonl"), Path(args.data))
    papers = core.library.catalog.get_many(core.library.catalog.stored_hashes())
    with_pdf = sorted(p for p, x in papers.items() if x.pdf_path)[:10]
    abstracts = sorted(p for p, x in papers.items() if not x.pdf_path)[:10]
    core.ask("warm up", core.library.catalog and __import__("paperchat.types", fromlist=["Scope"]).Scope.for_paper(with_pdf[0]))
    for name, ids in (("abstracts", abstracts), ("PDFs", with_pdf)):
        times = {}
        for label, kw in (("cell picker", {}), ("AskPDF answerer (baseline)", {"reader": False, "cell_model": False})):
            with tempfile.TemporaryDirectory() as tmp:
                b = TableBuilder(core, cache=CellCache(Path(tmp) / "t.sqlite"), **kw)  # type: ignore[arg-type]
                t0 = time.perf_counter()
                b.build(ids, COLUMNS)
                times[label] = time.perf_counter() - t0
        base = times["AskPDF answerer (baseline)"]
        for label, s in times.items():
            print(f"{name:9} {len(ids)} x {len(COLUMNS)}  {label:28} {s:6.1f} s  {1000 * s / (len(ids) * len(COLUMNS)):6.0f} ms/cell  x{s / base:.2f} of the baseline")


if __name__ == "__main__":
    main()
