"""Retrieval-only sweeps with split-half validation: tune a setting on one half of a question set, report
it on the other half (then swap), so a value is kept only when it wins on questions it was not chosen on.

A sweep runs the real `Retriever` (no answerer) once per value and question; the metrics are `eval run`'s
retrieval metrics (paper recall@10/@20 and MRR for topic questions, page and evidence hit@5 for paper questions,
judged precision@10 with `--judgments`). One difference: the sweep reads 20 hits and counts the first 10 distinct
papers, while `eval run` scores the 10 sources the answer reads (at most `max_per_paper` chunks of a paper, so
sometimes fewer than 10 papers): a topic question's @10 numbers can be a little higher here.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.evaluation import metrics as M
from paperchat.evaluation.lab import Lab
from paperchat.evaluation.questions import Judgments, Question
from paperchat.evaluation.runner import question_scope
from paperchat.settings import RetrievalSettings

DEPTH = 20  # hits per question: recall@20 needs twenty


def retrieval_metrics(
    assistant: Assistant, params: RetrievalSettings, questions: Sequence[Question], data: Path | None, judged: Judgments | None = None
) -> dict[str, dict[str, float]]:
    """Question id -> retrieval metrics for one parameter set (judged precision@10 where `judged` has the question)."""
    search = Lab(assistant).searcher(params)
    out: dict[str, dict[str, float]] = {}
    for q in questions:
        if q.unanswerable:
            continue
        t0 = time.perf_counter()
        hits = search(q.question, question_scope(assistant, q, data), DEPTH)
        m: dict[str, float] = {"ms": (time.perf_counter() - t0) * 1000}
        papers = [h.chunk.paper_id for h in hits]
        if q.gold_papers:
            m["recall@10"] = M.recall_at(papers, q.gold_papers, 10)[0]
            m["recall@20"] = M.recall_at(papers, q.gold_papers, 20)[0]
            m["mrr"] = M.mrr(papers[:10], q.gold_papers)[0]
        if judged and q.id in judged:
            m.update({name: res[0] for name, res in M.judged(papers, judged[q.id], 10).items()})
        if q.scope == "paper":
            if q.gold_pages:
                m["page_hit@5"] = M.page_hit([h.chunk.page for h in hits], q.gold_pages, 5)[0]
            if q.evidence:
                m["evidence_hit@5"] = M.evidence_hit([h.chunk.text for h in hits], q.evidence, 5)[0]
        out[q.id] = m
    return out


def halves(questions: Sequence[Question], seed: str = "paperchat") -> tuple[list[Question], list[Question]]:
    """A fixed split by a hash of each question id, balanced within each (scope, kind, topic) group."""
    groups: dict[tuple[str, str, str], list[Question]] = {}
    for q in questions:
        groups.setdefault((q.scope, q.kind, q.topic), []).append(q)
    a: list[Question] = []
    b: list[Question] = []
    for group in groups.values():
        ordered = sorted(group, key=lambda q: hashlib.sha256(f"{seed}:{q.id}".encode()).hexdigest())
        for i, q in enumerate(ordered):
            (a if i % 2 == 0 else b).append(q)
    return a, b


def mean(rows: dict[str, dict[str, float]], metric: str, ids: Sequence[str] | None = None, where: Callable[[str], bool] | None = None) -> float | None:
    """Mean of a metric over the chosen questions, or None when none has it."""
    vals = [m[metric] for qid, m in rows.items() if metric in m and (ids is None or qid in ids) and (where is None or where(qid))]
    return statistics.fmean(vals) if vals else None


@dataclass
class Sweep:
    """One parameter swept over values; per-value, per-question metrics."""

    param: str
    values: list[Any]
    rows: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # str(value) -> qid -> metrics
    seconds: float = 0.0


def run_sweep(
    assistant: Assistant, base: RetrievalSettings, param: str, values: Sequence[Any], questions: Sequence[Question], data: Path | None,
    judged: Judgments | None = None,
) -> Sweep:
    """Metrics of every question for every value of one retrieval setting (others as in `base`)."""
    if param not in RetrievalSettings.model_fields:
        raise ValueError(f"unknown retrieval setting {param!r}; one of {', '.join(RetrievalSettings.model_fields)}")
    sw = Sweep(param, list(values))
    t0 = time.perf_counter()
    for v in values:
        params = base.model_copy(update={param: v})
        sw.rows[str(v)] = retrieval_metrics(assistant, params, questions, data, judged)
    sw.seconds = time.perf_counter() - t0
    return sw


def split_half_report(sw: Sweep, questions: Sequence[Question], objective: str, metrics: Sequence[str], where: Callable[[Question], bool] | None = None) -> str:
    """A text table of every value on each half, and the value chosen on each half scored on the other."""
    qs = [q for q in questions if where is None or where(q)]
    a, b = halves(qs)
    ids_a, ids_b = [q.id for q in a], [q.id for q in b]
    lines = [f"{sw.param}: {len(qs)} questions, halves of {len(a)} / {len(b)} ({sw.seconds:.0f} s)"]
    head = f"{'value':>8} | " + " | ".join(f"{m:>14} A / B" for m in metrics)
    lines.append(head)
    best: dict[str, tuple[float, str]] = {}
    for v in map(str, sw.values):
        cells = []
        for m in metrics:
            va, vb = mean(sw.rows[v], m, ids_a), mean(sw.rows[v], m, ids_b)
            cells.append(f"{_f(va):>8} / {_f(vb):<6}")
        lines.append(f"{v:>8} | " + " | ".join(cells))
        for half, ids in (("A", ids_a), ("B", ids_b)):
            score = mean(sw.rows[v], objective, ids)
            if score is not None and (half not in best or score > best[half][0] + 1e-9):
                best[half] = (score, v)
    for tuned, other, ids in (("A", "B", ids_b), ("B", "A", ids_a)):
        if tuned in best:
            v = best[tuned][1]
            first = str(sw.values[0])
            lines.append(
                f"tuned on {tuned}: {sw.param}={v} ({objective} {_f(best[tuned][0])} on {tuned}); on {other}: {_f(mean(sw.rows[v], objective, ids))}"
                f" vs {first} (first value): {_f(mean(sw.rows[first], objective, ids))}"
            )
    return "\n".join(lines)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m paperchat.evaluation.sweep --set FILE --param NAME --values a,b,c`: a split-half table."""
    import argparse
    import json

    from paperchat.evaluation.questions import load_judgments, load_set
    from paperchat.settings import Settings

    ap = argparse.ArgumentParser(prog="python -m paperchat.evaluation.sweep", description=__doc__)
    ap.add_argument("--set", action="append", type=Path, required=True, help="question set (repeatable)")
    ap.add_argument("--data", type=Path, default=None, help="shared data folder (to find each question's PDF)")
    ap.add_argument("--param", required=True, help="retrieval setting to sweep")
    ap.add_argument("--values", required=True, help="comma-separated values")
    ap.add_argument("--objective", default="recall@10")
    ap.add_argument("--metrics", default="recall@10,recall@20,mrr,judged_precision@10,judged@10,page_hit@5,evidence_hit@5")
    ap.add_argument("--judgments", action="append", type=Path, default=[], help="graded (question, paper) judgments (JSONL); repeatable")
    ap.add_argument("--json", type=Path, default=None, help="write per-question rows here")
    args = ap.parse_args(argv)
    settings = Settings()
    assistant = Assistant(settings)
    assistant.sync_topics()  # the topic rules may have changed since the store was built
    questions: list[Question] = []
    for f in args.set:
        qs, bad, _ = load_set(f)
        questions.extend(qs)
    field_type = RetrievalSettings.model_fields[args.param].annotation
    caster: Callable[[str], Any] = int if field_type is int else float if field_type is float else str
    if field_type is bool:
        caster = lambda v: v.strip().lower() in ("1", "true", "yes", "on")  # noqa: E731
    values = [caster(v) for v in args.values.split(",")]
    sw = run_sweep(assistant, settings.retrieval, args.param, values, questions, args.data, load_judgments(args.judgments) if args.judgments else None)
    metrics = [m for m in args.metrics.split(",") if any(m in r for rows in sw.rows.values() for r in rows.values())]
    groups: dict[str, Callable[[Question], bool]] = {
        "known-item": lambda q: q.kind == "known-item",
        "multi-paper": lambda q: q.kind == "multi-paper",
        "paper": lambda q: q.scope == "paper" and not q.unanswerable,
    }
    for name, where in groups.items():
        if any(where(q) for q in questions):
            objective = args.objective if name != "paper" else "evidence_hit@5"
            print(f"\n## {name}\n" + split_half_report(sw, questions, objective, metrics, where))
    if args.json:
        args.json.write_text(json.dumps({"param": sw.param, "values": sw.values, "rows": sw.rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
