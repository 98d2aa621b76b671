"""`paperchat export bibtex --saved | --topic SLUG [--since D] [--until D] | --ids ID...`: BibTeX on stdout."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from paperchat.cli.common import open_assistant, settings_from
from paperchat.dates import user_day
from paperchat.errors import InputError


def cmd_export(args: argparse.Namespace) -> int:
    """Write the chosen papers as BibTeX to stdout (the number of entries to stderr)."""
    if not (args.saved or args.topic or args.ids):
        raise InputError("say what to export", "give --saved, --topic SLUG or --ids ID ...")
    since, until = user_day(args.since), user_day(args.until)
    text, n = open_assistant(settings_from(args)).bibtex(saved=args.saved, topic=args.topic, ids=args.ids, since=since, until=until)
    sys.stdout.write(text)
    print(f"paperchat: {n} entries", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    """Add `export bibtex`."""
    ex = sub.add_parser("export", help="export papers as BibTeX")
    ex_sub = ex.add_subparsers(dest="export_format", required=True)
    b = ex_sub.add_parser("bibtex", help="saved papers, a topic's papers, or given ids, as BibTeX on stdout")
    b.add_argument("--saved", action="store_true", help="the saved papers")
    b.add_argument("--topic", help="a topic's papers (hand-written or discovered slug)")
    b.add_argument("--ids", nargs="+", help="these papers (e.g. the ones an answer cites)")
    b.add_argument("--since", help="only papers from this date (YYYY-MM-DD)")
    b.add_argument("--until", help="only papers up to this date (YYYY-MM-DD)")
    b.set_defaults(func=cmd_export)
