"""The cell picker: which candidate sentence answers a table column, learned from cells written by reading.

The sentence reader (models/reader-sentence) was trained on specific questions ("which learning rate ..."); a
column's question is generic ("Which datasets are used?") and the reader alone picks the right sentence for
about one cell in nine. The cell picker adds what a column is: for each preset column, a prototype (the mean
MiniLM vector of the training cells' evidence sentences), and a logistic regression over
- the reader's logit for (column question, sentence) with its neighbours,
- the cosine of the sentence to the column's question and to the column's prototype,
- where the sentence is (abstract, page 1, relative page) and what it holds (a number, a URL),
trained on eval/table_train.jsonl (34 papers: 7 PDFs and 27 abstracts, none of the evaluation's 24). A
candidate is positive when it is one of the cell's evidence sentences (half of its content words on a gold
page) or holds the gold value. The cell's best candidate below `not_stated_below` (chosen on the training
cells) makes the cell "not stated".

`python -m paperchat.table_model --data ../shared/data` trains and writes models/table-cells/model.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from paperchat.errors import InputError
from paperchat.settings import PROJECT_ROOT

if TYPE_CHECKING:
    from paperchat.table import Column, TableBuilder

MODEL_DIR = PROJECT_ROOT / "models" / "table-cells"
FEATURES = ["reader", "cos_question", "cos_prototype", "abstract", "first_page", "page_frac", "number", "url", "length", "position", "lead"]
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from in is it its of on or the this that to was were with we our".split())
_URL = re.compile(r"https?://|github|\.com\b|\.org\b|available at|publicly available|release", re.I)
_NUM = re.compile(r"\d")


def letters_and_digits(text: str) -> str:
    """Lower-case letters and digits only (NFKC first: ligatures and wide forms become letters), to compare quotes."""
    return "".join(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def _words(text: str) -> set[str]:
    return set(_WORD.findall(unicodedata.normalize("NFKC", text).lower())) - _STOP


def answers(text: str, page: int | None, gold: dict[str, Any]) -> bool:
    """Whether a candidate sentence is a gold cell's answer: it holds the gold value (or an alias), or it is one
    of the evidence sentences (half of its content words or more, on a gold page or in the abstract)."""
    if gold.get("not_stated"):
        return False
    q = letters_and_digits(text)
    if any(letters_and_digits(v) and letters_and_digits(v) in q for v in [gold.get("gold_answer", ""), *gold.get("answer_aliases", [])]):
        return True
    pages = gold.get("gold_pages") or []
    for ev in gold.get("evidence", []):
        w = _words(ev)
        if w and len(w & _words(text)) / len(w) >= 0.5 and (not pages or page is None or page in pages):
            return True
    return False


@dataclass
class CellModel:
    """Prototypes per column name, the logistic regression's weights, and the not-stated threshold."""

    prototypes: dict[str, np.ndarray]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    not_stated_below: float

    def features(self, column: Column, texts: list[str], pages: list[int | None], reader: np.ndarray, vectors: np.ndarray, qvec: np.ndarray, n_pages: int,
                 positions: list[int] | None = None) -> np.ndarray:
        """One row of FEATURES per candidate (vectors and qvec unit-length; positions: each sentence's index in its
        chunk, the abstract's title being 0)."""
        pos = positions if positions is not None else [5] * len(texts)
        proto = self.prototypes.get(column.name)
        cos_p = vectors @ proto if proto is not None else np.zeros(len(texts), dtype=np.float32)
        rows = [
            [float(reader[i]), float(vectors[i] @ qvec), float(cos_p[i]), float(p is None), float(p == 1),
             (p or 0) / max(n_pages, 1), float(bool(_NUM.search(t))), float(bool(_URL.search(t))), min(len(t), 400) / 400,
             min(pos[i], 20) / 20, float(pos[i] <= 1)]
            for i, (t, p) in enumerate(zip(texts, pages, strict=True))
        ]
        return np.asarray(rows, dtype=np.float32)

    def score(self, x: np.ndarray) -> np.ndarray:
        """The logistic regression's logit per row."""
        return ((x - self.mean) / self.scale) @ self.coef + self.bias

    def save(self, folder: Path, meta: dict[str, Any]) -> None:
        """model.json (weights) and training.json (what it was trained on, with its numbers)."""
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "features": FEATURES, "prototypes": {k: v.round(6).tolist() for k, v in self.prototypes.items()},
            "mean": self.mean.tolist(), "scale": self.scale.tolist(), "coef": self.coef.tolist(), "bias": self.bias,
            "not_stated_below": self.not_stated_below,
        }
        (folder / "model.json").write_text(json.dumps(data))
        (folder / "training.json").write_text(json.dumps(meta, indent=1))

    @classmethod
    def load(cls, folder: Path = MODEL_DIR) -> CellModel | None:
        """The trained model, or None when it is not there (the reader alone picks then)."""
        path = folder / "model.json"
        if not path.exists():
            return None
        d = json.loads(path.read_text())
        if d.get("features") != FEATURES:
            return None
        return cls({k: np.asarray(v, dtype=np.float32) for k, v in d["prototypes"].items()}, np.asarray(d["mean"], dtype=np.float32),
                   np.asarray(d["scale"], dtype=np.float32), np.asarray(d["coef"], dtype=np.float32), float(d["bias"]), float(d["not_stated_below"]))


