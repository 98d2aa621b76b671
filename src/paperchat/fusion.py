"""Rank fusion for hybrid retrieval: weighted reciprocal-rank fusion, the ranks a topic prior gives (members first,
others at the rank they would hold among them), and per-paper diversification."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def rrf(rankings: Sequence[tuple[Sequence[str], float]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: sum of weight / (k + rank) over the rankings (rank from 1)."""
    scores: dict[str, float] = {}
    for ids, weight in rankings:
        if weight <= 0:
            continue
        for rank, cid in enumerate(ids, start=1):
            scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
    return scores


def soft_ranks(
    ids: Sequence[str], scores: np.ndarray, members: np.ndarray, window: np.ndarray | None, n: int, positive_only: bool = True
) -> dict[str, tuple[int, float]]:
    """Ranks for a topic search that treats the topic as a prior, not a filter.

    The best n members keep the rank a search filtered to the topic gives them; the best n other chunks
    inside the date window get the rank they would hold among the members (1 + the members that score
    higher), so a paper the topic's rules miss competes on its merits and only the caller's weight holds
    it back. Returns chunk id -> (rank, score).
    """
    ok = scores > 0 if positive_only else np.ones(scores.shape[0], dtype=bool)
    inside = members & ok
    others = ~members & ok
    if window is not None:
        others &= window
    out: dict[str, tuple[int, float]] = {}
    rows = np.flatnonzero(inside)
    member_scores = scores[rows]
    if rows.size:
        m = min(n, rows.size)
        top = np.argpartition(-member_scores, m - 1)[:m]
        top = top[np.argsort(-member_scores[top], kind="stable")]
        for rank, t in enumerate(top, start=1):
            out[ids[rows[t]]] = (rank, float(member_scores[t]))
    orows = np.flatnonzero(others)
    if orows.size:
        o_scores = scores[orows]
        m = min(n, orows.size)
        top = np.argpartition(-o_scores, m - 1)[:m]
        ascending = np.sort(member_scores)
        for t in top:
            higher = ascending.size - int(np.searchsorted(ascending, o_scores[t], side="right"))
            out[ids[orows[t]]] = (1 + higher, float(o_scores[t]))
    return out



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


def rerank_fusion(first_stage: Sequence[str], logits: np.ndarray, weight: float, rrf_k: int = 60) -> list[str]:
    """Reorder a first-stage ranking by a reranker: `weight` x its logit plus the first stage's reciprocal rank
    scaled to a logit's range (10 at the top, about 7 at rank 30 with rrf_k 60); weight 0 keeps the order."""
    base = np.array([rrf_k / (rrf_k + r) for r in range(len(first_stage))]) * 10.0
    order = np.argsort(-(base + weight * np.asarray(logits, dtype=np.float64)), kind="stable")
    return [first_stage[i] for i in order]
