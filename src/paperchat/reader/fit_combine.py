"""Fit the combination of the sentence reader's logit with the rules (paperchat.answering.combine) on a capture of
tune sets, cross-validated by PDF, and write it beside the reader.

    python scripts/reader_capture.py CAPTURE.json SETS...
    python -m paperchat.reader.fit_combine CAPTURE.json --out models/reader-sentence/combine.json

Prints top-1 (the first sentence quotes the evidence) for the fixed mix, the reader alone, the rules alone and the
learned combination with whole PDFs held out (L2 0.01, 0.1, 1); writes the weights fitted on every question with the
best L2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from paperchat.answering.combine import FEATURES, cross_validate, fit, load_capture, top1


def main(argv: Sequence[str] | None = None) -> int:
    """The fitting command (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m paperchat.reader.fit_combine", description=__doc__.split("\n\n")[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--mix", type=float, default=24.0, help="the fixed mix to compare against")
    args = ap.parse_args(argv)
    items = load_capture(args.capture)
    n = len(items)
    read = sum(int(y.sum() > 0) for _, y, _ in items)
    print(f"{n} answerable questions from {len({p for _, _, p in items})} PDFs; the evidence is among the read sentences for {read}")
    mix = top1(lambda x: x[:, 0] + args.mix * x[:, 1], items)
    print(f"top-1, fixed mix {args.mix:g}: {mix}/{n}; reader alone {top1(lambda x: x[:, 0], items)}/{n}; rules alone {top1(lambda x: x[:, 1], items)}/{n}")
    cv = {l2: cross_validate(items, l2) for l2 in (0.01, 0.1, 1.0)}
    print("top-1, learned, cross-validated by PDF: " + ", ".join(f"L2 {k:g}: {v}/{n}" for k, v in cv.items()))
    if args.out:
        l2 = max(cv, key=lambda k: (cv[k], k))
        comb = fit(items, l2)
        comb.save(args.out, {"l2": l2, "questions": n, "top1_cv": cv[l2], "top1_mix": mix, "mix": args.mix, "capture": str(args.capture)})
        print(f"wrote {args.out} (L2 {l2:g}): " + ", ".join(f"{f} {w:+.3f}" for f, w in zip(FEATURES, comb.weights, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