def candidate_rows(builder: TableBuilder, paper_id: str, column: Column, read_top: int | None = None) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray]:
    """A cell's candidates with what the features need: (candidates, reader logits, unit vectors, unit question
    vector). With `read_top`, only that many candidates, those the model ranks best without the reader (its
    logit set to the training mean), are read by the reader (it is most of a cell's time); the rest are dropped."""
    from paperchat.answering.select import neighbours_of

    cands = builder.candidates(paper_id, column)
    if not cands:
        return [], np.zeros(0), np.zeros((0, 1)), np.zeros(1)
    assert builder.reader is not None
    v = builder.vectors([column.question] + [c.text for c in cands])
    vecs, qvec = v[1:], v[0]
    model = builder.cell_model
    if read_top is not None and model is not None and len(cands) > read_top:
        guess = np.full(len(cands), float(model.mean[0]), dtype=np.float32)
        pre = model.score(model.features(column, [c.text for c in cands], [c.page for c in cands], guess, vecs, qvec,
                                         page_count(builder, paper_id), [c.position for c in cands]))
        keep = sorted(np.argsort(-pre)[:read_top].tolist())
        ctx = [neighbours_of(cands, i) for i in keep]
        cands, vecs = [cands[i] for i in keep], vecs[keep]
    else:
        ctx = [neighbours_of(cands, i) for i in range(len(cands))]
    reader = builder.reader(column.question, [c.text for c in cands], ctx)
    return cands, np.asarray(reader, dtype=np.float32), vecs, qvec


def page_count(builder: TableBuilder, paper_id: str) -> int:
    """The last page any stored chunk of the paper comes from (1 for an abstract); kept per builder."""
    if paper_id not in builder.pages:
        lib = builder.core.library
        pages = [c.page for c in lib.store.get_chunks(lib.store.ids_of_paper(paper_id, "pdf")).values() if c.page]
        builder.pages[paper_id] = max(pages, default=1)
    return builder.pages[paper_id]


