"""How the sentence reader's logit and the rules' evidence combine into the order of a paper answer's sentences:
a linear model over the read sentences' features, fitted with a softmax over each question's read sentences
(the sentence quoting the evidence is the target), instead of one hand-chosen mix weight.

    python scripts/reader_capture.py CAPTURE.json SETS...     # per question: the read sentences' features
    python -m paperchat.reader.fit_combine CAPTURE.json --out models/reader-sentence/combine.json

The command prints top-1 (the first sentence quotes the evidence) cross-validated by PDF (whole PDFs held out)
against the fixed mix, and writes the weights fitted on all questions. Features are relative within a question
where that matters (the gap to the question's best logit, the rank), so one logit scale serves every question.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FEATURES = (
    "reader", "rules", "lexical", "context", "cosine", "fits", "gives", "inv_rank", "fragment", "heading", "log_words",
    "reader_gap", "rules_gap", "reader_rank", "rules_rank", "reader_page", "page_share",
)
_HEADING = re.compile(r"^[A-Z]?\d+(?:\.\d+)*\.?\s+[A-Z]")  # "4 Experiments ...", "C.2 GPT-4 prompts ..."


def features(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    """One row per read sentence: {reader, rules, lexical, context, cosine, fits, gives, n, fragment, text, page}.
    Besides each sentence's own parts: whether it is on the page of the sentence the reader rates highest
    (`reader_page`), and the share of the read sentences on its page (`page_share`): where the question's subject
    is, as the read sentences vote (Stop 39)."""
    rd = np.array([float(r["reader"]) for r in rows])
    ru = np.array([float(r["rules"]) for r in rows])
    rd_rank = np.argsort(np.argsort(-rd, kind="stable"), kind="stable")
    ru_rank = np.argsort(np.argsort(-ru, kind="stable"), kind="stable")
    pages = [r.get("page") for r in rows]
    reader_page = pages[int(np.argmax(rd))] if rows else None
    on_page = {pg: pages.count(pg) / len(rows) for pg in set(pages)}
    out = [
        [
            rd[j], ru[j], float(r["lexical"]), float(r["context"]), float(r["cosine"]), float(r["fits"]), float(r["gives"]),
            1.0 / int(r["n"]), float(r["fragment"]), float(bool(_HEADING.match(str(r["text"])))), math.log1p(len(str(r["text"]).split())),
            rd[j] - rd.max(), ru[j] - ru.max(), 1.0 / (1 + rd_rank[j]), 1.0 / (1 + ru_rank[j]),
            float(pages[j] == reader_page), on_page[pages[j]],
        ]
        for j, r in enumerate(rows)
    ]
    return np.array(out, dtype=float).reshape(len(rows), len(FEATURES))


@dataclass(frozen=True)
class Combiner:
    """The fitted weights (one per feature)."""

    weights: tuple[float, ...]

    def scores(self, rows: Sequence[dict[str, Any]]) -> np.ndarray:
        """The read sentences' combined scores (higher first)."""
        return features(rows) @ np.array(self.weights) if rows else np.zeros(0)

    def save(self, path: Path, record: dict[str, Any]) -> None:
        """Write the weights with a record of how they were fitted."""
        path.write_text(json.dumps({"features": list(FEATURES), "weights": [round(w, 6) for w in self.weights], **record}, indent=2) + "\n")


def load_combiner(path: Path) -> Combiner | None:
    """The combiner saved beside the reader, or None when there is none (the fixed mix orders the sentences)."""
    if not path.is_file():
        return None
    spec = json.loads(path.read_text())
    if tuple(spec["features"]) != FEATURES:
        return None  # written for other features: the mix is safer than a misread weight vector
    return Combiner(tuple(float(w) for w in spec["weights"]))


Item = tuple[np.ndarray, np.ndarray, str]  # (features, which sentences quote the evidence, the PDF)


def fit(items: Sequence[Item], l2: float = 0.1, iters: int = 300, lr: float = 0.1) -> Combiner:
    """Softmax over each question's read sentences (the evidence ones the target), L2 on standardised features,
    Adam; questions whose evidence was not read are left out."""
    xs = np.concatenate([x for x, _, _ in items])
    mu, sd = xs.mean(0), xs.std(0) + 1e-6
    train = [((x - mu) / sd, y) for x, y, _ in items if y.sum() > 0]
    w, m, v = np.zeros(xs.shape[1]), np.zeros(xs.shape[1]), np.zeros(xs.shape[1])  # one weight per feature column
    for t in range(1, iters + 1):
        g = l2 * w
        for x, y in train:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            g -= x.T @ (y / y.sum() - p) / len(train)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return Combiner(tuple(float(a) for a in w / sd))  # the standardising shift drops out of a per-question argmax


def top1(scores_of: Any, items: Sequence[Item]) -> int:
    """Questions whose best-scored sentence quotes the evidence."""
    return sum(int(y[int(np.argmax(scores_of(x)))] > 0) for x, y, _ in items if len(y))


def cross_validate(items: Sequence[Item], l2: float, folds: int = 5, seed: int = 0) -> int:
    """Top-1 with whole PDFs held out: each fold's combiner is fitted on the other folds' PDFs."""
    pdfs = sorted({p for _, _, p in items})
    random.Random(seed).shuffle(pdfs)
    got = 0
    for k in range(folds):
        held = set(pdfs[k::folds])
        comb = fit([it for it in items if it[2] not in held], l2)
        w = np.array(comb.weights)
        got += top1(lambda x, w=w: x @ w, [it for it in items if it[2] in held])
    return got


def load_capture(path: Path) -> list[Item]:
    """Answerable questions of a capture (scripts/reader_capture.py), one per id, with their read sentences."""
    seen: set[str] = set()
    out = []
    for q in json.loads(path.read_text()):
        if q["unanswerable"] or not q["read"] or q["id"] in seen:
            continue
        seen.add(q["id"])
        out.append((features(q["read"]), np.array([float(r["gold"]) for r in q["read"]]), str(q["pdf"])))
    return out
