"""Train the paper reranker: a cross-encoder fine-tuned from all-MiniLM-L6-v2 that reads (question or claim,
title + abstract) and scores relevance, trained on SciFact's train claims and evaluated on its test claims only.

    python -m paperchat.evaluation.rerank --scifact ../shared/data/scifact --out models/reranker-paper

Each train claim is a group: one of its relevant abstracts and hard negatives from the hybrid's top 30 (BM25 +
MiniLM, the app's fusion) that are not relevant, plus the "none of them" option at logit 0 (as the sentence
reader). The mix of the reranker's logit with the hybrid's rank is chosen on a tenth of the train claims held out
of training; the test claims are scored once, at the end: hybrid and reranked nDCG@10 in the same run.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.evaluation.beir import Bench, load_scifact, ndcg_at_k
from paperchat.reader.data import Group
from paperchat.retrieval import rrf

DEPTH = 30  # the hybrid's top papers the reranker reads


def hybrid(bench: Bench, q: str, params: dict[str, Any]) -> list[str]:
    """The hybrid ranking of one query (the app's weighted RRF)."""
    lex, den = bench.rankings(q, 100, bool(params.get("use_windows", True)))
    fused = rrf([(den, float(params["dense_weight"])), (lex, float(params["lexical_weight"]))], int(params["rrf_k"]))
    return sorted(fused, key=lambda d: -fused[d])


def groups(bench: Bench, params: dict[str, Any], qids: Sequence[str], seed: int) -> list[Group]:
    """One group per claim: its candidates are the hybrid's top DEPTH with the relevant ones put in when missed."""
    texts = dict(zip(bench.data.doc_ids, bench.data.texts, strict=True))
    rng = random.Random(seed)
    out = []
    for qid in qids:
        q, rel = bench.data.queries[qid], bench.data.qrels[qid]
        ranked = hybrid(bench, q, params)[:DEPTH]
        positives = [d for d in rel if rel[d] > 0]
        if not positives:
            continue
        pos = rng.choice(positives)
        cands = [d for d in ranked if d not in rel] + [pos]
        rng.shuffle(cands)
        out.append(Group(qid, f"claim:{qid}", q, tuple(texts[d] for d in cands), ("",) * len(cands), cands.index(pos)))
    return out


def rerank(score: Any, bench: Bench, params: dict[str, Any], qids: Sequence[str], mixes: Sequence[float]) -> dict[float, float]:
    """nDCG@10 of the hybrid reordered by logit + mix x (hybrid prior: 1 / rank), for each mix (0 = logit alone);
    key -1.0 is the hybrid itself."""
    texts = dict(zip(bench.data.doc_ids, bench.data.texts, strict=True))
    res: dict[float, list[float]] = {m: [] for m in (-1.0, *mixes)}
    for qid in qids:
        q, rel = bench.data.queries[qid], bench.data.qrels[qid]
        ranked = hybrid(bench, q, params)
        head, tail = ranked[:DEPTH], ranked[DEPTH:]
        logits = score(q, [texts[d] for d in head])
        res[-1.0].append(ndcg_at_k(ranked, rel))
        for m in mixes:
            order = sorted(range(len(head)), key=lambda i: -(float(logits[i]) + m * 10.0 / (i + 1)))
            res[m].append(ndcg_at_k([head[i] for i in order] + tail, rel))
    return {m: round(float(np.mean(v)), 4) for m, v in res.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """The training command (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m paperchat.evaluation.rerank", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scifact", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--out", type=Path, default=Path("models/reranker-paper"))
    ap.add_argument("--cache", type=Path, default=Path(".paperchat/cache"))
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--group-size", type=int, default=6)
    ap.add_argument("--batch-groups", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=35)
    args = ap.parse_args(argv)
    import torch

    from paperchat.providers.embedders import get_embedder
    from paperchat.reader.model import SentenceReader
    from paperchat.reader.train import export, train
    from paperchat.settings import Settings

    torch.set_num_threads(2)
    settings = Settings()
    emb = get_embedder(settings)
    p = settings.retrieval
    params = {"rrf_k": p.rrf_k, "dense_weight": p.dense_weight, "lexical_weight": p.lexical_weight, "use_windows": True}
    train_bench = Bench(load_scifact(args.scifact, "train"), emb, args.cache)
    qids = sorted(train_bench.data.queries)
    random.Random(args.seed).shuffle(qids)
    held = qids[: len(qids) // 10]
    fit = qids[len(qids) // 10 :]
    t0 = time.perf_counter()
    model, tok = train(groups(train_bench, params, fit, args.seed), args.epochs, args.group_size, args.batch_groups, args.lr, args.seed)
    took = time.perf_counter() - t0
    _, int8 = export(model, tok, args.out)
    (args.out / "model-fp32.onnx").unlink(missing_ok=True)
    reader = SentenceReader(args.out, check=False)
    mixes = (0.0, 0.5, 1.0, 2.0, 4.0)
    on_held = rerank(reader.score, train_bench, params, held, mixes)
    best = max(mixes, key=lambda m: on_held[m])
    print(f"held-out train claims ({len(held)}): {json.dumps(on_held)}; mix chosen {best}")
    test_bench = Bench(load_scifact(args.scifact, "test"), emb, args.cache)
    on_test = rerank(reader.score, test_bench, params, sorted(test_bench.data.queries), (best,))
    print(f"SciFact test ({len(test_bench.data.queries)} claims): hybrid nDCG@10 {on_test[-1.0]}, reranked {on_test[best]}")
    record = {"args": {k: str(v) for k, v in vars(args).items()}, "train_claims": len(fit), "held_claims": len(held), "train_seconds": round(took),
              "held_out_train": on_held, "mix": best, "test": {"hybrid_ndcg@10": on_test[-1.0], "reranked_ndcg@10": on_test[best]}}
    (args.out / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
