"""Run question sets through the app's own pipeline (QA over a Library) and score them.

A run writes `results.jsonl` (one record per question: question, answer record, metrics, reasons),
`summary.json` (stamped with settings, answerer, model, each set's and each judgment file's sha256 and the code
version).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import statistics
import subprocess
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paperchat import __version__
from paperchat.assistant import Assistant, Failure
from paperchat.errors import ConfigError, PaperchatError
from paperchat.evaluation import metrics as M
from paperchat.evaluation.questions import Question, load_judgments, load_set
from paperchat.settings import PROJECT_ROOT, Settings
from paperchat.text import percentile
from paperchat.types import Answer, Scope

EVAL_K = 10  # sources per topic question: recall@10 needs ten (a paper question reads what the app reads: retrieval.k)


def eval_k(scope: Scope, settings: Settings) -> int:
    """The sources a question of this scope is asked with: ten for topic questions (recall@10), `retrieval.k`
    for a paper question, as the app asks it."""
    return settings.retrieval.k if scope.kind == "paper" else EVAL_K


def code_version() -> str:
    """The package version and, in a git checkout, the short commit."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    return f"{__version__}+{rev}" if rev else __version__


def prepare(assistant: Assistant, questions: Sequence[Question], data: Path | None) -> list[Failure]:
    """Ingest what the questions need: their PDFs (data/pdfs/...) and, for topic questions, data/abstracts."""
    failures: list[Failure] = []
    if data is None:
        return failures
    if any(q.scope == "topic" for q in questions):
        for f in sorted((data / "abstracts").glob("*.jsonl*")):
            rep = assistant.ingest_record_files([f], show_progress=False)
            failures.extend(rep.failures)
    pdfs = sorted({data / "pdfs" / q.pdf for q in questions if q.scope == "paper" and q.pdf})
    if pdfs:
        failures.extend(assistant.ingest_pdfs(pdfs, show_progress=False).failed)
    return failures


def paper_id_for(assistant: Assistant, q: Question, data: Path | None) -> str | None:
    """The id of a question's paper: the one whose PDF has the question's PDF's bytes, else its paper_id."""
    if q.pdf and data is not None and (data / "pdfs" / q.pdf).exists():
        p = assistant.paper_for_pdf(data / "pdfs" / q.pdf)
        if p is not None:
            return p.id
    return q.paper_id or None


def question_scope(assistant: Assistant, q: Question, data: Path | None) -> Scope:
    """Where a question searches: its paper (found by the PDF's hash, or its id) or its topic."""
    if q.scope == "paper":
        pid = paper_id_for(assistant, q, data)
        if pid is None:
            raise PaperchatError(f"paper of {q.pdf or q.paper_id} is not in the store", "pass --data with the PDFs")
        return Scope.for_paper(pid)
    return Scope.for_topic(q.topic)


def ceiling(q: Question) -> dict[str, float | None]:
    """What the question's evidence sentence itself scores on contains-gold and holds (`metrics.quoting_ceiling`),
    for an answerable paper question with a gold answer and an evidence sentence; from the question alone, so a
    question whose ask failed counts too. No reason is kept: it is a property of the set, not a fault of the answer.
    An answer can score above it on a question when another sentence it quotes holds the gold words too."""
    if q.scope != "paper" or q.unanswerable or not q.gold_answer or not q.evidence:
        return {}
    c, h = M.quoting_ceiling(q.evidence, [q.gold_answer, *q.answer_aliases])
    return {"answer.ceiling_contains": c, "answer.ceiling_holds": h}


