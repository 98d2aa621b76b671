"""Sweep one sentence-selection weight (paperchat.answering.select.Weights) over AskPDF question sets with
split halves: retrieval runs once per question, then the extractive reading is scored for every value.

    python scripts/sweep_sentences.py --set ../shared/data/eval/askpdf_dev.jsonl --data ../shared/data \
        --weight fits --values 0,0.1,0.2,0.4

Prints, per value and half, the share of answerable questions whose first quoted sentence holds a gold
answer (answer.holds_first) and whose first three hold one (answer.holds), as `eval run` measures them.
With several --set files, the same two shares are printed per set as well: a value is worth keeping only
where it wins on the sets it was not chosen on.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from pathlib import Path

from paperchat.answering import read_sources
from paperchat.answering.select import Weights
from paperchat.assistant import Assistant
from paperchat.evaluation import metrics as M
from paperchat.evaluation.questions import load_set
from paperchat.evaluation.runner import question_scope
from paperchat.evaluation.sweep import halves
from paperchat.settings import Settings
from paperchat.text import Tokenizer


class _Memo:
    """The embedder with its sentence vectors kept: every value reads the same sentences."""

    def __init__(self, inner):  # type: ignore[no-untyped-def]
        self.inner, self.cache, self.queries = inner, {}, {}

    def embed(self, texts):  # type: ignore[no-untyped-def]
        import numpy as np

        missing = [t for t in texts if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing), strict=True):
                self.cache[t] = v
        return np.stack([self.cache[t] for t in texts])

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]


def main() -> None:
    """Run the sweep and print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--weight", required=True, help="a field of Weights")
    ap.add_argument("--values", required=True)
    args = ap.parse_args()
    settings = Settings()
    assistant = Assistant(settings)
    questions = []
    set_of: dict[str, str] = {}
    for f in args.set:
        for q in load_set(f)[0]:
            if q.scope == "paper" and not q.unanswerable and q.gold_answer:
                questions.append(q)
                set_of[q.id] = f.stem
    embedder = _Memo(assistant.library.embedder)
    tok = Tokenizer()
    read = {}
    for q in questions:
        hits = assistant.search(q.question, question_scope(assistant, q, args.data), settings.retrieval.k)
        read[q.id] = assistant.qa.sources(hits)
    a, b = halves(questions)
    values = [float(v) for v in args.values.split(",")]
    print(f"{args.weight}: {len(questions)} answerable questions, halves {len(a)} / {len(b)}")
    print("   value | holds_first A / B | holds@3 A / B")
    for v in values:
        w = dataclasses.replace(Weights(), **{args.weight: v})
        row: dict[str, tuple[float, float]] = {}
        for q in questions:
            ranked = read_sources(q.question, read[q.id], tok, embedder, w).ranked  # type: ignore[arg-type]
            golds = [q.gold_answer, *q.answer_aliases]
            first = M.holds(ranked[0].text, golds)[0] if ranked else 0.0
            three = M.holds(" ".join(s.text for s in ranked[:3]), golds)[0] if ranked else 0.0
            row[q.id] = (first, three)
        f = [statistics.fmean(row[q.id][0] for q in h) for h in (a, b)]
        t = [statistics.fmean(row[q.id][1] for q in h) for h in (a, b)]
        per_set = ""
        if len(args.set) > 1:
            names = list(dict.fromkeys(set_of.values()))
            cells = []
            for name in names:
                ids = [q.id for q in questions if set_of[q.id] == name]
                cells.append(f"{name} {statistics.fmean(row[i][0] for i in ids):.3f}/{statistics.fmean(row[i][1] for i in ids):.3f}")
            per_set = " | " + "  ".join(cells)
        print(f"{v:8} | {f[0]:.3f} / {f[1]:.3f}    | {t[0]:.3f} / {t[1]:.3f}{per_set}")


if __name__ == "__main__":
    main()
