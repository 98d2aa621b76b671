"""`paperchat import FILE --collection NAME`: a BibTeX or CSL-JSON file (a Zotero export) as a personal
collection, asked about with `paperchat ask --collection SLUG`; `paperchat import --list` lists collections."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from paperchat.cli.common import open_assistant, settings_from
from paperchat.errors import InputError
from paperchat.text import printable


def cmd_import(args: argparse.Namespace) -> int:
    """Import the file; exit 0 when every entry joined, 1 when some were reported, 2 when none joined."""
    assistant = open_assistant(settings_from(args))
    if args.list:
        for c in assistant.collections():
            print(printable(f"{c.slug:<30} {c.papers:>6} papers  {c.name} (from {c.source})"))
        return 0
    if not args.file or not args.name:
        raise InputError("give a file and --collection NAME", "e.g. paperchat import zotero.bib --collection thesis")
    rep = assistant.import_collection(Path(args.file), args.name)
    if args.json:
        print(json.dumps({"collection": rep.slug, "name": rep.name, "entries": rep.entries, "in_store": rep.in_store,
                          "ingested": rep.ingested, "size": rep.size, "problems": [{"where": w, "why": y} for w, y in rep.problems]}))
    else:
        print(printable(rep.summary()))
        for where, why in rep.problems[:100]:
            print(printable(f"  {where}: {why}"), file=sys.stderr)
        if len(rep.problems) > 100:
            print(f"  ... and {len(rep.problems) - 100} more", file=sys.stderr)
        if rep.size:
            print(f"ask about it: paperchat ask --collection {rep.slug} 'QUESTION'")
    if not rep.problems:
        return 0
    return 1 if rep.size else 2


def register(sub: Any) -> None:
    """Add `import`."""
    im = sub.add_parser("import", help="import a BibTeX or CSL-JSON file (a Zotero export) as a personal collection")
    im.add_argument("file", nargs="?", help="a .bib or CSL .json file")
    im.add_argument("--collection", dest="name", help="the collection's name (made when new, added to when it exists)")
    im.add_argument("--list", action="store_true", help="list the collections")
    im.add_argument("--json", action="store_true", help="print the report as one JSON object")
    im.set_defaults(func=cmd_import)
