"""One built search index, loaded: BM25 (bm25s) over the store's chunks and a row-aligned copy of their
vectors (exact dense search in memory), with the masks a scope is made of. Never changes after loading."""

from __future__ import annotations

import json
import logging
import math
import pickle
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.text import Tokenizer

_log = logging.getLogger("paperchat")
# what loading a garbled or truncated snapshot raises (json, numpy, bm25s, a short or missing file)
LOAD_ERRORS = (ValueError, OSError, EOFError, KeyError, IndexError, TypeError, AttributeError, pickle.UnpicklingError)


class SearchSnapshot:
    """One built index, loaded: never changes after loading, so a query sees consistent arrays even while
    another thread swaps in a newer snapshot."""

    def __init__(self, path: Path, tokenizer: Tokenizer) -> None:
        import bm25s

        self.name = path.name
        self.tokenizer = tokenizer
        version = path / "tokenizer.txt"
        self.tokenizer_version = version.read_text().strip() if version.exists() else "1"
        self.ids: list[str] = json.loads((path / "ids.json").read_text())
        self.paper_ids = np.asarray(json.loads((path / "papers.json").read_text()), dtype=object)
        self.dates = np.load(path / "dates.npy")
        n = len(self.ids)
        self.topic_masks: dict[str, np.ndarray] = {}
        for slug, idxs in json.loads((path / "topics.json").read_text()).items():
            mask = np.zeros(n, dtype=bool)
            mask[np.asarray(idxs, dtype=np.int64)] = True
            self.topic_masks[slug] = mask
        by_paper: dict[str, list[int]] = {}
        for i, pid in enumerate(self.paper_ids):
            by_paper.setdefault(pid, []).append(i)
        self._by_paper = {k: np.asarray(v, dtype=np.int64) for k, v in by_paper.items()}
        self._model: Any = bm25s.BM25.load(str(path / "bm25"), mmap=True, show_progress=False) if n else None
        vec_path = path / "vectors.npy"
        self.vectors: np.ndarray | None = np.load(vec_path) if vec_path.exists() else None
        self.pos: dict[str, int] = {cid: i for i, cid in enumerate(self.ids)}
        self._check(n)

    def _check(self, n: int) -> None:
        """Every part must describe the same n chunks (a file cut short may still parse)."""
        if not all(isinstance(i, str) for i in self.ids) or len(self.pos) != n:
            raise ValueError("ids.json does not list distinct chunk ids")
        sizes = {"papers.json": len(self.paper_ids), "dates.npy": len(self.dates)}
        if self.vectors is not None:
            sizes["vectors.npy"] = int(self.vectors.shape[0])
        if self._model is not None:
            sizes["bm25"] = int(self._model.scores.get("num_docs", n))
            if len(self._model.scores["indptr"]) not in (len(self._model.vocab_dict), len(self._model.vocab_dict) + 1):
                raise ValueError("the BM25 vocabulary and its posting lists disagree")
        bad = [f"{k} ({v})" for k, v in sizes.items() if v != n]
        if bad:
            raise ValueError(f"{', '.join(bad)} out of step with ids.json ({n})")

    def dense(self, query_vector: np.ndarray, n: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Exact nearest chunks by cosine (the vectors are normalised) inside the mask, best first."""
        if self.vectors is None or not self.ids:
            return []
        if mask is None:
            rows = None
            scores = self.vectors @ query_vector
        else:
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                return []
            scores = self.vectors[rows] @ query_vector
        n = min(n, scores.shape[0])
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        idx = top if rows is None else rows[top]
        return [(self.ids[i], float(scores[t])) for i, t in zip(idx, top, strict=True)]

    def paper_of(self, cid: str) -> str | None:
        """The paper id of a chunk, or None when the chunk is unknown."""
        i = self.pos.get(cid)
        return None if i is None else str(self.paper_ids[i])

    def cosine(self, cid: str, query_vector: np.ndarray) -> float | None:
        """Cosine of a chunk's vector with the query vector, or None when unavailable."""
        i = self.pos.get(cid)
        if i is None or self.vectors is None:
            return None
        return float(self.vectors[i] @ query_vector)

    # -- search ---------------------------------------------------------------------------------

    def scope_mask(
        self, topic: str | None = None, paper_id: str | None = None, since: int = 0, until: int = 0,
        paper_ids: Iterable[str] | None = None,
    ) -> np.ndarray | None:
        """Boolean mask of chunks inside a scope (None means every chunk); `paper_ids`: only these papers' chunks
        (a collection)."""
        mask: np.ndarray | None = None
        if paper_ids is not None:
            mask = np.zeros(len(self.ids), dtype=bool)
            for pid in paper_ids:
                idxs = self._by_paper.get(pid)
                if idxs is not None:
                    mask[idxs] = True
        if paper_id is not None:
            mask = np.zeros(len(self.ids), dtype=bool)
            idxs = self._by_paper.get(paper_id)
            if idxs is not None:
                mask[idxs] = True
        if topic is not None:
            tmask = self.topic_masks.get(topic, np.zeros(len(self.ids), dtype=bool))
            mask = tmask if mask is None else mask & tmask
        if since or until:
            dmask = np.ones(len(self.ids), dtype=bool)
            if since:
                dmask &= self.dates >= since
            if until:
                dmask &= self.dates <= until
            mask = dmask if mask is None else mask & dmask
        return mask

    def scores(self, query: str, idf_mask: np.ndarray | None = None, scope_idf: float = 0.0) -> np.ndarray | None:
        """BM25 score of every chunk (None when no query word is in the vocabulary); `idf_mask` and
        `scope_idf` weigh the terms as `search` does."""
        if self._model is None or not self.ids:
            return None
        q = [t for t in self.tokenizer(query) if t in self._model.vocab_dict]
        if not q:
            return None
        if scope_idf > 0 and idf_mask is not None:
            return self._scope_scores(q, idf_mask, scope_idf)
        return np.asarray(self._model.get_scores(q), dtype=np.float32)

    def search(self, query: str, n: int, mask: np.ndarray | None = None, scope_idf: float = 0.0) -> list[tuple[str, float]]:
        """Top n (chunk id, BM25 score) inside the mask; chunks with score 0 are left out.

        `scope_idf` > 0 reweights each query term by (its IDF inside the mask / its IDF over the whole
        index) ** scope_idf: BM25 as if the scope were the collection, so a word that every chunk of a
        topic or of one paper shares ("agents" in RL for LLM Agents) stops outweighing the distinctive ones.
        """
        if self._model is None or not self.ids:
            return []
        q = [t for t in self.tokenizer(query) if t in self._model.vocab_dict]
        if not q:
            return []
        if scope_idf > 0 and mask is not None:
            scores = self._scope_scores(q, mask, scope_idf)
        else:
            scores = self._model.get_scores(q)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        n = min(n, len(scores))
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[i], float(scores[i])) for i in top if scores[i] > 0]

    def weighted_scores(self, weights: dict[str, float], idf_mask: np.ndarray | None = None, scope_idf: float = 0.0) -> np.ndarray:
        """BM25 of every chunk for a query given as stemmed token -> weight (expanded queries), with the
        scope's term weighting of `search` when `idf_mask` and `scope_idf` are given."""
        total = np.zeros(len(self.ids), dtype=np.float32)
        if self._model is None:
            return total
        sc = self._model.scores
        indptr, indices, data = sc["indptr"], sc["indices"], sc["data"]
        n_all = len(self.ids)
        n_scope = int(idf_mask.sum()) if idf_mask is not None else n_all
        for term, w in weights.items():
            t = self._model.vocab_dict.get(term)
            if t is None or w <= 0:
                continue
            docs = np.asarray(indices[indptr[t] : indptr[t + 1]])
            if docs.size == 0:
                continue
            if scope_idf > 0 and idf_mask is not None:
                idf_all = math.log(1 + (n_all - docs.size + 0.5) / (docs.size + 0.5))
                df_scope = int(np.count_nonzero(idf_mask[docs]))
                idf_scope = math.log(1 + (n_scope - df_scope + 0.5) / (df_scope + 0.5))
                w = w * (idf_scope / idf_all) ** scope_idf if idf_all > 0 else w
            total[docs] += np.asarray(data[indptr[t] : indptr[t + 1]]) * w
        return total

    def idf(self, term: str) -> float:
        """The store-wide BM25 IDF of a stemmed token (0 when unknown)."""
        if self._model is None:
            return 0.0
        t = self._model.vocab_dict.get(term)
        if t is None:
            return 0.0
        sc = self._model.scores
        df = int(sc["indptr"][t + 1] - sc["indptr"][t])
        return math.log(1 + (len(self.ids) - df + 0.5) / (df + 0.5))

    def _scope_scores(self, q: Sequence[str], mask: np.ndarray, power: float) -> np.ndarray:
        """BM25 with each term's weight scaled by its scoped IDF, read straight from bm25s's posting lists
        (the chunk ids and precomputed scores of each term: no pass over every chunk per term)."""
        sc = self._model.scores
        indptr, indices, data = sc["indptr"], sc["indices"], sc["data"]
        n_all, n_scope = len(self.ids), int(mask.sum())
        total = np.zeros(n_all, dtype=np.float32)
        for term, times in Counter(q).items():
            t = self._model.vocab_dict[term]
            docs = np.asarray(indices[indptr[t] : indptr[t + 1]])
            if docs.size == 0:
                continue
            idf_all = math.log(1 + (n_all - docs.size + 0.5) / (docs.size + 0.5))
            df_scope = int(np.count_nonzero(mask[docs]))
            idf_scope = math.log(1 + (n_scope - df_scope + 0.5) / (df_scope + 0.5))
            weight = times * (idf_scope / idf_all) ** power if idf_all > 0 else times
            total[docs] += np.asarray(data[indptr[t] : indptr[t + 1]]) * weight  # a posting list names each chunk once
        return total
