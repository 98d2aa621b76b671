"""`paperchat eval ...`, `paperchat bench ...` and `paperchat doctor`: the evaluation, benchmark and
maintenance commands (kept apart from the everyday commands in cli.py). Same rules: parse, build Settings, call one function, print its result."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from paperchat.cli import _library, _settings
from paperchat.errors import PaperchatError


def cmd_eval(args: argparse.Namespace) -> int:
    from paperchat.evaluation import report, runner

    if args.eval_cmd == "run":
        settings = _settings(args)
        out = Path(args.out) if args.out else None
        if out is not None and "PAPERCHAT_DATA_DIR" not in __import__("os").environ and not args.data_dir:
            # the store the run needs is cached beside the results, so a second run ingests nothing
            settings = settings.model_copy(update={"data_dir": out.parent / ".store"})
        summary = runner.run([Path(s) for s in args.set], settings, Path(args.data) if args.data else None, out, args.answerer, args.judge)
        if out is not None:
            report.write_report(out)
        if args.json:
            print(json.dumps(summary))
        else:
            print(report.markdown(summary, []).split("## Worst")[0].strip())
            if out is not None:
                print(f"\nresults in {out}/ (results.jsonl, summary.json, report.md, report.html)")
        return 0
    if args.eval_cmd == "report":
        md, page = report.write_report(Path(args.folder))
        print(f"wrote {md} and {page}")
        return 0
    if args.eval_cmd == "compare":
        bounds = {}
        for b in args.fail_under or []:
            k, _, v = b.partition("=")
            try:
                bounds[k] = float(v)
            except ValueError as exc:
                raise PaperchatError(f"bad bound {b!r}", "write metric=value, e.g. retrieval.recall@10=0.85") from exc
        text, code = runner.compare(Path(args.base), Path(args.new), bounds)
        print(text)
        return code
    if args.eval_cmd == "calibrate":
        from paperchat.evaluation.calibrate import sweep, top_scores
        from paperchat.evaluation.questions import load_set

        settings = _settings(args)
        lib = _library(settings)
        data = Path(args.data) if args.data else None
        qs = [q for s in args.set for q in load_set(Path(s))[0]]
        runner.prepare(lib, qs, data)
        res = sweep(top_scores(lib, qs, data))
        res["current"] = settings.retrieval.abstain_below
        if args.json:
            print(json.dumps(res))
        else:
            print(f"{res['answerable']} answerable, {res['unanswerable']} unanswerable questions")
            print(f"lowest best-passage score of an answerable question: {res['answerable_min_top_dense']}")
            print(f"best-passage scores of the unanswerable ones: {res['unanswerable_top_dense']}")
            print("threshold  wrong refusals  right refusals  decision accuracy")
            for r in res["table"][::5]:
                print(f"{r['threshold']:>9.2f}  {r['wrong_refusals']:>14}  {r['right_refusals']:>14}  {r['decision_accuracy']:>17.3f}")
            print(f"recommended PAPERCHAT_RETRIEVAL__ABSTAIN_BELOW={res['recommended']} (now {res['current']})")
        return 0
    if args.eval_cmd == "beir":
        from paperchat.evaluation.beir import Bench, load_scifact, tune
        from paperchat.providers.embedders import get_embedder

        settings = _settings(args)
        emb = get_embedder(settings)
        cache = settings.data_dir / "cache"
        p = settings.retrieval
        result: dict[str, object] = {}
        if args.tune:
            train = Bench(load_scifact(Path(args.folder), "train"), emb, cache)
            result["tuned_on_train"] = tune(train)
        test = Bench(load_scifact(Path(args.folder), "test"), emb, cache)
        params = result.get("tuned_on_train") or {"rrf_k": p.rrf_k, "dense_weight": p.dense_weight, "lexical_weight": p.lexical_weight, "use_windows": True}
        assert isinstance(params, dict)
        result["test"] = test.evaluate(int(params["rrf_k"]), float(params["dense_weight"]), float(params["lexical_weight"]), bool(params.get("use_windows", True)))
        result["params"] = params
        result["queries"] = len(test.data.queries)
        if args.json:
            print(json.dumps(result))
        else:
            for name, m in result["test"].items():  # type: ignore[union-attr]
                print(f"{name:<7} nDCG@10 {m['ndcg@10']:.4f}  Recall@100 {m['recall@100']:.4f}")
        return 0
    raise PaperchatError(f"unknown eval command {args.eval_cmd}")


def cmd_bench(args: argparse.Namespace) -> int:
    from paperchat import bench

    settings = _settings(args)
    res: dict[str, object]
    if args.what == "ingest":
        res = {"abstracts": bench.bench_ingest(Path(args.source), args.limit, settings)}
        if args.pdfs:
            pdfs = sorted(Path(args.pdfs).rglob("*.pdf"))[: args.pdf_limit]
            res["pdfs"] = bench.bench_ingest_pdfs(pdfs, settings)
    elif args.what == "query":
        rows = [json.loads(line) for line in open(args.source, encoding="utf-8") if line.strip()]
        qs = [(r["question"], r["topic"]) for r in rows if r.get("scope") == "topic"]
        lib = _library(settings)
        papers = [p.id for p in lib.catalog.iter_papers() if p.pdf_path][: args.papers]
        lib.close()
        sizes = [None if s == "all" else int(s) for s in args.sizes.split(",")]
        res = {"query": bench.bench_query_sizes(settings, qs, papers, sizes)}
    else:
        res = {"startup": bench.bench_startup(settings, args.source, args.topic)}
    if args.out:
        out = Path(args.out)
        old = json.loads(out.read_text()) if out.exists() else {}
        old.update(res)
        old["machine"] = bench_machine()
        out.write_text(json.dumps(old, indent=2))
        out.with_suffix(".svg").write_text(bench.chart_svg(old))
    if args.json:
        print(json.dumps(res))
    else:
        for part, vals in res.items():
            print(f"[{part}]")
            for k, v in vals.items():  # type: ignore[attr-defined]
                print(f"  {k:<28} {v}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check (exit 0 healthy, 1 problems found) or repair the data dir; see paperchat.doctor."""
    from paperchat import doctor

    settings = _settings(args)
    out: dict[str, Any] = {}
    if args.repair:
        rep = doctor.repair(settings)
        out["repair"] = {"actions": rep.actions, "need_pdf": rep.need_pdf, "todo": rep.todo}
        if not args.json:
            for line in rep.actions or ["nothing to repair"]:
                print(f"repaired: {line}")
            if rep.need_pdf:
                shown = ", ".join(rep.need_pdf[:10]) + (" ..." if len(rep.need_pdf) > 10 else "")
                print(f"to do: {len(rep.need_pdf)} papers need their PDF again ({shown}): paperchat ingest pdf FILE --paper-id ID")
            for line in rep.todo:
                print(f"to do: {line}")
    health = doctor.check(settings)
    out.update(ok=health.ok, problems=health.problems, summary=health.summary)
    if args.json:
        print(json.dumps(out))
    elif health.ok:
        print(f"ok: {health.summary}; the lexical index matches the store")
    else:
        for line in health.problems:
            print(f"problem: {line}")
        if not args.repair:
            print(f"run `{doctor.REPAIR}` to fix what can be fixed")
    return 0 if health.ok else 1


