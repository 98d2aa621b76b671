"""BEIR-style retrieval benchmark (SciFact): BM25 alone, dense alone and the hybrid, in one run.

Documents are embedded once and cached (by model id and corpus hash). Long abstracts are also embedded
as overlapping sentence windows (MiniLM reads only 256 word pieces) and a document's dense score is the
best of its whole-text and window scores. Fusion uses the same weighted reciprocal-rank fusion as the app
(`paperchat.retrieval.rrf`); its parameters are tuned with `tune()` on the train claims only.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.retrieval import rrf
from paperchat.settings import Settings
from paperchat.text import Tokenizer, split_sentences
from paperchat.types import Embedder


@dataclass
class BeirData:
    """A BEIR corpus: document ids and texts, queries and graded relevance judgements."""

    doc_ids: list[str]
    texts: list[str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_scifact(root: Path, split: str = "test") -> BeirData:
    """Corpus, claims and relevance judgements of one split ('test' = claims_dev + qrels_test, or 'train')."""
    doc_ids, texts = [], []
    for line in open(root / "corpus.jsonl", encoding="utf-8"):
        d = json.loads(line)
        doc_ids.append(str(d["doc_id"]))
        abstract = " ".join(d["abstract"]) if isinstance(d["abstract"], list) else str(d["abstract"])
        texts.append(f"{d['title']}. {abstract}")
    claims_file = "claims_dev.jsonl" if split == "test" else "claims_train.jsonl"
    qrels_file = "qrels_test.tsv" if split == "test" else "qrels_train.tsv"
    qrels: dict[str, dict[str, int]] = {}
    for i, line in enumerate(open(root / qrels_file, encoding="utf-8")):
        if i == 0:
            continue
        q, d, s = line.strip().split("\t")
        qrels.setdefault(q, {})[d] = int(s)
    queries = {}
    for line in open(root / claims_file, encoding="utf-8"):
        c = json.loads(line)
        if str(c["id"]) in qrels:
            queries[str(c["id"])] = c["claim"]
    return BeirData(doc_ids, texts, queries, qrels)


def windows(text: str, size: int = 3, min_words: int = 180) -> list[str]:
    """Overlapping windows of `size` sentences for texts longer than `min_words` words (else none)."""
    if len(text.split()) < min_words:
        return []
    sents = split_sentences(text)
    title = sents[0] if sents else ""
    return [f"{title} {' '.join(sents[i : i + size])}" for i in range(1, max(2, len(sents) - size + 1), 2)]


class DenseIndex:
    """Whole-document and window vectors of a corpus, cached on disk."""

    def __init__(self, embedder: Embedder, data: BeirData, cache_dir: Path, batch_size: int = 64) -> None:
        key = hashlib.sha256(("\n".join(data.texts) + embedder.id).encode()).hexdigest()[:16]
        path = cache_dir / f"beir-{key}.npz"
        win_texts, win_doc = [], []
        for i, t in enumerate(data.texts):
            for w in windows(t):
                win_texts.append(w)
                win_doc.append(i)
        if path.exists():
            z = np.load(path)
            self.doc_vecs, self.win_vecs = z["docs"], z["wins"]
        else:
            cache_dir.mkdir(parents=True, exist_ok=True)
            self.doc_vecs = embedder.embed(data.texts, batch_size)
            self.win_vecs = embedder.embed(win_texts, batch_size) if win_texts else np.zeros((0, embedder.dim), np.float32)
            np.savez(path, docs=self.doc_vecs, wins=self.win_vecs)
        self.win_doc = np.asarray(win_doc, dtype=np.int64)

    def scores(self, qv: np.ndarray, use_windows: bool = True) -> np.ndarray:
        """Cosine score of each document for a query vector (best of the document and its windows)."""
        s = self.doc_vecs @ qv
        if use_windows and len(self.win_doc):
            ws = self.win_vecs @ qv
            np.maximum.at(s, self.win_doc, ws)
        return s


def ndcg_at_k(ranked: Sequence[str], rel: dict[str, int], k: int = 10, exponential: bool = False) -> float:
    """nDCG@k with graded relevance: gain = the grade (BEIR's definition), or 2^grade - 1 (`exponential`, which
    weighs a grade-2 paper three times a grade-1 one)."""

    def gain(r: int) -> float:
        return 2.0**r - 1 if exponential else float(r)

    dcg = sum(gain(rel.get(d, 0)) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(gain(r) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def hybrid_ranking(lexical: Sequence[str], dense: Sequence[str], rrf_k: int, dense_weight: float, lexical_weight: float) -> list[str]:
    """The BM25 and dense rankings fused by weighted reciprocal-rank fusion, best first."""
    fused = rrf([(dense, dense_weight), (lexical, lexical_weight)], rrf_k)
    return sorted(fused, key=lambda d: -fused[d])


def recall_at_k(ranked: Sequence[str], rel: dict[str, int], k: int) -> float:
    """Share of the relevant documents among the first k ranked."""
    wanted = {d for d, r in rel.items() if r > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


class Bench:
    """BM25, dense and hybrid rankings over one BEIR corpus."""

    def __init__(self, data: BeirData, embedder: Embedder, cache_dir: Path, k1: float = 0.9, b: float = 0.6) -> None:
        import bm25s

        self.data = data
        self.tok = Tokenizer()
        self.bm25 = bm25s.BM25(k1=k1, b=b)
        self.bm25.index(self.tok.many(data.texts), show_progress=False)
        self.dense = DenseIndex(embedder, data, cache_dir)
        self.embedder = embedder
        self._qv: dict[str, np.ndarray] = {}

    def _query_vec(self, q: str) -> np.ndarray:
        if q not in self._qv:
            self._qv[q] = self.embedder.embed_query(q)
        return self._qv[q]

    def rankings(self, q: str, depth: int = 100, use_windows: bool = True) -> tuple[list[str], list[str]]:
        """BM25 and dense rankings of the corpus for one query."""
        toks = [t for t in self.tok(q) if t in self.bm25.vocab_dict]
        lex = self.bm25.get_scores(toks) if toks else np.zeros(len(self.data.doc_ids))
        den = self.dense.scores(self._query_vec(q), use_windows)
        li = np.argsort(-lex)[:depth]
        di = np.argsort(-den)[:depth]
        ids = self.data.doc_ids
        return [ids[i] for i in li if lex[i] > 0], [ids[i] for i in di]

    def evaluate(self, rrf_k: int = 60, dense_weight: float = 1.0, lexical_weight: float = 1.0, use_windows: bool = True) -> dict[str, dict[str, float]]:
        """nDCG@10 and recall@100 of the BM25, dense and hybrid rankings, averaged over the queries."""
        res: dict[str, list[tuple[float, float]]] = {"bm25": [], "dense": [], "hybrid": []}
        for qid, q in self.data.queries.items():
            rel = self.data.qrels[qid]
            lex, den = self.rankings(q, 100, use_windows)
            hyb = hybrid_ranking(lex, den, rrf_k, dense_weight, lexical_weight)
            for name, ranked in (("bm25", lex), ("dense", den), ("hybrid", hyb)):
                res[name].append((ndcg_at_k(ranked, rel), recall_at_k(ranked, rel, 100)))
        return {
            name: {"ndcg@10": round(float(np.mean([r[0] for r in rows])), 4), "recall@100": round(float(np.mean([r[1] for r in rows])), 4)}
            for name, rows in res.items()
        }


def tune(bench: Bench) -> dict[str, Any]:
    """Grid search of the fusion parameters on this bench's queries (call it with the TRAIN split)."""
    best: dict[str, Any] = {"ndcg@10": -1.0}
    for rrf_k in (10, 30, 60, 100):
        for dw in (0.6, 0.8, 1.0, 1.2, 1.5):
            for uw in (True, False):
                ndcg = bench.evaluate(rrf_k, dw, 1.0, uw)["hybrid"]["ndcg@10"]
                if ndcg > best["ndcg@10"]:
                    best = {"ndcg@10": ndcg, "rrf_k": rrf_k, "dense_weight": dw, "lexical_weight": 1.0, "use_windows": uw}
    return best


def scifact(settings: Settings, folder: Path, tune_first: bool = False) -> dict[str, Any]:
    """`paperchat eval beir`: BM25, dense and hybrid on the SciFact test claims with the settings' fusion,
    or with the fusion tuned on the train claims first (`tuned_on_train`)."""
    from paperchat.providers.embedders import get_embedder

    emb = get_embedder(settings)
    cache = settings.data_dir / "cache"
    p = settings.retrieval
    result: dict[str, Any] = {}
    if tune_first:
        result["tuned_on_train"] = tune(Bench(load_scifact(folder, "train"), emb, cache))
    test = Bench(load_scifact(folder, "test"), emb, cache)
    params = result.get("tuned_on_train") or {"rrf_k": p.rrf_k, "dense_weight": p.dense_weight, "lexical_weight": p.lexical_weight, "use_windows": True}
    result["test"] = test.evaluate(int(params["rrf_k"]), float(params["dense_weight"]), float(params["lexical_weight"]), bool(params.get("use_windows", True)))
    result["params"] = params
    result["queries"] = len(test.data.queries)
    return result
