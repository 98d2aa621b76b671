"""Calibrate the abstention threshold on question sets (never by guess).

QA abstains when the best dense (cosine) score among the retrieved passages is below
`retrieval.abstain_below`. For every question of the sets this records that score, then sweeps
thresholds: how many answerable questions each would wrongly refuse, how many unanswerable ones it would
rightly refuse, and the accuracy of the abstain decision over the set as it is. The recommended
threshold is the one with the best decision accuracy; ties go to the lowest (fewest wrong refusals).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.evaluation.questions import Question
from paperchat.evaluation.runner import EVAL_K, question_scope


def top_scores(assistant: Assistant, questions: Sequence[Question], data: Path | None) -> list[dict[str, Any]]:
    """Each question with its best dense score over the passages retrieval offers."""
    search = assistant.searcher(assistant.settings.retrieval)  # a retriever of its own, as the QA's would be
    rows = []
    for q in questions:
        hits = search(q.question, question_scope(assistant, q, data), EVAL_K)
        rows.append({"id": q.id, "unanswerable": bool(q.unanswerable), "top_dense": max((h.dense or 0.0 for h in hits), default=0.0)})
    return rows


def sweep(rows: Sequence[dict[str, Any]], lo: float = 0.0, hi: float = 0.8, step: float = 0.01) -> dict[str, Any]:
    """The decision table over thresholds and the recommended one."""
    pos = [r for r in rows if not r["unanswerable"]]
    neg = [r for r in rows if r["unanswerable"]]
    table = []
    t = lo
    while t <= hi + 1e-9:
        wrong_refusals = sum(r["top_dense"] < t for r in pos)
        right_refusals = sum(r["top_dense"] < t for r in neg)
        acc = (len(pos) - wrong_refusals + right_refusals) / max(1, len(rows))
        table.append({"threshold": round(t, 3), "wrong_refusals": wrong_refusals, "right_refusals": right_refusals, "decision_accuracy": round(acc, 4)})
        t += step
    best = max(table, key=lambda r: (r["decision_accuracy"], -r["threshold"]))
    # the largest threshold that keeps that accuracy: also refuse off-topic questions as far as the data allow
    same = [r for r in table if r["decision_accuracy"] == best["decision_accuracy"] and r["wrong_refusals"] == best["wrong_refusals"]]
    return {
        "answerable": len(pos),
        "unanswerable": len(neg),
        "recommended": max(r["threshold"] for r in same),
        "table": table,
        "unanswerable_top_dense": sorted(round(r["top_dense"], 3) for r in neg),
        "answerable_min_top_dense": round(min((r["top_dense"] for r in pos), default=0.0), 3),
    }