def score(q: Question, ans: Answer, judged: dict[str, int] | None = None) -> tuple[dict[str, float | None], dict[str, str]]:
    """Every metric that applies to this question (None where it does not), with reasons; `judged` are the
    question's graded paper judgments, when a judgment file has them."""
    m: dict[str, float | None] = {}
    why: dict[str, str] = {}

    def put(name: str, res: M.Metric) -> None:
        m[name], why[name] = res

    ranked = [s.paper_id for s in ans.sources]
    if q.gold_papers:
        put("retrieval.recall@5", M.recall_at(ranked, q.gold_papers, 5))
        put("retrieval.recall@10", M.recall_at(ranked, q.gold_papers, 10))
        put("retrieval.mrr", M.mrr(ranked, q.gold_papers))
        put("retrieval.ndcg@10", M.ndcg_at(ranked, q.gold_papers, 10))
    if judged:
        for name, res in M.judged(ranked, judged, 10).items():
            put(f"retrieval.{name}", res)
    if q.scope == "paper" and not q.unanswerable:
        if q.gold_pages:
            put("retrieval.page_hit@5", M.page_hit([s.page for s in ans.sources], q.gold_pages, 5))
        if q.evidence:
            put("retrieval.evidence_hit@5", M.evidence_hit([s.text for s in ans.sources], q.evidence, 5))
    golds = [q.gold_answer, *q.answer_aliases]
    correct: bool
    if q.unanswerable:
        put("answer.abstention_accuracy", ((1.0, "abstained") if ans.abstained else (0.0, "answered an unanswerable question")))
        correct = ans.abstained
    else:
        m["answer.wrong_refusal"] = 1.0 if ans.abstained else 0.0  # no reason: 0 is the good value
        if q.gold_answer:
            put("answer.f1", M.best_f1(ans.answer, golds))
            put("answer.contains", M.contains(ans.answer, golds))
            put("answer.holds", M.holds(ans.answer, golds))
            if q.scope == "paper":
                put("answer.holds_first", M.holds_first(ans.answer, golds))
            if q.scope == "paper" and q.evidence:  # a refusal's "nearest passage" is not an answer
                put("answer.evidence_first", M.evidence_first(ans.answer, q.evidence) if not ans.abstained else (0.0, "refused"))
                put("answer.evidence_quoted", M.evidence_quoted(ans.answer, q.evidence) if not ans.abstained else (0.0, "refused"))
            if q.scope == "paper":
                rank, why_rank = M.first_gold_rank(ans.answer, golds)
                m["answer.first_gold_rank"], why["answer.first_gold_rank"] = (rank or None), why_rank
                m["answer.gold_in_first"] = 1.0 if rank == 1.0 else 0.0
        correct = not ans.abstained and ((m.get("answer.contains") or 0) >= 1.0 or (m.get("answer.f1") or 0) >= 0.5)
    m.update(ceiling(q))
    m["answer.answered"] = 0.0 if ans.abstained else 1.0
    m["answer.correct"] = 1.0 if correct else 0.0
    total_marks = len(ans.citations) + len(ans.dropped_citations)
    if total_marks:
        put("citations.validity", (len(ans.citations) / total_marks, f"{len(ans.dropped_citations)} citations of sources not offered"))
    if ans.citations:
        if q.scope == "topic" and q.gold_papers:
            ok = [c for c in ans.citations if c.paper_id in q.gold_papers]
            put("citations.precision", (len(ok) / len(ans.citations), f"{len(ok)} of {len(ans.citations)} citations name a gold paper"))
            put("citations.recall", M.citation_recall([c.paper_id for c in ans.citations], q.gold_papers))
            if q.kind == "known-item":
                first = ans.citations[0].paper_id
                put("citations.gold_first", ((1.0, "the gold paper is cited first") if first in q.gold_papers else (0.0, f"{first} is cited first")))
        if q.scope == "topic" and not ans.abstained:
            put("citations.on_question", M.on_question(ans.answer, q.question))
        elif q.scope == "paper" and q.gold_pages:
            ok = [c for c in ans.citations if c.page in q.gold_pages]
            put("citations.precision", (len(ok) / len(ans.citations), f"{len(ok)} of {len(ans.citations)} citations on a gold page"))
        put("citations.support", (statistics.fmean(c.support for c in ans.citations), "mean support of the citations"))
    return m, why


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r["metrics"][key] for r in rows if r["metrics"].get(key) is not None]
    return round(statistics.fmean(vals), 4) if vals else None


