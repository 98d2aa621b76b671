"""The sentence reader against the rules on the documents held out of its training (the same by-document split
as `paperchat.reader.train`): top-1 accuracy on answer questions and how well the best score tells answered
questions from near misses (AUC), for the rules alone (answering.select.rank, no embedder) and the shipped reader.

    python scripts/reader_validation.py [--data ../shared/data] [--model models/reader-sentence ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from paperchat.answering.question import analyse
from paperchat.answering.select import rank
from paperchat.answering.text import candidates
from paperchat.reader.data import load_groups, split_by_document, validation_docs
from paperchat.reader.model import SentenceReader
from paperchat.reader.train import DEFAULT_FILES, evaluate
from paperchat.text import Tokenizer
from paperchat.types import Source


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--model", type=Path, nargs="*", default=[], help="reader folders to compare (default: the shipped one)")
    args = ap.parse_args()
    tok = Tokenizer()
    groups = list(load_groups([Path(f) for f in DEFAULT_FILES], args.data, tok))
    _, val = split_by_document(groups, 0.1, 35, validation_docs())

    def rules(g):  # the rules' score of each candidate, in the group's order
        src = Source(n=1, paper_id="x", title="", text=" ".join(g.cands), page=1, score=1.0)
        cands = candidates([src], tok)
        ranked = rank(analyse(g.question, tok), cands)
        by_text = {s.text: s.score for s in ranked}
        return np.array([by_text.get(c, -9.0) for c in g.cands])

    out = {"validation_groups": len(val), "rules": evaluate(rules, val)}
    for folder in args.model or [None]:
        reader = SentenceReader(folder, check=False) if folder else SentenceReader()
        out[f"reader {folder or 'shipped'}"] = evaluate(lambda g, r=reader: r.score(g.question, g.cands, g.contexts), val)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
