"""Hybrid retrieval inside a scope: dense (MiniLM through Chroma) + BM25 (bm25s), fused by weighted
reciprocal-rank fusion, then diversified across papers for topic questions.

Fusion weights and constants come from `RetrievalSettings`, tuned on SciFact's train claims
(`paperchat eval beir --tune`), never on its test claims. Inside a scope, BM25 weighs words by how rare
they are in that scope (`scope_idf`), and a question about one paper gives the dense ranking less weight
(`paper_dense_weight`): every chunk of one paper is about the same thing to MiniLM, while the words that
tell its pages apart are exact ones (names, numbers, settings).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.catalog import Catalog
from paperchat.fields import SentenceWindows, TitleField
from paperchat.fusion import diversify, rerank_fusion, rrf, soft_ranks
from paperchat.library import Library
from paperchat.query import aspects
from paperchat.reader.model import paper_reranker
from paperchat.search_index import SearchSnapshot
from paperchat.settings import RetrievalSettings
from paperchat.store import VectorStore, date_int
from paperchat.types import Chunk, Embedder, Hit, Scope


class Retriever:
    """Searches the search index, the store and the catalogue of a library. One instance per process: the
    embedder and the index stay loaded.

    Args:
        index: returns the current search snapshot (consistent with the store).
        embedder: embeds the query.
        store: the chunks' texts (the winners only), and dense search when `dense_backend` is "chroma".
        catalog: titles, collections, tags and learned topic members.
        cache_dir: where the title field of a snapshot is kept between processes.
        params: the retrieval knobs.
        reranker: our paper reranker, (question, title + abstract texts) -> one logit each (None: the fused order).
    """

    def __init__(self, index: Callable[[], SearchSnapshot], embedder: Embedder, store: VectorStore, catalog: Catalog, cache_dir: Path,
                 params: RetrievalSettings, reranker: Callable[[str, Sequence[str]], np.ndarray] | None = None) -> None:
        self.index, self.embedder, self.store, self.catalog, self.cache_dir = index, embedder, store, catalog, cache_dir
        self.params = params
        self.reranker = reranker
        self.last_timings: dict[str, float] = {}
        self._windows: dict[tuple[str, str], SentenceWindows] = {}
        self._near: dict[tuple[str, str, float], np.ndarray] = {}
        self._titles: TitleField | None = None

    @classmethod
    def of(cls, library: Library, params: RetrievalSettings | None = None, rerank: bool = True) -> Retriever:
        """A retriever over an open library's parts (`rerank` False: without the paper reranker, the fused order)."""
        return cls(library.ready_index, library.embedder, library.store, library.catalog, library.settings.data_dir / "cache",
                   params or library.settings.retrieval, paper_reranker(library.settings) if rerank else None)

    def _title_field(self, lex: SearchSnapshot) -> TitleField:
        """The title field of this snapshot: from memory, else from data_dir/cache (a cold CLI start then
        skips the one-second build), else built from the catalogue and saved there."""
        if self._titles is None or self._titles.name != lex.name:
            path = self.cache_dir / f"titles-{lex.name}.npz"
            field = TitleField.load(path, lex) if path.exists() else None
            if field is None:
                field = TitleField(lex, self.catalog.titles())
                try:
                    field.save(path)
                except OSError:  # a read-only data folder: build it again next time
                    pass
            self._titles = field
        return self._titles

    def _cosine_from_store(self, cid: str, qv: np.ndarray) -> float | None:
        v = self.store.vector(cid)
        return None if v is None else float(np.dot(v, qv))

    def _dense_query(self, qv: np.ndarray, scope: Scope, lexical: Sequence[tuple[str, float]], lex: SearchSnapshot) -> np.ndarray:
        """For topic questions, the query vector moved toward the mean vector of BM25's best chunks
        (pseudo-relevance feedback across the two rankings): the exact words of a broad question ("long-form
        video") pull MiniLM back when it drifts to the topic's general theme. Off for paper and all-store
        questions, where it did not help (SciFact train nDCG@10 0.882 -> 0.875)."""
        p = self.params
        if scope.kind != "topic" or p.feedback_chunks <= 0 or p.feedback_weight <= 0 or not lexical:
            return qv
        rows = [lex.pos[cid] for cid, _ in lexical[: p.feedback_chunks] if cid in lex.pos]
        if not rows or lex.vectors is None:
            return qv
        moved = qv + p.feedback_weight * lex.vectors[rows].mean(axis=0)
        return moved / (np.linalg.norm(moved) or 1.0)

    def _expanded_scores(self, query: str, first: np.ndarray, members: np.ndarray, lex: SearchSnapshot) -> np.ndarray:
        """BM25 again with the query expanded by the words that mark its best chunks (RM3-style pseudo-
        relevance feedback): terms weighted by their share in each of the top chunks times their IDF, the
        best few added at a fraction of an original term's weight. Papers that describe the same idea in
        other words then reach the candidates."""
        p = self.params
        ranked = np.flatnonzero(members & (first > 0))
        if ranked.size == 0:
            return first
        top = ranked[np.argsort(-first[ranked], kind="stable")[: p.feedback_chunks or 3]]
        texts = self.store.get_chunks([lex.ids[i] for i in top])
        q = lex.tokenizer(query)
        weights: dict[str, float] = dict(Counter(q))
        expansion: dict[str, float] = {}
        for chunk in texts.values():
            toks = lex.tokenizer(chunk.text)
            if not toks:
                continue
            for t, c in Counter(toks).items():
                if t not in weights:
                    expansion[t] = expansion.get(t, 0.0) + c / len(toks) * lex.idf(t)
        best = sorted(expansion, key=lambda t: -expansion[t])[: p.lexical_feedback_terms]
        if not best:
            return first
        scale = expansion[best[0]]
        for t in best:
            weights[t] = p.lexical_feedback_weight * expansion[t] / scale
        return lex.weighted_scores(weights, members, p.scope_idf)

    def _near_topic(self, lex: SearchSnapshot, slug: str, threshold: float) -> np.ndarray:
        """Chunks whose vector is at least `threshold` cosine from the mean vector of the topic's rule
        members: counted as members, so a paper about the topic in words the rules do not list is not
        held back by the outside weight."""
        key = (lex.name, slug, threshold)
        got = self._near.get(key)
        if got is None:
            assert lex.vectors is not None
            rules = lex.topic_masks.get(slug)
            if rules is None or not rules.any():
                got = np.zeros(len(lex.ids), dtype=bool)
            else:
                centre = lex.vectors[rules].mean(axis=0)
                centre /= np.linalg.norm(centre) or 1.0
                got = (lex.vectors @ centre) >= threshold
            self._near = {k: v for k, v in self._near.items() if k[0] == lex.name}
            self._near[key] = got
        return got

    def _learned_topic(self, lex: SearchSnapshot, slug: str) -> np.ndarray:
        """Chunks of the topic's learned members (paperchat.discovery.membership), cached per snapshot."""
        key = (lex.name, slug, -1.0)
        got = self._near.get(key)
        if got is None:
            got = lex.scope_mask(paper_ids=sorted(self.catalog.learned_members().get(slug, set())))
            if got is None:
                got = np.zeros(len(lex.ids), dtype=bool)
            self._near = {k: v for k, v in self._near.items() if k[0] == lex.name}
            self._near[key] = got
        return got

    def _sentence_ranking(self, query: str, paper_id: str, lex: SearchSnapshot, mask: np.ndarray) -> list[str]:
        """The paper's chunks ranked by their best sentence pair under BM25 with the paper's own term
        statistics: a short aside (one sentence naming a value inside a long page) then counts as much as a
        page that discusses the question's words at length."""
        windows = self._paper_windows(paper_id, lex, mask)
        if windows is None:
            return []
        q = [t for t in dict.fromkeys(lex.tokenizer(query))]
        return windows.rank(q)

    def _paper_windows(self, paper_id: str, lex: SearchSnapshot, mask: np.ndarray) -> SentenceWindows | None:
        key = (lex.name, paper_id)
        got = self._windows.get(key)
        if got is None:
            ids = [lex.ids[i] for i in np.flatnonzero(mask)]
            if not ids:
                return None
            texts = self.store.get_chunks(ids)
            got = SentenceWindows.build([(cid, texts[cid].text) for cid in ids if cid in texts], lex.tokenizer)
            if len(self._windows) >= 16:  # a few papers open at a time
                self._windows.pop(next(iter(self._windows)))
            self._windows[key] = got
        return got

    def _soft_search(
        self, query: str, qv: np.ndarray, scope: Scope, members: np.ndarray, window: np.ndarray | None, lex: SearchSnapshot, marks: list[float] | None = None
    ) -> tuple[dict[str, tuple[int, float]], dict[str, tuple[int, float]], list[tuple[str, float]], list[tuple[str, float]]]:
        """BM25 and dense ranks of one query over the whole store with the topic as a prior (`_soft_ranks`);
        `marks` gets the time BM25 finished (for the stage timings)."""
        p = self.params
        bm = lex.scores(query, members, p.scope_idf)
        if bm is not None and p.lexical_feedback_terms > 0:
            bm = self._expanded_scores(query, bm, members, lex)
        if bm is not None and p.title_weight > 0:
            title = self._title_field(lex).scores(query, lex.tokenizer)
            if title is not None:
                bm = bm + p.title_weight * title
        lex_ranks = soft_ranks(lex.ids, bm, members, window, p.candidates) if bm is not None else {}
        lexical = sorted(((cid, sc) for cid, (_, sc) in lex_ranks.items()), key=lambda x: lex_ranks[x[0]][0])
        if marks is not None:
            marks.append(time.perf_counter())
        dq = self._dense_query(qv, scope, [(c, sc) for c, sc in lexical if members[lex.pos[c]]], lex)
        assert lex.vectors is not None
        cos = lex.vectors @ dq
        dense_ranks = soft_ranks(lex.ids, cos, members, window, p.candidates, positive_only=False)
        dense = sorted(((cid, sc) for cid, (_, sc) in dense_ranks.items()), key=lambda x: dense_ranks[x[0]][0])
        if dq is not qv:
            dense = [(cid, lex.cosine(cid, qv) or 0.0) for cid, _ in dense]
        return lex_ranks, dense_ranks, lexical, dense

    def _neighbours(
        self, fused: dict[str, float], qv: np.ndarray, members: np.ndarray, window: np.ndarray | None, lex: SearchSnapshot
    ) -> dict[str, float]:
        """A third ranking from what the first pass found: the question's vector moved to the mean vector of
        the best `neighbour_papers` papers, so papers close to the answers found (in other words than the
        question's) join the candidates."""
        p = self.params
        assert lex.vectors is not None
        seen: set[str] = set()
        rows: list[int] = []
        for cid in sorted(fused, key=lambda c: -fused[c]):
            paper = lex.paper_of(cid) or cid
            if paper in seen:
                continue
            seen.add(paper)
            rows.append(lex.pos[cid])
            if len(rows) >= p.neighbour_papers:
                break
        centre = lex.vectors[rows].mean(axis=0)
        moved = qv + p.neighbour_move * centre / (np.linalg.norm(centre) or 1.0)
        moved /= np.linalg.norm(moved) or 1.0
        ranks = soft_ranks(lex.ids, lex.vectors @ moved, members, window, p.candidates, positive_only=False)
        out = dict(fused)
        for cid, (rank, _) in ranks.items():
            out[cid] = out.get(cid, 0.0) + p.neighbour_weight / (p.rrf_k + rank)
        return out

    def search(self, query: str, scope: Scope, k: int | None = None, mode: str = "hybrid") -> list[Hit]:
        """The top k chunks for the query inside the scope, best first, each with its scores.

        The steps: the scope's mask; the fused ranking (with the topic as a prior, or inside the scope); the
        winners diversified and filled from the store in one call.

        Args:
            query: the search text.
            scope: topic, paper or all, with an optional date window.
            k: how many hits (default `retrieval.k`).
            mode: 'hybrid', 'dense' or 'lexical' (the last two for benchmarks).
        """
        p = self.params
        k = k or p.k
        t0 = time.perf_counter()
        lex = self.index()
        qv = self.embedder.embed_query(query)
        t1 = time.perf_counter()
        mask, in_collection = self._scope_mask(lex, scope)
        in_memory = p.dense_backend == "memory" and lex.vectors is not None
        marks: list[float] = []
        if scope.kind == "topic" and in_memory and p.topic_outside_weight > 0 and mode == "hybrid":
            fused, lexical, dense = self._fuse_with_topic_prior(query, qv, scope, mask, lex, marks)
            chunks: dict[str, Chunk] = {}
        else:
            fused, lexical, dense, chunks = self._fuse_in_scope(query, qv, scope, mask, in_collection, lex, mode, in_memory, marks)
        t2, t3 = marks
        t_rerank = 0.0
        if self.reranker is not None and scope.kind != "paper" and mode == "hybrid" and fused:
            t = time.perf_counter()
            fused = self._rerank(query, fused, chunks, lex)
            t_rerank = time.perf_counter() - t
        hits = self._hits(fused, lexical, dense, chunks, qv, scope, k, lex)
        t4 = time.perf_counter()
        self.last_timings = {
            "embed_query": (t1 - t0) * 1000,
            "lexical": (t2 - t1) * 1000,
            "dense": (t3 - t2) * 1000,
            "fuse": (t4 - t3 - t_rerank) * 1000,
            "rerank": t_rerank * 1000,
        }
        return hits

    def _rerank(self, query: str, fused: dict[str, float], chunks: dict[str, Chunk], lex: SearchSnapshot) -> dict[str, float]:
        """Our paper reranker reads the question against the title and abstract of the fused ranking's best
        `rerank_depth` papers; they are reordered by its logit (times `rerank_weight`) plus their fused rank
        (`fusion.rerank_fusion`), and a paper's best `max_per_paper` chunks move with it, ahead of the papers it did
        not read."""
        p = self.params
        assert self.reranker is not None
        ranked = sorted(fused, key=lambda c: -fused[c])
        order: list[str] = []
        for cid in ranked:
            paper = _paper(cid, chunks, lex)
            if paper not in order:
                order.append(paper)
                if len(order) >= p.rerank_depth:
                    break
        papers = self.catalog.get_many(order)
        texts = [f"{papers[pid].title}. {papers[pid].abstract}" if pid in papers else "" for pid in order]
        read = [i for i, t in enumerate(texts) if t]
        logits = np.zeros(len(order))
        if read:
            logits[read] = self.reranker(query, [texts[i] for i in read])
        band = {pid: len(order) - i for i, pid in enumerate(rerank_fusion(order, logits, p.rerank_weight, p.rrf_k))}
        top = max(fused.values()) or 1.0
        out = {}
        lifted: dict[str, int] = {}
        for cid in ranked:
            score, paper = fused[cid], _paper(cid, chunks, lex)
            # a reread paper's best `max_per_paper` chunks score 1-2 by its new place, above every other chunk (fused
            # scores are far under 1), in their own order; its further chunks keep their fused score, so a paper with
            # many chunks (a PDF) cannot fill the head the diversification picks from
            if paper in band and lifted.get(paper, 0) < p.max_per_paper:
                lifted[paper] = lifted.get(paper, 0) + 1
                out[cid] = 1.0 + band[paper] / len(order) + 0.01 * score / top
            else:
                out[cid] = score
        return out

    def _scope_mask(self, lex: SearchSnapshot, scope: Scope) -> tuple[np.ndarray | None, set[str] | None]:
        """The scope's rows of the snapshot (None: every row), and a collection's or discovered topic's papers
        (hard filters on their papers, imported or tagged)."""
        listed = {"collection": self.catalog.collection_papers, "discovered": self.catalog.tagged_papers}.get(scope.kind)
        in_collection = set(listed(scope.topic or "")) if listed else None
        mask = lex.scope_mask(
            topic=scope.topic if scope.kind == "topic" else None,
            paper_id=scope.paper_id if scope.kind == "paper" else None,
            since=date_int(scope.since),
            until=date_int(scope.until),
            paper_ids=in_collection,
        )
        return mask, in_collection

    def _fuse_with_topic_prior(self, query: str, qv: np.ndarray, scope: Scope, mask: np.ndarray | None, lex: SearchSnapshot,
                               marks: list[float]) -> tuple[dict[str, float], list[tuple[str, float]], list[tuple[str, float]]]:
        """The topic is a prior, not a filter: papers its rules miss still rank, behind its members. Returns the
        fused scores and the BM25 and dense rankings; `marks` gets the times BM25 and dense finished."""
        p = self.params
        window = lex.scope_mask(since=date_int(scope.since), until=date_int(scope.until))
        members = mask if mask is not None else np.ones(len(lex.ids), dtype=bool)
        if p.topic_similarity > 0 and scope.topic:
            near = self._near_topic(lex, scope.topic, p.topic_similarity)
            members = members | (near if window is None else near & window)
        if p.topic_learned and scope.topic:
            learned = self._learned_topic(lex, scope.topic)
            members = members | (learned if window is None else learned & window)
        lex_ranks, dense_ranks, lexical, dense = self._soft_search(query, qv, scope, members, window, lex, marks)
        marks.append(time.perf_counter())
        fused: dict[str, float] = {}

        def fuse(lex_r: dict[str, tuple[int, float]], dense_r: dict[str, tuple[int, float]], share: float) -> None:
            for ranks, weight in ((dense_r, p.dense_weight), (lex_r, p.lexical_weight)):
                for cid, (rank, _) in ranks.items():
                    fused[cid] = fused.get(cid, 0.0) + share * weight / (p.rrf_k + rank)

        fuse(lex_ranks, dense_ranks, 1.0)
        parts = aspects(query) if p.aspect_weight > 0 else []
        for part in parts:  # each aspect of a many-sided question searched on its own, fused at a share of the weight
            a_lex, a_dense, _, _ = self._soft_search(part, self.embedder.embed_query(part), scope, members, window, lex)
            fuse(a_lex, a_dense, p.aspect_weight / len(parts))
        if p.neighbour_weight > 0 and fused and lex.vectors is not None:
            fused = self._neighbours(fused, qv, members, window, lex)
        for cid in fused:
            if not members[lex.pos[cid]]:
                fused[cid] *= p.topic_outside_weight
        return fused, lexical, dense

    def _fuse_in_scope(
        self, query: str, qv: np.ndarray, scope: Scope, mask: np.ndarray | None, in_collection: set[str] | None, lex: SearchSnapshot,
        mode: str, in_memory: bool, marks: list[float],
    ) -> tuple[dict[str, float], list[tuple[str, float]], list[tuple[str, float]], dict[str, Chunk]]:
        """BM25 and dense inside the scope's mask, fused by weighted RRF (with the sentence ranking for one paper).
        Returns the fused scores, both rankings and the chunks Chroma returned (its dense backend only)."""
        p = self.params
        dense_weight = p.paper_dense_weight if scope.kind == "paper" else p.dense_weight
        lexical: list[tuple[str, float]] = []
        dense: list[tuple[str, float]] = []
        chunks: dict[str, Chunk] = {}
        if mode in ("hybrid", "lexical"):
            lexical = lex.search(query, p.candidates, mask, p.scope_idf)
            if scope.kind == "topic" and p.lexical_feedback_terms > 0 and lexical and mask is not None:
                first = lex.scores(query, mask, p.scope_idf)
                if first is not None:
                    bm = np.where(mask, self._expanded_scores(query, first, mask, lex), 0.0)
                    top = np.argsort(-bm, kind="stable")[: p.candidates]
                    lexical = [(lex.ids[i], float(bm[i])) for i in top if bm[i] > 0]
        marks.append(time.perf_counter())
        if mode in ("hybrid", "dense"):
            if in_memory:  # exact cosine over the scope's rows of the snapshot's vectors
                dq = self._dense_query(qv, scope, lexical, lex) if mode == "hybrid" else qv
                dense = lex.dense(dq, p.candidates, mask)
                if dq is not qv:  # ranked by the moved query; the scores shown and used to abstain stay the question's
                    dense = [(cid, lex.cosine(cid, qv) or 0.0) for cid, _ in dense]
            else:  # Chroma's HNSW with a metadata filter
                n = min(p.candidates, max(1, self.store.count()))
                found = self.store.dense_search(qv, n, scope)
                if in_collection is not None:  # Chroma's filter knows no collection: keep its papers' chunks
                    found = [(c, s) for c, s in found if c.paper_id in in_collection]
                dense = [(c.id, s) for c, s in found]
                chunks = {c.id: c for c, _ in found}
        marks.append(time.perf_counter())
        rankings = [([cid for cid, _ in dense], dense_weight if mode != "lexical" else 0),
                    ([cid for cid, _ in lexical], p.lexical_weight if mode != "dense" else 0)]
        if scope.kind == "paper" and scope.paper_id and p.sentence_weight > 0 and mode == "hybrid" and mask is not None:
            rankings.append((self._sentence_ranking(query, scope.paper_id, lex, mask), p.sentence_weight))
        return rrf(rankings, p.rrf_k), lexical, dense, chunks

    def _hits(self, fused: dict[str, float], lexical: list[tuple[str, float]], dense: list[tuple[str, float]], chunks: dict[str, Chunk],
              qv: np.ndarray, scope: Scope, k: int, lex: SearchSnapshot) -> list[Hit]:
        """The best k of the fused ranking, spread across papers (or one paper's pages), as hits with their
        text and metadata from the store and both scores."""
        p = self.params
        ranked = sorted(fused, key=lambda c: -fused[c])
        dense_score: dict[str, float | None] = dict(dense)
        lex_score = dict(lexical)
        head = ranked[: max(k * 4, 20)]
        if scope.kind != "paper":
            papers = {cid: _paper(cid, chunks, lex) for cid in head}
            head = diversify(head, papers, p.max_per_paper)
        if scope.kind == "paper" and p.max_per_page:
            # one paper: spread the slots over its pages (needs each candidate's page, so fetch them all)
            want = [cid for cid in head if cid not in chunks]
            if want:
                chunks.update(self.store.get_chunks(want))
            head = diversify([c for c in head if c in chunks], {c: str(chunks[c].page) for c in head if c in chunks}, p.max_per_page)
        # text and metadata of the winners only, in one call (a chunk deleted since the snapshot drops out)
        want = [cid for cid in head[: k + 4] if cid not in chunks]
        if want:
            chunks.update(self.store.get_chunks(want))
        head = [cid for cid in head if cid in chunks][:k]
        for cid in head:
            if cid not in dense_score:  # found by BM25 only: its cosine, for abstention and display
                cos = lex.cosine(cid, qv)
                if cos is None:
                    cos = self._cosine_from_store(cid, qv)
                dense_score[cid] = cos
        return [
            Hit(chunk=chunks[cid], score=fused[cid], dense=dense_score.get(cid), lexical=lex_score.get(cid), rank=i + 1)
            for i, cid in enumerate(head)
        ]


def _paper(cid: str, chunks: dict[str, Chunk], lex: SearchSnapshot) -> str:
    """The paper of a chunk id: from the chunk Chroma returned, else the snapshot's (else the id itself)."""
    return chunks[cid].paper_id if cid in chunks else lex.paper_of(cid) or cid


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
                    metadata={
                        "paper_id": h.chunk.paper_id, "page": h.chunk.page, "kind": h.chunk.kind, "score": h.score, "dense": h.dense, "lexical": h.lexical,
                    },
                )
                for h in retriever.search(query, scope, k)
            ]

    return PaperchatRetriever()
