"""Train the cell picker (models/table-cells/model.json) on eval/table_train.jsonl, written by reading.

`python -m paperchat.tables.train --data ../shared/data` ingests the training papers into the data folder,
reads every candidate sentence of every training cell, fits the column prototypes and the regression, and
chooses the not-stated threshold on the training cells. It builds on the facade (it ingests papers), so it
stands above it, as an evaluation command does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.assistant import Assistant
from paperchat.errors import InputError
from paperchat.ingestion.records import read_records
from paperchat.settings import PROJECT_ROOT, Settings
from paperchat.tables.builder import TableBuilder, candidate_rows, page_count
from paperchat.tables.cells import FEATURES, MODEL_DIR, CellModel, answers
from paperchat.tables.columns import column_of


def train(builder: TableBuilder, gold: list[dict[str, Any]], c: float = 1.0) -> tuple[CellModel, dict[str, Any]]:
    """Fit prototypes and the regression on gold cells (their papers must be in the library)."""
    from sklearn.linear_model import LogisticRegression

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
        s = (
            model.score(model.features(col, [x.text for x in cands], [x.page for x in cands], reader, vecs, qvec, n_pages, [x.position for x in cands]))
            if len(cands) else np.asarray([-99.0])
        )
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


def ingest_gold_papers(core: Assistant, gold: list[dict[str, Any]], data: Path) -> None:
    """Ingest the gold's PDFs (with their metadata.json) and abstract records that the library lacks."""
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
