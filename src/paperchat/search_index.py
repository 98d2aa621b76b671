"""The search index: BM25 (bm25s) over the store's chunks and a row-aligned copy of their vectors (exact
dense search in memory), built at ingest and persisted beside the store. Messages call it "the lexical
index" (its folder is `lexical/`), as they always did.

Consistency with the vector store: any writer first drops a DIRTY marker, changes Chroma, then rebuilds
this index and removes the marker. A reader that finds the marker (a killed ingest) rebuilds before use.
The index is written to a fresh folder and switched to with an atomic rename of the CURRENT pointer.
Every file here can be rebuilt from the store: one that does not load (garbled, truncated) makes `ensure`
rebuild the index, with a one-line notice on the `paperchat` logger.
"""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.store import VectorStore, date_int
from paperchat.text import Tokenizer

_log = logging.getLogger("paperchat")
# what loading a garbled or truncated snapshot raises (json, numpy, bm25s, a short or missing file)
LOAD_ERRORS = (ValueError, OSError, EOFError, KeyError, IndexError, TypeError, AttributeError, pickle.UnpicklingError)


def _is_chroma_error(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "chromadb"


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


class SearchIndex:
    """BM25 over every chunk of the store, persisted beside it, served as immutable snapshots.

    Thread-safe: one lock guards loading and rebuilding. While an ingest in this process is writing (from
    `mark_dirty` to the `rebuild` at its end) queries keep the last consistent snapshot instead of
    rebuilding per query; a DIRTY marker found at start (a killed ingest) makes the next `ensure` rebuild.
    """

    def __init__(self, root: Path, k1: float = 0.9, b: float = 0.6) -> None:
        self.root = root
        self.k1 = k1
        self.b = b
        self.tokenizer = Tokenizer()
        self._snap: SearchSnapshot | None = None
        self._lock = threading.RLock()
        self._writing = False

    # -- state on disk --------------------------------------------------------------------------

    @property
    def dirty_marker(self) -> Path:
        """Path of the DIRTY marker file."""
        return self.root / "DIRTY"

    def mark_dirty(self) -> None:
        """Create the DIRTY marker: the index no longer matches the store."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.dirty_marker.touch()
        self._writing = True

    def is_dirty(self) -> bool:
        """True when the DIRTY marker exists."""
        return self.dirty_marker.exists()

    def _current_dir(self) -> Path | None:
        pointer = self.root / "CURRENT"
        if not pointer.exists():
            return None
        path = self.root / pointer.read_text().strip()
        return path if path.is_dir() else None

    # -- build and load -------------------------------------------------------------------------

    def rebuild(self, store: VectorStore) -> SearchSnapshot:
        """Rebuild from every chunk in the store, switch to it atomically, clear the DIRTY marker.

        A Chroma error while reading the store (another process wrote meanwhile) is retried once on a
        freshly opened client."""
        with self._lock:
            try:
                return self._rebuild(store)
            except Exception as exc:
                if not _is_chroma_error(exc):
                    raise
                _log.warning(f"paperchat: reading the store failed ({type(exc).__name__}: {exc}); retrying")
                store.reload()
                return self._rebuild(store)

    def _rebuild(self, store: VectorStore) -> SearchSnapshot:
        import bm25s

        ids: list[str] = []
        tokens: list[list[str]] = []
        papers: list[str] = []
        dates: list[int] = []
        topics: dict[str, list[int]] = {}
        vectors: list[np.ndarray] = []
        for batch in store.iter_all(vectors=True):
            assert batch.vectors is not None
            vectors.append(batch.vectors)
            for c in batch.chunks:
                idx = len(ids)
                ids.append(c.id)
                tokens.append(self.tokenizer(c.text))
                papers.append(c.paper_id)
                dates.append(date_int(c.date))
                for slug in c.topics:
                    topics.setdefault(slug, []).append(idx)
        self.root.mkdir(parents=True, exist_ok=True)
        stamp = time.time_ns()
        name = f"idx-{stamp}"
        # built under another name and renamed when complete: a cleanup in another process (which deletes
        # idx-* folders it does not use) never takes a build that is still being written
        target = self.root / f"building-{stamp}-{os.getpid()}"
        target.mkdir()
        if ids:
            model = bm25s.BM25(k1=self.k1, b=self.b)
            model.index(tokens, show_progress=False)
            model.save(str(target / "bm25"), show_progress=False)
        np.save(target / "dates.npy", np.asarray(dates, dtype=np.int32))
        if ids:  # the store's vectors, row-aligned with ids: exact in-memory dense search over any scope
            np.save(target / "vectors.npy", np.concatenate(vectors))
        (target / "ids.json").write_text(json.dumps(ids))
        (target / "papers.json").write_text(json.dumps(papers))
        (target / "topics.json").write_text(json.dumps(topics))
        (target / "tokenizer.txt").write_text(Tokenizer.VERSION)
        os.rename(target, self.root / name)
        target = self.root / name
        snap = SearchSnapshot(target, self.tokenizer)
        tmp = self.root / f"CURRENT.tmp-{os.getpid()}"
        tmp.write_text(name)
        os.replace(tmp, self.root / "CURRENT")
        self.dirty_marker.unlink(missing_ok=True)
        self._writing = False
        self._snap = snap
        # older builds go; a snapshot loaded from one keeps working (its files are memory-mapped)
        for old in self.root.glob("idx-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        for old in self.root.glob("building-*"):  # left by a killed build an hour or more ago
            stamp_s = old.name.split("-")[1]
            if stamp_s.isdigit() and int(stamp_s) < time.time_ns() - 3600 * 10**9:
                shutil.rmtree(old, ignore_errors=True)
        return snap

    def _pointer(self) -> str | None:
        try:
            return (self.root / "CURRENT").read_text().strip()
        except OSError:
            return None

    def _current(self, snap: SearchSnapshot) -> bool:
        """A loaded snapshot is served while a writer here is at work, or while it is still the current build."""
        return self._writing or self._pointer() == snap.name

    def ensure(self, store: VectorStore) -> SearchSnapshot:
        """The current snapshot. Rebuilt first when there is none, when the one on disk is dirty, does not
        load (damaged files: a one-line notice) or is out of step with the store at load time; a newer
        build (from another process) is picked up by its pointer. Once loaded, a snapshot is served as is
        while any writer is at work, so queries never rebuild per query."""
        snap = self._snap
        if snap is not None and self._current(snap):
            return snap
        with self._lock:
            snap = self._snap
            if snap is not None and self._current(snap):
                return snap
            current = self._current_dir()
            if current is None:
                return self.rebuild(store)
            if snap is None and self.is_dirty():  # a killed writer left it: rebuild before first use
                return self.rebuild(store)
            try:
                new = SearchSnapshot(current, self.tokenizer)
            except FileNotFoundError:  # replaced by another process meanwhile
                return snap if snap is not None else self.rebuild(store)
            except LOAD_ERRORS as exc:
                _log.warning(f"paperchat: the lexical index {current} is damaged ({type(exc).__name__}: {exc}); rebuilding it from the store")
                return self.rebuild(store)
            stale = new.tokenizer_version != Tokenizer.VERSION or (new.vectors is None and new.ids)
            if snap is None and (len(new.ids) != store.count() or stale):
                return self.rebuild(store)  # out of step, or built by older code (tokens, no vectors)
            self._snap = new
            return new

    def load_problem(self, store: VectorStore) -> str | None:
        """What is wrong with the index on disk (for `paperchat doctor`), or None when it loads and holds
        exactly the store's chunk ids."""
        if self.is_dirty():
            return "the lexical index is marked dirty (an ingest was interrupted)"
        current = self._current_dir()
        if current is None:
            return "there is no lexical index"
        try:
            snap = SearchSnapshot(current, self.tokenizer)
        except LOAD_ERRORS as exc:
            return f"the lexical index {current.name} does not load ({type(exc).__name__}: {exc})"
        if snap.tokenizer_version != Tokenizer.VERSION:
            return "the lexical index was built by an older version"
        ids = set(store.all_ids())
        if set(snap.ids) != ids:
            return f"the lexical index holds {len(snap.ids)} chunks, the store {len(ids)} (different ids)"
        return None
