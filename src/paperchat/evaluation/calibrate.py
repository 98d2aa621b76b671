"""Calibrate the abstention thresholds on question sets (never by guess).

Two rules refuse a question. The first: QA abstains when the best dense (cosine) score among the retrieved
passages is below `retrieval.abstain_below`. The second reads the passages (paperchat.answering.evidence):
a paper question is refused when a name it gives is in no passage, or when the evidence strength is below
`answers.refuse_below`; `sweep_evidence` chooses that threshold on one half of the questions and reports
it on the other (and the other way round), so a threshold is trusted only where it holds on questions it
was not chosen on.

For the first rule: For every question of the sets this records that score, then sweeps
thresholds: how many answerable questions each would wrongly refuse, how many unanswerable ones it would
rightly refuse, and the accuracy of the abstain decision over the set as it is. The recommended
threshold is the one with the best decision accuracy; ties go to the lowest (fewest wrong refusals).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.evaluation.lab import Lab
from paperchat.evaluation.questions import Question
from paperchat.evaluation.runner import eval_k, question_scope


def top_scores(assistant: Assistant, questions: Sequence[Question], data: Path | None, evidence: bool = False) -> list[dict[str, Any]]:
    """Each question with its best dense score over the passages retrieval offers (and, with `evidence`,
    the evidence strength and the missing names its passages give: paper questions only)."""
    search = Lab(assistant).searcher(assistant.settings.retrieval)  # a retriever of its own, as the QA's would be
    rows = []
    for q in questions:
        scope = question_scope(assistant, q, data)
        hits = search(q.question, scope, eval_k(scope, assistant.settings))  # as `eval run` asks
        row: dict[str, Any] = {
            "id": q.id, "scope": q.scope, "unanswerable": bool(q.unanswerable), "top_dense": max((h.dense or 0.0 for h in hits), default=0.0),
        }
        if evidence and q.scope == "paper" and hits:
            ev = Lab(assistant).evidence(q.question, scope, hits)
            row.update(strength=ev["strength"], missing_names=list(ev["missing_names"]), asked=ev["asked"], measured=ev["measured"])  # type: ignore[call-overload]
        rows.append(row)
    return rows


def _refusals(rows: Sequence[dict[str, Any]], t: float, names: bool, asked: float = 0.0) -> dict[str, Any]:
    pos = [r for r in rows if not r["unanswerable"]]
    neg = [r for r in rows if r["unanswerable"]]

    def refused(r: dict[str, Any]) -> bool:
        thin = r.get("asked") is not None and r["asked"] < asked
        unstated = r.get("measured") is False  # the money / duration rule (answers.refuse_unstated_measure) is on by default
        return (names and bool(r["missing_names"])) or r["strength"] < t or thin or unstated

    wrong = sum(refused(r) for r in pos)
    right = sum(refused(r) for r in neg)
    return {
        "threshold": round(t, 3),
        "wrong_refusals": wrong,
        "right_refusals": right,
        "answerable": len(pos),
        "unanswerable": len(neg),
        "decision_accuracy": round((len(pos) - wrong + right) / max(1, len(rows)), 4),
    }


def choose_strength(rows: Sequence[dict[str, Any]], names: bool = True, lo: float = -0.5, hi: float = 1.5, step: float = 0.01) -> float:
    """The refusal threshold with the best decision accuracy on `rows`: the middle of the best run of
    thresholds (the widest margin on both sides, rather than one that grazes an answerable question)."""
    table = [_refusals(rows, lo + i * step, names) for i in range(int(round((hi - lo) / step)) + 1)]
    best = max(r["decision_accuracy"] for r in table)
    first = next(i for i, r in enumerate(table) if r["decision_accuracy"] == best)
    last = first
    while last + 1 < len(table) and table[last + 1]["decision_accuracy"] == best:
        last += 1
    return round((table[first]["threshold"] + table[last]["threshold"]) / 2, 3)


def stratified_halves(questions: Sequence[Question]) -> tuple[list[str], list[str]]:
    """evaluation.sweep.halves, done apart for answerable and unanswerable questions so both halves get some
    of each."""
    from paperchat.evaluation.sweep import halves

    a: list[str] = []
    b: list[str] = []
    for group in ([q for q in questions if not q.unanswerable], [q for q in questions if q.unanswerable]):
        ha, hb = halves(group)
        a += [q.id for q in ha]
        b += [q.id for q in hb]
    return a, b


def sweep_evidence(rows: Sequence[dict[str, Any]], halves: tuple[Sequence[str], Sequence[str]], names: bool = True) -> dict[str, Any]:
    """The evidence threshold chosen on each half and measured on the other, and the one chosen on all."""
    rows = [r for r in rows if "strength" in r]
    a = [r for r in rows if r["id"] in set(halves[0])]
    b = [r for r in rows if r["id"] in set(halves[1])]
    ta, tb = choose_strength(a, names), choose_strength(b, names)
    everything = choose_strength(rows, names)
    return {
        "chosen_on_a": ta,
        "measured_on_b": _refusals(b, ta, names),
        "chosen_on_b": tb,
        "measured_on_a": _refusals(a, tb, names),
        "recommended": everything,
        "on_all": _refusals(rows, everything, names),
        "answerable_strengths": sorted(round(r["strength"], 3) for r in rows if not r["unanswerable"])[:5],
        "unanswerable": [{"id": r["id"], "strength": round(r["strength"], 3), "missing_names": r["missing_names"]} for r in rows if r["unanswerable"]],
    }


ASKED_GRID = (0.0, 0.25, 0.34, 0.5, 0.67, 0.75, 1.0)


def choose_asked(rows: Sequence[dict[str, Any]], strength: float, names: bool = True) -> float:
    """The asked-words threshold (answers.refuse_asked_below) with the best decision accuracy on `rows`, the
    strength threshold and the names rule as they are; ties go to the lowest (fewest wrong refusals)."""
    return max(ASKED_GRID, key=lambda t: (_refusals(rows, strength, names, t)["decision_accuracy"], -t))


def sweep_asked(rows: Sequence[dict[str, Any]], halves: tuple[Sequence[str], Sequence[str]], strength: float, names: bool = True) -> dict[str, Any]:
    """The asked-words threshold chosen on each half and measured on the other (the strength threshold fixed)."""
    rows = [r for r in rows if "strength" in r]
    a = [r for r in rows if r["id"] in set(halves[0])]
    b = [r for r in rows if r["id"] in set(halves[1])]
    ta, tb = choose_asked(a, strength, names), choose_asked(b, strength, names)
    return {
        "chosen_on_a": ta,
        "measured_on_b": {**_refusals(b, strength, names, ta), "threshold": ta},
        "chosen_on_b": tb,
        "measured_on_a": {**_refusals(a, strength, names, tb), "threshold": tb},
        "table": [{**_refusals(rows, strength, names, t), "threshold": t} for t in ASKED_GRID],
    }


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


def choose_reader_threshold(rows: Sequence[dict[str, Any]], max_wrong_share: float = 0.02) -> dict[str, Any]:
    """The sentence reader's refusal threshold from an `eval run` (results.jsonl rows, run with the reader on and
    no reader threshold): the highest logit threshold under which at most `max_wrong_share` of the answerable
    questions the other checks answered would be refused, with what it adds. Only paper questions count."""
    def unanswerable(r: dict[str, Any]) -> bool:  # the run scores abstention only on unanswerable questions
        return "answer.abstention_accuracy" in (r.get("metrics") or {})

    answered = [r for r in rows if r.get("answer") and r["answer"].get("reader_top") is not None and not r["answer"].get("abstained")]
    good = sorted(float(r["answer"]["reader_top"]) for r in answered if not unanswerable(r))
    bad = [float(r["answer"]["reader_top"]) for r in answered if unanswerable(r)]
    allowed = int(max_wrong_share * len(good))
    threshold = good[allowed] if len(good) > allowed else float("inf")  # refusing below it refuses `allowed` answerable
    return {
        "threshold": round(threshold, 4),
        "answerable_answered": len(good),
        "unanswerable_answered": len(bad),
        "more_right_refusals": sum(1 for b in bad if b < threshold),
        "more_wrong_refusals": sum(1 for g in good if g < threshold),
    }
