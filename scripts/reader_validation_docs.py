"""Write the sentence reader's fixed validation documents (`eval/reader/validation_docs.txt`).

The first two data batches were split by a seeded shuffle of their documents (10 %, seed 35). A later batch adds
its own seeded 10 % of its new documents, and the earlier list is kept as it was, so a reader trained on more
data is measured on every document the previous reader was measured on (which it never trained on) plus new ones.

    python scripts/reader_validation_docs.py --old eval/reader/answers.jsonl ... --new eval/reader/answers_c.jsonl ...
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from paperchat.reader.data import VALIDATION_DOCS, Group, load_groups, split_by_document
from paperchat.text import Tokenizer


def _groups(files: list[Path], data: Path) -> list[Group]:
    """The training groups, as the trainer reads them."""
    return list(load_groups(files, data, Tokenizer()))


def main() -> int:
    """The command (module docstring)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, nargs="+", required=True, help="the batches split before (seed 35, 10 %)")
    ap.add_argument("--new", type=Path, nargs="*", default=[], help="a later batch: its own 10 % of new documents")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--out", type=Path, default=VALIDATION_DOCS)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = ap.parse_args()
    old_groups = _groups(args.old, args.data)
    old = {g.doc for g in old_groups}
    val = {g.doc for g in split_by_document(old_groups, 0.1, 35)[1]}  # the split the earlier readers were measured on
    new = sorted({g.doc for g in _groups(args.new, args.data)} - old)
    random.Random(args.seed).shuffle(new)
    added = set(new[: round(0.1 * len(new))])
    lines = ["# the sentence reader's validation documents (scripts/reader_validation_docs.py); never trained on"]
    lines += sorted(val | added)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(val)} documents from the earlier batches, {len(added)} of {len(new)} new ones -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