def bench_machine() -> str:
    import os
    import platform

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def add_tool_parsers(sub: Any) -> None:
    """Add the `eval`, `bench` and `doctor` sub-commands to the main parser's subparsers."""
    ev = sub.add_parser("eval", help="batch evaluation: run, report, compare, beir")
    ev_sub = ev.add_subparsers(dest="eval_cmd", required=True)
    er = ev_sub.add_parser("run", help="run question sets through the pipeline")
    er.add_argument("--set", action="append", required=True, help="a question set (JSONL); repeatable")
    er.add_argument("--data", help="folder with pdfs/ and abstracts/ (ingested as needed)")
    er.add_argument("--answerer", help="override PAPERCHAT_ANSWERER")
    er.add_argument("--out", help="results folder")
    er.add_argument("--judge", action="store_true", help="also grade correctness and faithfulness with an LLM (PAPERCHAT_JUDGE)")
    er.add_argument("--json", action="store_true", help="print summary.json")
    rp = ev_sub.add_parser("report", help="write report.md and report.html of a results folder")
    rp.add_argument("folder")
    cp = ev_sub.add_parser("compare", help="compare two runs; exit 1 when a --fail-under bound is broken")
    cp.add_argument("base")
    cp.add_argument("new")
    cp.add_argument("--fail-under", action="append", help="metric=value, e.g. retrieval.recall@10=0.85")
    cb = ev_sub.add_parser("calibrate", help="sweep the abstention threshold over question sets")
    cb.add_argument("--set", action="append", required=True, help="a question set (JSONL); repeatable")
    cb.add_argument("--data", help="folder with pdfs/ and abstracts/ (ingested as needed)")
    cb.add_argument("--json", action="store_true")
    bz = ev_sub.add_parser("beir", help="SciFact: BM25, dense and hybrid nDCG@10 / Recall@100 on the test claims")
    bz.add_argument("folder")
    bz.add_argument("--tune", action="store_true", help="tune the fusion on the train claims first")
    bz.add_argument("--json", action="store_true")
    ev.set_defaults(func=cmd_eval)

    bn = sub.add_parser("bench", help="benchmarks: ingest (ours / MiniLM alone / naive LangChain, re-ingest), query latency by store size, startup and memory")
    bn.add_argument("what", choices=["ingest", "query", "startup"])
    bn.add_argument("source", help="ingest: an abstracts JSONL; query: a topic question set (JSONL) over PAPERCHAT_DATA_DIR; startup: a question")
    bn.add_argument("--limit", type=int, help="ingest: only the first N records")
    bn.add_argument("--pdfs", help="ingest: also a folder of PDFs")
    bn.add_argument("--pdf-limit", type=int, default=40, help="ingest: at most N PDFs of --pdfs")
    bn.add_argument("--sizes", default="1000,10000,all", help="query: store sizes in abstracts (subsets copied with their vectors)")
    bn.add_argument("--papers", type=int, default=10, help="query: paper-scope questions over N papers with PDFs")
    bn.add_argument("--topic", default="rag", help="startup: the topic of the question")
    bn.add_argument("--out", help="merge the results into this JSON file (and write a .svg chart beside it)")
    bn.add_argument("--json", action="store_true")
    bn.set_defaults(func=cmd_bench)

    dr = sub.add_parser("doctor", help="check that the catalogue, the vector store and the lexical index agree; --repair fixes them")
    dr.add_argument("--repair", action="store_true", help="move damaged files aside, re-embed missing chunks, drop orphans, rebuild the lexical index")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_doctor)

