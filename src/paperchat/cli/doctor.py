"""`paperchat doctor [--repair]`: check (exit 0 healthy, 1 problems found) or repair the data dir."""

from __future__ import annotations

import argparse
import json
from typing import Any

from paperchat.assistant import REPAIR, check_data_dir, repair_data_dir
from paperchat.cli.common import settings_from


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check that the catalogue, the vector store and the lexical index agree; --repair fixes them first."""
    settings = settings_from(args)
    out: dict[str, Any] = {}
    if args.repair:
        rep = repair_data_dir(settings)
        out["repair"] = {"actions": rep.actions, "need_pdf": rep.need_pdf, "todo": rep.todo}
        if not args.json:
            for line in rep.actions or ["nothing to repair"]:
                print(f"repaired: {line}")
            if rep.need_pdf:
                shown = ", ".join(rep.need_pdf[:10]) + (" ..." if len(rep.need_pdf) > 10 else "")
                print(f"to do: {len(rep.need_pdf)} papers need their PDF again ({shown}): paperchat ingest pdf FILE --paper-id ID")
            for line in rep.todo:
                print(f"to do: {line}")
    health = check_data_dir(settings)
    out.update(ok=health.ok, problems=health.problems, summary=health.summary)
    if args.json:
        print(json.dumps(out))
    elif health.ok:
        print(f"ok: {health.summary}; the lexical index matches the store")
    else:
        for line in health.problems:
            print(f"problem: {line}")
        if not args.repair:
            print(f"run `{REPAIR}` to fix what can be fixed")
    return 0 if health.ok else 1


def register(sub: Any) -> None:
    """Add `doctor`."""
    dr = sub.add_parser("doctor", help="check that the catalogue, the vector store and the lexical index agree; --repair fixes them")
    dr.add_argument("--repair", action="store_true", help="move damaged files aside, re-embed missing chunks, drop orphans, rebuild the lexical index")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_doctor)
