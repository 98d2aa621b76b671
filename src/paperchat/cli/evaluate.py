"""`paperchat eval run|report|compare|calibrate|beir|table|feed`: the evaluation commands (the library is
`paperchat.evaluation`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from paperchat.cli.common import int_in, open_assistant, settings_from
from paperchat.errors import InputError


def cmd_run(args: argparse.Namespace) -> int:
    """Run question sets through the pipeline; print the headline table (or summary.json)."""
    from paperchat.evaluation import report, runner

    out = Path(args.out) if args.out else None
    # the store the run needs is cached beside the results, so a second run ingests nothing
    settings = settings_from(args, default_data_dir=out.parent / ".store" if out is not None else None)
    summary = runner.run(
        [Path(s) for s in args.set], settings, Path(args.data) if args.data else None, out, None, args.judge, [Path(j) for j in args.judgments or []]
    )
    if out is not None:
        report.write_report(out)
    if args.json:
        print(json.dumps(summary))
    else:
        print(report.markdown(summary, []).split("## Worst")[0].strip())
        if out is not None:
            print(f"\nresults in {out}/ (results.jsonl, summary.json, report.md, report.html)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write report.md and report.html of a results folder."""
    from paperchat.evaluation import report

    md, page = report.write_report(Path(args.folder))
    print(f"wrote {md} and {page}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Per-metric deltas of two runs; exit 1 when a --fail-under bound is broken."""
    from paperchat.evaluation import runner

    bounds = {}
    for b in args.fail_under or []:
        k, _, v = b.partition("=")
        try:
            bounds[k] = float(v)
        except ValueError as exc:
            raise InputError(f"bad bound {b!r}", "write metric=value, e.g. retrieval.recall@10=0.85") from exc
    text, code = runner.compare(Path(args.base), Path(args.new), bounds)
    print(text)
    return code


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Sweep the abstention threshold over question sets and recommend one."""
    from paperchat.evaluation import runner
    from paperchat.evaluation.calibrate import stratified_halves, sweep, sweep_asked, sweep_evidence, top_scores
    from paperchat.evaluation.questions import load_set

    settings = settings_from(args)
    assistant = open_assistant(settings)
    data = Path(args.data) if args.data else None
    qs = [q for s in args.set for q in load_set(Path(s))[0]]
    runner.prepare(assistant, qs, data)
    rows = top_scores(assistant, qs, data, evidence=True)
    res = sweep(rows)
    res["current"] = settings.retrieval.abstain_below
    res["evidence"] = sweep_evidence(rows, stratified_halves(qs), settings.answers.refuse_missing_names)
    res["evidence"]["current"] = settings.answers.refuse_below
    res["asked"] = sweep_asked(rows, stratified_halves(qs), settings.answers.refuse_below, settings.answers.refuse_missing_names)
    res["asked"]["current"] = settings.answers.refuse_asked_below
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"{res['answerable']} answerable, {res['unanswerable']} unanswerable questions")
    print(f"lowest best-passage score of an answerable question: {res['answerable_min_top_dense']}")
    print(f"best-passage scores of the unanswerable ones: {res['unanswerable_top_dense']}")
    print("threshold  wrong refusals  right refusals  decision accuracy")
    for r in res["table"][::5]:
        print(f"{r['threshold']:>9.2f}  {r['wrong_refusals']:>14}  {r['right_refusals']:>14}  {r['decision_accuracy']:>17.3f}")
    print(f"recommended PAPERCHAT_RETRIEVAL__ABSTAIN_BELOW={res['recommended']} (now {res['current']})")
    ev = res["evidence"]
    for mine, other in (("a", "b"), ("b", "a")):
        m = ev[f"measured_on_{other}"]
        print(
            f"evidence threshold chosen on half {mine}: {ev[f'chosen_on_{mine}']}; on half {other}: {m['right_refusals']} of "
            f"{m['unanswerable']} unanswerable refused, {m['wrong_refusals']} of {m['answerable']} answerable wrongly refused"
        )
    m = ev["on_all"]
    print(
        f"recommended PAPERCHAT_ANSWERS__REFUSE_BELOW={ev['recommended']} (now {ev['current']}): "
        f"{m['right_refusals']} of {m['unanswerable']} right refusals, {m['wrong_refusals']} of {m['answerable']} wrong"
    )
    sk = res["asked"]
    print(f"asked-words rule (PAPERCHAT_ANSWERS__REFUSE_ASKED_BELOW, now {sk['current']}), with the evidence threshold as it is:")
    for r in sk["table"]:
        print(f"{r['threshold']:>9.2f}  {r['wrong_refusals']:>14}  {r['right_refusals']:>14}  {r['decision_accuracy']:>17.3f}")
    for mine, other in (("a", "b"), ("b", "a")):
        m = sk[f"measured_on_{other}"]
        print(
            f"asked threshold chosen on half {mine}: {sk[f'chosen_on_{mine}']}; on half {other}: {m['right_refusals']} of "
            f"{m['unanswerable']} unanswerable refused, {m['wrong_refusals']} of {m['answerable']} answerable wrongly refused"
        )
    return 0


def cmd_beir(args: argparse.Namespace) -> int:
    """SciFact: BM25, dense and hybrid nDCG@10 and Recall@100 on the test claims."""
    from paperchat.evaluation.beir import scifact

    result = scifact(settings_from(args), Path(args.folder), args.tune)
    if args.json:
        print(json.dumps(result))
    else:
        for name, m in result["test"].items():
            print(f"{name:<7} nDCG@10 {m['ndcg@10']:.4f}  Recall@100 {m['recall@100']:.4f}")
    return 0


def cmd_feed(args: argparse.Namespace) -> int:
    """The For you model against simulated researchers, beside the two baselines."""
    from paperchat.evaluation.feed_eval import evaluate_feed

    core = open_assistant(settings_from(args))
    cutoff = dt.date.fromisoformat(args.cutoff) if args.cutoff else None
    ev = evaluate_feed(core, cutoff=cutoff, weeks=args.weeks, seeds=args.seeds)
    if not ev.researchers:
        raise InputError("no simulated researcher: the library needs dated papers with cross-list categories", "ingest the abstracts first")
    text = ev.table()
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    """Gold comparison-table cells: holds-gold, not-stated precision and recall, citation validity."""
    from paperchat.evaluation.table_eval import evaluate_table

    core = open_assistant(settings_from(args))
    ev = evaluate_table(core, Path(args.gold), Path(args.data))
    print(ev.table())
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps({"A": ev.summary("A"), "B": ev.summary("B"), "all": ev.summary()}, indent=1))
        (out / "cells.jsonl").write_text("".join(json.dumps(c.__dict__) + "\n" for c in ev.cells))
        (out / "report.md").write_text(ev.table() + "\n")
    return 0


def register(sub: Any) -> None:
    """Add `eval` and its sub-commands."""
    ev = sub.add_parser("eval", help="batch evaluation: run, report, compare, beir, table, feed")
    ev_sub = ev.add_subparsers(dest="eval_cmd", required=True)
    er = ev_sub.add_parser("run", help="run question sets through the pipeline")
    er.add_argument("--set", action="append", required=True, help="a question set (JSONL); repeatable")
    er.add_argument("--data", help="folder with pdfs/ and abstracts/ (ingested as needed)")
    er.add_argument("--answerer", help="override PAPERCHAT_ANSWERER")
    er.add_argument("--out", help="results folder")
    er.add_argument("--judge", action="store_true", help="also grade correctness and faithfulness with an LLM (PAPERCHAT_JUDGE)")
    er.add_argument("--json", action="store_true", help="print summary.json")
    er.add_argument(
        "--judgments", action="append", help="graded (question, paper) judgments (JSONL, e.g. eval/topic_judged.jsonl): adds judged precision@10; repeatable"
    )
    er.set_defaults(func=cmd_run)
    rp = ev_sub.add_parser("report", help="write report.md and report.html of a results folder")
    rp.add_argument("folder")
    rp.set_defaults(func=cmd_report)
    cp = ev_sub.add_parser("compare", help="compare two runs; exit 1 when a --fail-under bound is broken")
    cp.add_argument("base")
    cp.add_argument("new")
    cp.add_argument("--fail-under", action="append", help="metric=value, e.g. retrieval.recall@10=0.85")
    cp.set_defaults(func=cmd_compare)
    cb = ev_sub.add_parser("calibrate", help="sweep the abstention threshold over question sets")
    cb.add_argument("--set", action="append", required=True, help="a question set (JSONL); repeatable")
    cb.add_argument("--data", help="folder with pdfs/ and abstracts/ (ingested as needed)")
    cb.add_argument("--json", action="store_true")
    cb.set_defaults(func=cmd_calibrate)
    bz = ev_sub.add_parser("beir", help="SciFact: BM25, dense and hybrid nDCG@10 / Recall@100 on the test claims")
    bz.add_argument("folder")
    bz.add_argument("--tune", action="store_true", help="tune the fusion on the train claims first")
    bz.add_argument("--json", action="store_true")
    bz.set_defaults(func=cmd_beir)
    tb = ev_sub.add_parser("table", help="comparison-table cells against gold cells written by reading")
    tb.add_argument("--gold", default="eval/table_gold.jsonl", help="gold cells (JSONL)")
    tb.add_argument("--data", required=True, help="folder with pdfs/ and abstracts/ (the gold's papers are ingested as needed)")
    tb.add_argument("--out", help="results folder (summary.json, cells.jsonl, report.md)")
    tb.set_defaults(func=cmd_table)
    fe = ev_sub.add_parser("feed", help="For you: precision@10 / nDCG@10 for simulated researchers against newest-first and followed-topic baselines")
    fe.add_argument("--cutoff", help="ratings before this day, feeds after it (YYYY-MM-DD; default: --weeks before the newest paper)")
    fe.add_argument("--weeks", type=int_in(1, 52, "--weeks"), default=8, help="weekly feeds after the cutoff")
    fe.add_argument("--seeds", type=int_in(1, 20, "--seeds"), default=3, help="rating draws per researcher and k")
    fe.add_argument("--out", help="also write the table to this file")
    fe.set_defaults(func=cmd_feed)
