"""Hybrid retrieval inside a scope: dense (MiniLM through Chroma) + BM25 (bm25s), fused by weighted
reciprocal-rank fusion, then diversified across papers for topic questions.

Fusion weights and constants come from `RetrievalSettings`, tuned on SciFact's train claims
(`paperchat eval beir --tune`), never on its test claims. Inside a scope, BM25 weighs words by how rare
they are in that scope (`scope_idf`), and a question about one paper gives the dense ranking less weight
(`paper_dense_weight`): every chunk of one paper is about the same thing to MiniLM, while the words that
tell its pages apart are exact ones (names, numbers, settings).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from paperchat.lexical import LexicalSnapshot
from paperchat.library import Library
from paperchat.settings import RetrievalSettings
from paperchat.store import date_int, topic_key
from paperchat.types import Chunk, Hit, Scope


def chroma_where(scope: Scope) -> dict[str, Any] | None:
    """The Chroma metadata filter of a scope."""
    clauses: list[dict[str, Any]] = []
    if scope.kind == "topic" and scope.topic:
        clauses.append({topic_key(scope.topic): True})
    if scope.kind == "paper" and scope.paper_id:
        clauses.append({"paper_id": scope.paper_id})
    if scope.since:
        clauses.append({"date": {"$gte": date_int(scope.since)}})
    if scope.until:
        clauses.append({"date": {"$lte": date_int(scope.until)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def rrf(rankings: Sequence[tuple[Sequence[str], float]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: sum of weight / (k + rank) over the rankings (rank from 1)."""
    scores: dict[str, float] = {}
    for ids, weight in rankings:
        if weight <= 0:
            continue
        for rank, cid in enumerate(ids, start=1):
            scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
    return scores


def diversify(ranked: Sequence[str], paper_of: dict[str, str], max_per_paper: int) -> list[str]:
    """Keep the order, but let no paper hold more than `max_per_paper` slots before every paper had its turn."""
    counts: dict[str, int] = {}
    first, rest = [], []
    for cid in ranked:
        p = paper_of.get(cid, cid)
        if counts.get(p, 0) < max_per_paper:
            counts[p] = counts.get(p, 0) + 1
            first.append(cid)
        else:
            rest.append(cid)
    return first + rest


