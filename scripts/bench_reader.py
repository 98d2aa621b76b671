"""What the sentence reader adds to a paper answer: the same paper questions asked with PAPERCHAT_READER off, on and
refuse, interleaved question by question in one process over one store (so the machine's noise falls on all
three), p50 and p95 of the answer's total time and each mode's ratio to `off`. With `--reranker`, what the paper
reranker adds to a topic answer: the set's topic questions asked with PAPERCHAT_RERANKER off and on.

    PAPERCHAT_DATA_DIR=STORE python scripts/bench_reader.py --set QUESTIONS.jsonl --data ../shared/data [--rounds 2] [--json]
        [--workers N] [--reranker]

`--workers 1` scores the pairs one after another (each on one core), as before the reader ran them side by side.

The store must hold the set's PDFs (an `eval run` store), or for `--reranker` the topic set's papers (the full
store). Question sets as in eval/ (scope "paper", "pdf"; or a topic scope).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from paperchat.assistant import Assistant
from paperchat.evaluation.questions import load_set
from paperchat.evaluation.runner import question_scope
from paperchat.reader.model import shipped_reader
from paperchat.settings import load_settings
from paperchat.types import Scope

READER_MODES = ("off", "on", "refuse")


def main() -> int:
    """Time the chosen knob's modes on the set's questions, interleaved, and print p50 / p95 and ratios to off."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--workers", type=int, help="pairs the reader scores at once (default: its own choice)")
    ap.add_argument("--reranker", action="store_true", help="time the paper reranker on the set's topic questions instead")
    args = ap.parse_args()
    if args.workers:
        shipped_reader().workers = args.workers  # before its first load, which makes the thread pool
    base = load_settings()
    knob, modes = ("reranker", ("off", "on")) if args.reranker else ("reader", READER_MODES)
    helpers = {m: Assistant(base.model_copy(update={knob: m})) for m in modes}
    first = helpers["off"]
    questions, _, _ = load_set(args.set)
    scoped = []
    for q in questions:
        if args.reranker and q.scope != "paper" and not q.unanswerable:
            scoped.append((q.question, question_scope(first, q, args.data)))
        elif not args.reranker and q.scope == "paper" and q.pdf:
            p = first.paper_for_pdf(args.data / "pdfs" / q.pdf)
            if p is not None:
                scoped.append((q.question, Scope.for_paper(p.id)))
    for m in modes:  # load each mode's models once before timing
        helpers[m].ask(scoped[0][0], scoped[0][1])
    times: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(args.rounds):
        for i, (question, scope) in enumerate(scoped):
            for m in (modes if (i + r) % 2 == 0 else modes[::-1]):  # alternate the order: no mode always runs first
                ans = helpers[m].ask(f"{question} ({r})", scope)
                times[m].append(ans.timings_ms["total"])
    out = {"questions": len(scoped), "rounds": args.rounds, "knob": knob, "reader_workers": shipped_reader().workers}
    for m in modes:
        t = np.array(times[m])
        out[m] = {"p50_ms": round(float(np.percentile(t, 50)), 1), "p95_ms": round(float(np.percentile(t, 95)), 1)}
    for m in modes[1:]:
        out[m]["added_p50_ms"] = round(out[m]["p50_ms"] - out["off"]["p50_ms"], 1)
        out[m]["ratio_p50"] = round(out[m]["p50_ms"] / out["off"]["p50_ms"], 2)
    print(json.dumps(out, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
