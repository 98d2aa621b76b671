"""`paperchat table --topic SLUG | --collection NAME | --papers ID,ID | --question "..." [--column C ...]
[--preset empirical|method|survey] [--format md|csv|json]`: a comparison table, every cell a quote with its page."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from paperchat.cli.common import int_in, open_assistant, settings_from
from paperchat.errors import InputError


def cmd_table(args: argparse.Namespace) -> int:
    """Build the table and print it in the chosen format (progress and timing on stderr)."""
    from paperchat.tables.columns import PRESETS, column_of

    for flag, dest in (("topic", "topic"), ("collection", "collection_name"), ("papers", "papers"), ("question", "question")):
        if getattr(args, dest) is not None and not getattr(args, dest).strip():
            raise InputError(f"--{flag} was given an empty value", "give a slug, ids or a question")
    columns = [column_of(c) for c in args.column or []]
    if args.preset or not columns:
        columns = PRESETS[args.preset or "empirical"] + columns
    core = open_assistant(settings_from(args))
    ids = core.comparison_papers(topic=args.topic, collection=args.collection_name, papers=args.papers, question=args.question, limit=args.limit)
    tty = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if tty:
            print(f"\rcells {done}/{total}", end="", file=sys.stderr, flush=True)

    table = core.comparison(ids, columns, progress)
    if tty:
        print(file=sys.stderr)
    if args.format == "json":
        print(json.dumps(table.to_json()))
    elif args.format == "csv":
        sys.stdout.write(table.to_csv())
    else:
        print(table.to_markdown())
    fresh = sum(1 for c in table.cells.values() if not c.cached)
    print(f"paperchat: {len(table.papers)} papers x {len(table.columns)} columns in {table.seconds:.1f} s "
          f"({fresh} cells computed, {len(table.cells) - fresh} from the cache)", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    """Add `table`."""
    t = sub.add_parser("table", help="compare papers in a table: one column per question, every cell a quote with its page")
    g = t.add_mutually_exclusive_group(required=True)
    g.add_argument("--topic", help="a topic's newest papers (hand-written or discovered slug, or a collection)")
    g.add_argument("--collection", dest="collection_name", help="a collection's papers")
    g.add_argument("--papers", help="comma-separated paper ids")
    g.add_argument("--question", help="the papers a topic answer over the library cites")
    t.add_argument("--column", action="append", help='a column: a name ("Datasets"), "Name=question", or a question; repeatable')
    t.add_argument("--preset", choices=["empirical", "method", "survey"], help="preset columns (default empirical when no --column)")
    t.add_argument("--limit", type=int_in(1, 50, "--limit"), default=10, help="papers of a topic or collection (newest first)")
    t.add_argument("--format", choices=["md", "csv", "json"], default="md")
    t.set_defaults(func=cmd_table)