def train(builder: TableBuilder, gold: list[dict[str, Any]], c: float = 1.0) -> tuple[CellModel, dict[str, Any]]:
    """Fit prototypes and the regression on gold cells (their papers must be in the library)."""
    from sklearn.linear_model import LogisticRegression

    from paperchat.table import column_of

    protos: dict[str, list[np.ndarray]] = {}
    groups = []
    for g in gold:
        col = column_of(g["column"])
        cands, reader, vecs, qvec = candidate_rows(builder, g["paper_id"], col)
        labels = np.asarray([answers(x.text, x.page, g) for x in cands], dtype=bool)
        if labels.any():
            protos.setdefault(col.name, []).extend(vecs[labels])
        groups.append((g, col, cands, reader, vecs, qvec, labels, page_count(builder, g["paper_id"])))
    prototypes = {k: (m := np.mean(v, axis=0)) / max(float(np.linalg.norm(m)), 1e-12) for k, v in protos.items()}
    blank = CellModel(prototypes, np.zeros(len(FEATURES), np.float32), np.ones(len(FEATURES), np.float32), np.zeros(len(FEATURES), np.float32), 0.0, 0.0)
    xs, ys = [], []
    for _g, col, cands, reader, vecs, qvec, labels, n_pages in groups:
        if len(cands):
            xs.append(blank.features(col, [x.text for x in cands], [x.page for x in cands], reader, vecs, qvec, n_pages, [x.position for x in cands]))
            ys.append(labels)
    x, y = np.concatenate(xs), np.concatenate(ys)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    clf = LogisticRegression(C=c, class_weight="balanced", max_iter=500).fit((x - mean) / scale, y)
    model = CellModel(prototypes, mean.astype(np.float32), scale.astype(np.float32), clf.coef_[0].astype(np.float32), float(clf.intercept_[0]), 0.0)
    # the not-stated threshold: the best candidate's logit that separates stated from not-stated training cells
    tops, stated = [], []
    for g, col, cands, reader, vecs, qvec, _labels, n_pages in groups:
        s = model.score(model.features(col, [x.text for x in cands], [x.page for x in cands], reader, vecs, qvec, n_pages, [x.position for x in cands])) if len(cands) else np.asarray([-99.0])
        tops.append(float(s.max()))
        stated.append(not g["not_stated"])
    best_t, best_acc = 0.0, -1.0
    for t in sorted(set(np.round(tops, 3))):
        acc = float(np.mean([(tp >= t) == st for tp, st in zip(tops, stated, strict=True)]))
        if acc > best_acc:
            best_t, best_acc = float(t), acc
    model.not_stated_below = best_t
    meta = {
        "cells": len(gold), "candidates": int(len(y)), "positives": int(y.sum()), "C": c,
        "coef": dict(zip(FEATURES, [round(float(v), 3) for v in model.coef], strict=True)),
        "not_stated_below": best_t, "train_stated_vs_not_accuracy": round(best_acc, 3),
    }
    return model, meta


ABSTRACTS = "abstracts/arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl"


def read_gold(path: Path) -> list[dict[str, Any]]:
    """The gold cells (one JSON object a line).

    Raises:
        InputError: a line is not JSON or lacks a field.
    """
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            for k in ("id", "paper_id", "source", "column", "question", "not_stated"):
                row[k]  # noqa: B018 - presence check
        except (ValueError, KeyError) as exc:
            raise InputError(f"{path}:{n} is not a gold cell ({exc})", "see eval/table_gold.jsonl for the format") from exc
        out.append(row)
    return out


def ingest_gold_papers(core: Any, gold: list[dict[str, Any]], data: Path) -> None:
    """Ingest the gold's PDFs (with their metadata.json) and abstract records that the library lacks."""
    from paperchat.ingestion.records import read_records

    pdfs = sorted({data / "pdfs" / r["pdf"] for r in gold if r["source"] == "pdf"})
    want = {r["paper_id"] for r in gold if r["source"] == "abstract"}
    have = set(core.library.catalog.get_many([r["paper_id"] for r in gold]))
    if pdfs:  # a PDF already stored is skipped by its hash
        rep = core.ingest_pdfs(pdfs)
        if rep.failed:
            raise InputError(f"{len(rep.failed)} gold PDFs could not be ingested: {rep.failed[0]}", "check --data")
    missing = want - have
    if missing:
        recs = [p for p in read_records(data / ABSTRACTS) if getattr(p, "id", None) in missing]
        core.ingest_papers(recs)


def main(argv: list[str] | None = None) -> int:
    """Train on eval/table_train.jsonl (ingesting its papers from --data into the data folder) and save."""
    from paperchat.assistant import Assistant
    from paperchat.settings import Settings
    from paperchat.table import TableBuilder

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="folder with pdfs/ and abstracts/")
    p.add_argument("--train", default=str(PROJECT_ROOT / "eval" / "table_train.jsonl"))
    p.add_argument("--out", default=str(MODEL_DIR))
    p.add_argument("--C", type=float, default=1.0)
    args = p.parse_args(argv)
    core = Assistant(Settings())
    gold = read_gold(Path(args.train))
    ingest_gold_papers(core, gold, Path(args.data))
    builder = TableBuilder(core, cell_model=False)
    model, meta = train(builder, gold, args.C)
    meta["train_file"] = Path(args.train).name
    model.save(Path(args.out), meta)
    print(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