def _count(rows: list[dict[str, Any]], key: str) -> int | None:
    """How many questions scored 1.0 on `key` (None when it applies to none)."""
    vals = [r["metrics"][key] for r in rows if r["metrics"].get(key) is not None]
    return int(sum(vals)) if vals else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of a run (a metric that applies to no question is null)."""
    answered = [r for r in rows if r["metrics"].get("answer.answered") == 1.0]
    correct = sum(r["metrics"]["answer.correct"] for r in rows)

    def lat(stage: str, q: float) -> float | None:
        v = percentile([r["answer"]["timings_ms"].get(stage, 0.0) for r in rows if r.get("answer")], q)
        return round(v, 1) if v is not None else None

    out: dict[str, Any] = {
        "n": len(rows),
        "retrieval": {
            k: _mean(rows, f"retrieval.{k}")
            for k in ("recall@5", "recall@10", "recall@20", "mrr", "ndcg@10", "judged_precision@10", "judged@10", "page_hit@5", "evidence_hit@5")
        },
        "answer": {
            "f1": _mean(rows, "answer.f1"),
            "contains": _mean(rows, "answer.contains"),
            "holds": _mean(rows, "answer.holds"),
            "holds_first": _mean(rows, "answer.holds_first"),
            "evidence_first": _mean(rows, "answer.evidence_first"),
            "evidence_quoted": _mean(rows, "answer.evidence_quoted"),
            "ceiling_contains": _mean(rows, "answer.ceiling_contains"),
            "ceiling_holds": _mean(rows, "answer.ceiling_holds"),
            "abstention_accuracy": _mean(rows, "answer.abstention_accuracy"),
            "right_refusals": _count(rows, "answer.abstention_accuracy"),
            "wrong_refusals": _count(rows, "answer.wrong_refusal"),
            "first_gold_rank": _mean(rows, "answer.first_gold_rank"),
            "gold_in_first": _mean(rows, "answer.gold_in_first"),
            "precision": round(correct / len(answered), 4) if answered else None,
            "accuracy": round(correct / len(rows), 4) if rows else None,
        },
        "citations": {k: _mean(rows, f"citations.{k}") for k in ("validity", "precision", "recall", "gold_first", "on_question", "support")},
        "judge": {k: _mean(rows, f"judge.{k}") for k in ("correct", "faithful")} if any("judge.correct" in r["metrics"] for r in rows) else None,
        "latency_ms": {
            "retrieve_p50": lat("retrieve", 50), "retrieve_p95": lat("retrieve", 95), "answer_p50": lat("answer", 50), "answer_p95": lat("answer", 95),
        },
    }
    return out


def run(
    sets: Sequence[Path],
    settings: Settings,
    data: Path | None = None,
    out: Path | None = None,
    answerer: str | None = None,
    judge: bool = False,
    judgments: Sequence[Path] = (),
) -> dict[str, Any]:
    """Run the sets; returns the summary (and writes the results folder when `out` is given). `judgments` are
    files of graded (question, paper) judgments (`load_judgments`) for the judged-precision measures."""
    judged = load_judgments(judgments) if judgments else {}
    questions: list[Question] = []
    malformed: list[Failure] = []
    shas: dict[str, str] = {}
    for s in sets:
        if not s.is_file():
            raise ConfigError(f"question set {s} not found", "check the path")
        qs, bad, sha = load_set(s)
        questions += qs
        malformed += bad
        shas[s.name] = sha
    if answerer:
        settings = settings.model_copy(update={"answerer": answerer})
    assistant = Assistant(settings)
    assistant.sync_topics()  # the topic rules may have changed since the store was built
    ingest_failures = prepare(assistant, questions, data)
    grader = None
    if judge:
        from paperchat.evaluation.judge import Judge

        grader = Judge(settings)
    rows: list[dict[str, Any]] = []
    for q in questions:
        row: dict[str, Any] = {"id": q.id, "set": q.set_name, "scope": q.scope, "topic": q.topic, "kind": q.kind, "question": q.question}
        try:
            scope = question_scope(assistant, q, data)
            ans = assistant.ask(q.question, scope, k=eval_k(scope, settings))
            metrics, reasons = score(q, ans, judged.get(q.id))
            if q.scope == "topic" and q.gold_papers:  # recall@20: the same retrieval, twenty deep (the answer reads ten)
                try:
                    deep = [h.chunk.paper_id for h in assistant.search(q.question, scope, 2 * EVAL_K)]
                    metrics["retrieval.recall@20"], reasons["retrieval.recall@20"] = M.recall_at(deep, q.gold_papers, 20)
                except PaperchatError as exc:  # the answer stands; only this measure is missing
                    reasons["retrieval.recall@20"] = f"not measured: {exc}"
            if grader is not None:
                grades, why = grader.grade(q.question, q.gold_answer, ans.to_json(), {s.n: s.text for s in ans.sources})
                metrics.update(grades)
                reasons["judge"] = why
            row.update(answer=ans.to_json(), metrics=metrics, reasons=reasons, error=None)
        except PaperchatError as exc:
            row.update(answer=None, metrics={"answer.answered": 0.0, "answer.correct": 0.0, **ceiling(q)}, reasons={}, error=str(exc))
        rows.append(row)
    summary = summarize(rows)
    by_set: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_set[r["set"]].append(r)
        if r["topic"]:
            by_topic[r["topic"]].append(r)
    summary["sets"] = {name: summarize(rs) for name, rs in by_set.items()}
    summary["topics"] = {name: summarize(rs) for name, rs in by_topic.items()}
    summary["run"] = {
        "started": dt.datetime.now().isoformat(timespec="seconds"),
        "answerer": settings.answerer,
        "model": assistant.answerer().model,
        "judge": grader.model if grader is not None else None,
        "k": EVAL_K,
        "paper_k": settings.retrieval.k,
        "sets_sha256": shas,
        "judgments_sha256": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in judgments},
        "code_version": code_version(),
        "settings": json.loads(settings.model_dump_json()),
        "malformed_lines": [{"source": f.source, "reason": f.reason} for f in malformed],
        "ingest_failures": [{"source": f.source, "reason": f.reason} for f in ingest_failures],
    }
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "results.jsonl", "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def load_results(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(summary, per-question rows) of a results folder."""
    summary = json.loads((folder / "summary.json").read_text())
    rows = [json.loads(line) for line in open(folder / "results.jsonl", encoding="utf-8") if line.strip()]
    return summary, rows


