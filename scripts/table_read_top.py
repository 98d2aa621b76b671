"""How many of a cell's candidates the sentence reader must read (`tables.builder.READ_TOP`): the trainer's grouped
5-fold CV by paper on the cell picker's training cells (`tables.train.cross_validate`), each test cell read as the
builder reads it (the best `k` candidates by the picker without the reader's logit, then the picker with it).

    PAPERCHAT_DATA_DIR=STORE python -m paperchat.tables.train --data ../shared/data --cells-cache CELLS.pkl
    python scripts/table_read_top.py CELLS.pkl [--k 2 4 6 8 12 24 0] [--c 0.1]

(0: every candidate.) The cells file is the trainer's `--cells-cache` (candidates with the reader's logits); the
regression's C and word features are the shipped model's (C 0.1 with the words).
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

from paperchat.tables import train as T


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cells", type=Path)
    ap.add_argument("--k", type=int, nargs="+", default=[2, 4, 6, 8, 12, 24, 0])
    ap.add_argument("--c", type=float, default=0.1)
    args = ap.parse_args()
    cells = pickle.loads(args.cells.read_bytes())  # noqa: S301 - the trainer's own cache file
    for k in args.k:
        got = T.cross_validate(cells, args.c, True, ns_precision=T.NS_PRECISION, read_top=k or None)
        print(json.dumps({"k": k, **got}), flush=True)


if __name__ == "__main__":
    main()
