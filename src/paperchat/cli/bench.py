"""`paperchat bench ingest|ray|query|startup|viewer`: benchmarks against a baseline measured in the same run
(`paperchat.bench`, imported only here; its naive baseline needs the `dev` extra)."""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Any

from paperchat.cli.common import int_in, open_assistant, settings_from
from paperchat.errors import InputError


def machine() -> str:
    """One line about this machine, stored with the results."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def cmd_bench(args: argparse.Namespace) -> int:
    """Run one benchmark; print its numbers (or JSON) and merge them into --out."""
    from paperchat import bench
    from paperchat.evaluation.lab import Lab

    settings = settings_from(args)
    res: dict[str, Any]
    if args.what == "ingest":
        res = {"abstracts": bench.bench_ingest(Path(args.source), args.limit, settings)}
        if args.pdfs:
            pdfs = sorted(Path(args.pdfs).rglob("*.pdf"))[: args.pdf_limit]
            res["pdfs"] = bench.bench_ingest_pdfs(pdfs, settings)
    elif args.what == "ray":
        if not args.ray:
            raise InputError("bench ray needs --ray HOST:PORT", "the address of a Ray cluster's head")
        counts = [int(w) for w in args.workers.split(",")]
        res = {"ray": bench.bench_ray_ingest(Path(args.source), args.limit, settings, args.ray, counts, args.ray_batch)}
    elif args.what == "query":
        rows = [json.loads(line) for line in open(args.source, encoding="utf-8") if line.strip()]
        qs = [(r["question"], r["topic"]) for r in rows if r.get("scope") == "topic"]
        assistant = open_assistant(settings)
        papers = Lab(assistant).papers_with_pdf(args.papers)
        assistant.close()
        sizes = [None if s == "all" else int(s) for s in args.sizes.split(",")]
        res = {"query": bench.bench_query_sizes(settings, qs, papers, sizes)}
    elif args.what == "viewer":
        res = {"viewer": bench.bench_viewer(Path(args.source), settings)}
        if args.set:
            rows = [json.loads(line) for line in open(args.set, encoding="utf-8") if line.strip()]
            res["placement"] = bench.bench_placement(rows, Path(args.pdf_root) if args.pdf_root else Path(args.set).parent.parent / "pdfs", settings)
    else:
        res = {"startup": bench.bench_startup(settings, args.source, args.topic)}
    if args.out:
        out = Path(args.out)
        old = json.loads(out.read_text()) if out.exists() else {}
        old.update(res)
        old["machine"] = machine()
        out.write_text(json.dumps(old, indent=2))
        out.with_suffix(".svg").write_text(bench.chart_svg(old))
    if args.json:
        print(json.dumps(res))
    else:
        for part, vals in res.items():
            print(f"[{part}]")
            for k, v in vals.items():
                print(f"  {k:<28} {v}")
    return 0


def register(sub: Any) -> None:
    """Add `bench`."""
    bn = sub.add_parser(
        "bench",
        help="benchmarks: ingest (ours / MiniLM alone / naive LangChain, re-ingest), query latency by store size, "
        "startup and memory, the paper viewer",
    )
    bn.add_argument("what", choices=["ingest", "ray", "query", "startup", "viewer"])
    bn.add_argument(
        "source",
        help="ingest, ray: an abstracts JSONL; query: a topic question set (JSONL) over PAPERCHAT_DATA_DIR; "
        "startup: a question; viewer: a PDF",
    )
    bn.add_argument("--set", help="viewer: also place the evidence quotes (and AskPDF's citations) of this paper question set")
    bn.add_argument("--pdf-root", help="viewer --set: the folder the set's `pdf` paths are relative to (default: ../pdfs beside the set's folder)")
    bn.add_argument("--limit", type=int_in(1, 10_000_000, "--limit"), help="ingest, ray: only the first N records")
    bn.add_argument("--ray", metavar="HOST:PORT", help="ray: the Ray cluster (the ingest writes into PAPERCHAT_CHROMA_URL, an empty scratch server)")
    bn.add_argument("--workers", default="1,2", help="ray: the numbers of workers to measure, e.g. 1,2")
    bn.add_argument("--ray-batch", type=int_in(1, 100_000, "--ray-batch"), help="ray: records per Ray task (default 256)")
    bn.add_argument("--pdfs", help="ingest: also a folder of PDFs")
    bn.add_argument("--pdf-limit", type=int_in(1, 100_000, "--pdf-limit"), default=40, help="ingest: at most N PDFs of --pdfs")
    bn.add_argument("--sizes", default="1000,10000,all", help="query: store sizes in abstracts (subsets copied with their vectors)")
    bn.add_argument("--papers", type=int_in(1, 100_000, "--papers"), default=10, help="query: paper-scope questions over N papers with PDFs")
    bn.add_argument("--topic", default="rag", help="startup: the topic of the question")
    bn.add_argument("--out", help="merge the results into this JSON file (and write a .svg chart beside it)")
    bn.add_argument("--json", action="store_true")
    bn.set_defaults(func=cmd_bench)