def flat(summary: dict[str, Any]) -> dict[str, float]:
    """'retrieval.recall@10' -> value, for the headline groups."""
    out = {}
    for group in ("retrieval", "answer", "citations", "judge", "latency_ms"):
        for k, v in (summary.get(group) or {}).items():
            if isinstance(v, int | float):
                out[f"{group}.{k}"] = float(v)
    return out


def compare(base: Path, new: Path, fail_under: dict[str, float]) -> tuple[str, int]:
    """Per-metric deltas and changed questions; exit code 1 when a bound is broken."""
    bs, brows = load_results(base)
    ns, nrows = load_results(new)
    bf, nf = flat(bs), flat(ns)
    lines = ["| metric | base | new | delta |", "|---|---|---|---|"]
    for k in sorted(set(bf) | set(nf)):
        b, n = bf.get(k), nf.get(k)
        d = f"{n - b:+.4f}" if b is not None and n is not None else ""
        lines.append(f"| {k} | {b if b is not None else ''} | {n if n is not None else ''} | {d} |")
    bmap = {r["id"]: r for r in brows}
    changed = []
    for r in nrows:
        o = bmap.get(r["id"])
        if o and o["metrics"].get("answer.correct") != r["metrics"].get("answer.correct"):
            changed.append(f"- {r['id']}: correct {o['metrics'].get('answer.correct')} -> {r['metrics'].get('answer.correct')}")
    lines += ["", f"{len(changed)} questions changed:", *changed]
    code = 0
    for k, bound in fail_under.items():
        v = nf.get(k)
        if v is None or v < bound:
            lines.append(f"FAIL: {k} = {v} is under {bound}")
            code = 1
    return "\n".join(lines), code