class Retriever:
    """Searches a Library. One instance per process: the embedder and the BM25 index stay loaded."""

    def __init__(self, library: Library, params: RetrievalSettings | None = None) -> None:
        self.lib = library
        self.params = params or library.settings.retrieval
        self.last_timings: dict[str, float] = {}

    def _cosine_from_store(self, cid: str, qv: np.ndarray) -> float | None:
        got = self.lib.store.collection.get(ids=[cid], include=["embeddings"])
        if got["embeddings"] is None or len(got["embeddings"]) == 0:
            return None
        return float(np.dot(np.asarray(got["embeddings"][0], dtype=np.float32), qv))

    def _dense_query(self, qv: np.ndarray, scope: Scope, lexical: Sequence[tuple[str, float]], lex: LexicalSnapshot) -> np.ndarray:
        """For topic questions, the query vector moved toward the mean vector of BM25's best chunks
        (pseudo-relevance feedback across the two rankings): the exact words of a broad question ("long-form
        video") pull MiniLM back when it drifts to the topic's general theme. Off for paper and all-store
        questions, where it did not help (SciFact train nDCG@10 0.882 -> 0.875)."""
        p = self.params
        if scope.kind != "topic" or p.feedback_chunks <= 0 or p.feedback_weight <= 0 or not lexical:
            return qv
        rows = [lex.pos[cid] for cid, _ in lexical[: p.feedback_chunks] if cid in lex.pos]
        if not rows:
            return qv
        moved = qv + p.feedback_weight * lex.vectors[rows].mean(axis=0)
        return moved / (np.linalg.norm(moved) or 1.0)

    def search(self, query: str, scope: Scope, k: int | None = None, mode: str = "hybrid") -> list[Hit]:
        """The top k chunks for the query inside the scope, best first, each with its scores.

        Args:
            query: the search text.
            scope: topic, paper or all, with an optional date window.
            k: how many hits (default `retrieval.k`).
            mode: 'hybrid', 'dense' or 'lexical' (the last two for benchmarks).
        """
        p = self.params
        k = k or p.k
        t0 = time.perf_counter()
        lex = self.lib.ready_lexical()
        qv = self.lib.embedder.embed_query(query)
        t1 = time.perf_counter()
        mask = lex.scope_mask(
            topic=scope.topic if scope.kind == "topic" else None,
            paper_id=scope.paper_id if scope.kind == "paper" else None,
            since=date_int(scope.since),
            until=date_int(scope.until),
        )
        in_memory = p.dense_backend == "memory" and lex.vectors is not None
        lexical: list[tuple[str, float]] = []
        if mode in ("hybrid", "lexical"):
            lexical = lex.search(query, p.candidates, mask, p.scope_idf)
        t2 = time.perf_counter()
        dense: list[tuple[str, float]] = []
        chunks: dict[str, Chunk] = {}
        if mode in ("hybrid", "dense"):
            if in_memory:  # exact cosine over the scope's rows of the snapshot's vectors
                dq = self._dense_query(qv, scope, lexical, lex) if mode == "hybrid" else qv
                dense = lex.dense(dq, p.candidates, mask)
                if dq is not qv:  # ranked by the moved query; the scores shown and used to abstain stay the question's
                    dense = [(cid, lex.cosine(cid, qv) or 0.0) for cid, _ in dense]
            else:  # Chroma's HNSW with a metadata filter
                n = min(p.candidates, max(1, self.lib.store.count()))
                found = self.lib.store.dense_search(qv, n, chroma_where(scope))
                dense = [(c.id, s) for c, s in found]
                chunks = {c.id: c for c, _ in found}
        t3 = time.perf_counter()
        dense_ids = [cid for cid, _ in dense]
        lex_ids = [cid for cid, _ in lexical]
        dense_weight = p.paper_dense_weight if scope.kind == "paper" else p.dense_weight
        fused = rrf([(dense_ids, dense_weight if mode != "lexical" else 0), (lex_ids, p.lexical_weight if mode != "dense" else 0)], p.rrf_k)
        ranked = sorted(fused, key=lambda c: -fused[c])
        dense_score = dict(dense)
        lex_score = dict(lexical)
        head = ranked[: max(k * 4, 20)]
        if scope.kind != "paper":
            papers = {cid: chunks[cid].paper_id if cid in chunks else lex.paper_of(cid) or cid for cid in head}
            head = diversify(head, papers, p.max_per_paper)
        if scope.kind == "paper" and p.max_per_page:
            # one paper: spread the slots over its pages (needs each candidate's page, so fetch them all)
            want = [cid for cid in head if cid not in chunks]
            if want:
                chunks.update(self.lib.store.get_chunks(want))
            head = diversify([c for c in head if c in chunks], {c: str(chunks[c].page) for c in head if c in chunks}, p.max_per_page)
        # text and metadata of the winners only, in one call (a chunk deleted since the snapshot drops out)
        want = [cid for cid in head[: k + 4] if cid not in chunks]
        if want:
            chunks.update(self.lib.store.get_chunks(want))
        head = [cid for cid in head if cid in chunks][:k]
        for cid in head:
            if cid not in dense_score:  # found by BM25 only: its cosine, for abstention and display
                cos = lex.cosine(cid, qv)
                if cos is None:
                    cos = self._cosine_from_store(cid, qv)
                dense_score[cid] = cos
        hits = [
            Hit(chunk=chunks[cid], score=fused[cid], dense=dense_score.get(cid), lexical=lex_score.get(cid), rank=i + 1)
            for i, cid in enumerate(head)
        ]
        t4 = time.perf_counter()
        self.last_timings = {
            "embed_query": (t1 - t0) * 1000,
            "lexical": (t2 - t1) * 1000,
            "dense": (t3 - t2) * 1000,
            "fuse": (t4 - t3) * 1000,
        }
        return hits


_PRONOUN = re.compile(r"\b(they|them|their|it|its|this|that|these|those|he|she|the paper|the method|the model|the authors|the approach)\b", re.I)
_STOP = frozenset("what which who whom how why when where does do did is are was were the a an of in on for to and or with by from it its they their this that these those about can could would should use used using paper papers".split())


def rewrite_followup(question: str, history: Sequence[str]) -> str:
    """Make a follow-up self-contained without an LLM: when it leans on earlier turns (pronouns, or
    fewer than four content words), add the content words of the previous question that it lacks."""
    if not history:
        return question
    words = [w for w in re.findall(r"[A-Za-z0-9][\w\-]*", question) if w.lower() not in _STOP]
    if not _PRONOUN.search(question) and len(words) >= 4:
        return question
    prev = history[-1]
    have = {w.lower() for w in words}
    extra = [w for w in re.findall(r"[A-Za-z0-9][\w\-]*", prev) if w.lower() not in _STOP and w.lower() not in have]
    extra = list(dict.fromkeys(extra))
    return f"{question.rstrip()} ({' '.join(extra)})" if extra else question


def as_langchain_retriever(retriever: Retriever, scope: Scope, k: int | None = None) -> Any:
    """The retriever as a LangChain `BaseRetriever` (for LangChain chains); documents carry our metadata."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class PaperchatRetriever(BaseRetriever):
        """paperchat's hybrid retriever inside one scope."""

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            return [
                Document(
                    page_content=h.chunk.text,
                    id=h.chunk.id,
                    metadata={"paper_id": h.chunk.paper_id, "page": h.chunk.page, "kind": h.chunk.kind, "score": h.score, "dense": h.dense, "lexical": h.lexical},
                )
                for h in retriever.search(query, scope, k)
            ]

    return PaperchatRetriever()
