"""Where the evidence sits in retrieval inside one paper: for each answerable paper question of AskPDF sets, the
paper's chunks are ranked DEPTH deep as an answer ranks them (`Assistant.search` with the paper's scope), and the
rank of the first chunk that quotes the question's evidence (`quotes_evidence`) is counted. Prints, per set, the
share of questions whose evidence is in the top 5 / 10 / 20 / DEPTH chunks and whose gold page is in the top 5.

    PAPERCHAT_DATA_DIR=STORE python scripts/paper_retrieval_depth.py SET.jsonl [SET.jsonl ...] --data ../shared/data

STORE must hold the sets' PDFs (the 40-PDF evaluation store). Only the questions on the 30 PDFs no model trained on
are counted (`rag/` and `scholarly_nlp/` are left out) unless --all-pdfs. Stop 42 measured fresh6 with it: the
evidence in the top 10 chunks for 0.722 of its questions against 0.944-0.989 for fresh2-fresh5.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TRAINED = ("rag/", "scholarly_nlp/")  # the reader's training PDFs


def first_rank(flags: list[bool]) -> int | None:
    """The 0-based rank of the first True, or None."""
    return next((i for i, f in enumerate(flags) if f), None)


def shares(ranks: list[int | None], page_hits: list[bool], depth: int) -> str:
    """One line of the report: the share of questions whose evidence is within each depth."""
    n = len(ranks) or 1
    cuts = [c for c in (5, 10, 20) if c < depth] + [depth]
    parts = [f"evidence@{c} {sum(1 for r in ranks if r is not None and r < c) / n:.3f}" for c in cuts]
    return " ".join(parts) + f" page@5 {sum(page_hits) / n:.3f}"


def main() -> int:
    """The command (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--depth", type=int, default=40)
    ap.add_argument("--all-pdfs", action="store_true", help="also count the reader's training PDFs")
    args = ap.parse_args()
    from paperchat.assistant import Assistant
    from paperchat.evaluation.metrics import quotes_evidence
    from paperchat.evaluation.questions import load_set
    from paperchat.settings import load_settings
    from paperchat.types import Scope

    core = Assistant(load_settings())
    for setf in args.sets:
        qs, _, _ = load_set(setf)
        ranks: list[int | None] = []
        page_hits: list[bool] = []
        for q in qs:
            if not q.pdf or q.unanswerable or not q.evidence or (not args.all_pdfs and q.pdf.startswith(TRAINED)):
                continue
            paper = core.paper_for_pdf(args.data / "pdfs" / q.pdf)
            if paper is None:
                print(f"{q.pdf} is not in the store: ingest the PDFs first", file=sys.stderr)
                return 2
            hits = core.search(q.question, Scope.for_paper(paper.id), k=args.depth)
            ranks.append(first_rank([quotes_evidence(h.chunk.text, q.evidence) for h in hits]))
            page_hits.append(any(h.chunk.page in (q.gold_pages or []) for h in hits[:5]))
        print(f"{setf.name}: {len(ranks)} questions, {shares(ranks, page_hits, args.depth)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
