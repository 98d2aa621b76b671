"""How many of a cell's candidates the sentence reader must read (`tables.builder.READ_TOP`): grouped 5-fold CV by
paper on the cell picker's training cells, each test cell read as the builder reads it (the best `k` candidates by
the picker without the reader's logit, then the picker with it), holds-gold and not-stated precision and recall.

    PAPERCHAT_DATA_DIR=STORE python -m paperchat.tables.train --data ../shared/data --cells-cache CELLS.pkl
    python scripts/table_read_top.py CELLS.pkl [--k 2 4 6 8 12 24 0]

(0: every candidate.) The cells file is the trainer's `--cells-cache` (candidates with the reader's logits).
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

import numpy as np

from paperchat.tables import train as T


def evaluate(cells: list, k: int, ns_precision: float | None) -> dict[str, float]:
    """Holds-gold, not-stated precision and recall over the outer folds when the reader reads `k` candidates."""
    ri = T.FEATURES.index("reader")
    held = stated_n = said = right = truly = 0
    for test, train in T._paper_folds(cells, 5, seed=0):
        m = T.fit([cells[i] for i in train], 0.1, True, ns_precision=ns_precision)
        for i in test:
            c = cells[i]
            st = not c.gold["not_stated"]
            truly += not st
            stated_n += st
            if not len(c.texts):
                said += 1
                right += not st
                continue
            x = T._with_prototype(c, m.prototypes)
            keep = np.arange(len(c.texts))
            if k and len(c.texts) > k:
                guess = x.copy()
                guess[:, ri] = m.mean[ri]
                keep = np.sort(np.argsort(-m.score(guess, c.column, c.texts))[:k])
            s = m.score(x[keep], c.column, [c.texts[j] for j in keep])
            empty = bool(s.max() < m.not_stated_below)
            said += empty
            right += empty and not st
            if st and not empty:
                held += bool(c.labels[keep[int(s.argmax())]])
    return {"k": k, "holds_gold": round(held / max(stated_n, 1), 3), "not_stated_precision": round(right / max(said, 1), 3),
            "not_stated_recall": round(right / max(truly, 1), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cells", type=Path)
    ap.add_argument("--k", type=int, nargs="+", default=[2, 4, 6, 8, 12, 24, 0])
    args = ap.parse_args()
    cells = pickle.loads(args.cells.read_bytes())  # noqa: S301 - the trainer's own cache file
    for k in args.k:
        print(json.dumps(evaluate(cells, k, T.NS_PRECISION)), flush=True)


if __name__ == "__main__":
    main()
