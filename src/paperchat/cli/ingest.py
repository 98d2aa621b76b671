"""`paperchat ingest abstracts|pdf|arxiv|demo` and `paperchat remove`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from paperchat.cli.common import int_in, open_assistant, print_report, settings_from
from paperchat.errors import InputError


def _progress(args: argparse.Namespace) -> bool | None:
    """No progress bar with --json (the output is one object); else a bar when stderr is a terminal."""
    return False if args.json else None


def cmd_abstracts(args: argparse.Namespace) -> int:
    """Ingest arXiv metadata files (JSONL or JSON arrays, .gz ok), each read once as a stream."""
    if not args.ray and (args.workers or args.ray_batch):
        raise InputError("--workers and --ray-batch go with --ray", "add --ray HOST:PORT (a Ray cluster's head), or leave them out")
    assistant = open_assistant(settings_from(args))
    paths = [Path(p) for p in args.paths]
    if args.ray:
        return print_report(assistant.ingest_record_files_on_ray(paths, args.ray, args.workers, args.ray_batch, _progress(args)), args.json)
    return print_report(assistant.ingest_record_files(paths, _progress(args)), args.json)


def cmd_pdf(args: argparse.Namespace) -> int:
    """Ingest PDF files and folders (unchanged files are skipped unparsed)."""
    if args.paper_id and len(args.paths) != 1:
        raise InputError("--paper-id needs exactly one PDF", "give one file, or leave --paper-id out")
    assistant = open_assistant(settings_from(args))
    folders = [Path(p) for p in args.paths if Path(p).is_dir()]
    if folders:
        print(f"reading {assistant.count_pdfs(folders)} PDF file(s) from {', '.join(map(str, folders))}", file=sys.stderr)
    rep = assistant.ingest_pdfs([Path(p) for p in args.paths], paper_id=args.paper_id, show_progress=_progress(args))
    return print_report(rep, args.json)


def cmd_arxiv(args: argparse.Namespace) -> int:
    """Ingest an arXiv API answer: a live query or a saved Atom response."""
    if not args.file and not args.query:
        raise InputError("give --query or --file", "for example: paperchat ingest arxiv --query 'cat:cs.CL AND all:retrieval'")
    assistant = open_assistant(settings_from(args))
    rep = assistant.ingest_arxiv(args.query, Path(args.file) if args.file else None, args.max_results)
    return print_report(rep, args.json)


def cmd_demo(args: argparse.Namespace) -> int:
    """Ingest the bundled demo corpus (nothing to do when it is in already)."""
    from paperchat.assistant import IngestReport  # imports the library: only when a command needs it

    assistant = open_assistant(settings_from(args))
    return print_report(assistant.load_demo(show_progress=_progress(args)) or IngestReport(), args.json)


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove a paper and its chunks."""
    n = open_assistant(settings_from(args)).remove_paper(args.paper)
    print(f"removed paper {args.paper} ({n} chunks)")
    return 0


def register(sub: Any) -> None:
    """Add `ingest` (abstracts, pdf, arxiv, demo) and `remove`."""
    ing = sub.add_parser("ingest", help="ingest abstracts, PDFs, arXiv API results or the demo corpus")
    kinds = ing.add_subparsers(dest="kind", required=True)
    a = kinds.add_parser("abstracts", help="arXiv metadata JSONL (listing or Kaggle shape, .gz ok)")
    a.add_argument("paths", nargs="+")
    a.add_argument("--ray", metavar="HOST:PORT", help="embed on this Ray cluster (its head's address, or 'auto'), writing into the Chroma server "
                   "PAPERCHAT_CHROMA_URL; needs the `dist` extra")
    a.add_argument("--workers", type=int_in(1, 4096, "--workers"), help="with --ray: embedding workers, one CPU each (default: one per CPU of the cluster)")
    a.add_argument("--ray-batch", type=int_in(1, 100_000, "--ray-batch"), help="with --ray: records per Ray task (default 256)")
    a.set_defaults(func=cmd_abstracts)
    pdf = kinds.add_parser("pdf", help="PDF files or folders")
    pdf.add_argument("paths", nargs="+")
    pdf.add_argument("--paper-id", help="attach the PDF to this paper id (one file only)")
    pdf.set_defaults(func=cmd_pdf)
    ax = kinds.add_parser("arxiv", help="arXiv API: a live query or a saved Atom response")
    ax.add_argument("--query", help="arXiv search_query, e.g. 'cat:cs.CL AND abs:retrieval'")
    ax.add_argument("--file", help="a saved Atom XML response")
    ax.add_argument("--max-results", type=int_in(1, 2000, "--max-results"), default=100)
    ax.set_defaults(func=cmd_arxiv)
    demo = kinds.add_parser("demo", help="the bundled demo corpus")
    demo.set_defaults(func=cmd_demo)
    for sp in (a, pdf, ax, demo):
        sp.add_argument("--json", action="store_true", help="print the summary as one JSON object")

    r = sub.add_parser("remove", help="remove a paper and its chunks")
    r.add_argument("--paper", required=True)
    r.set_defaults(func=cmd_remove)
