"""`paperchat update [--every 6h]`: the newest arXiv papers of the configured categories, ingested."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

from paperchat.cli.common import open_assistant, settings_from
from paperchat.errors import PaperchatError
from paperchat.text import printable

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MIN_EVERY_S = 60


def duration(value: str) -> float:
    """An argparse type: '6h', '30m', '1d', '90s' (at least a minute) as seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", value.lower())
    if not m:
        raise argparse.ArgumentTypeError(f"--every takes a number and a unit (s, m, h, d), e.g. 6h, not {value!r}")
    seconds = float(m.group(1)) * _UNITS[m.group(2)]
    if seconds < MIN_EVERY_S:
        raise argparse.ArgumentTypeError(f"--every must be at least 1m (arXiv lists new papers once a day), not {value!r}")
    return seconds


def _once(args: argparse.Namespace) -> int:
    rep = open_assistant(settings_from(args)).update()
    if args.json:
        print(json.dumps(rep.to_json()))
    else:
        print(printable(rep.summary()))
        for f in rep.failed[:20]:
            print(printable(f"  failed: {f.source}: {f.reason}"), file=sys.stderr)
    return 1 if rep.failed else 0


def cmd_update(args: argparse.Namespace) -> int:
    """One update; with --every, one per interval until Ctrl-C (a failed round is reported and retried next
    time, the loop goes on)."""
    if args.every is None:
        return _once(args)
    try:
        while True:
            try:
                _once(args)
            except PaperchatError as exc:
                print(printable(f"paperchat: error: {exc}"), file=sys.stderr)
            print(f"paperchat: next update in {args.every:g} s (Ctrl-C stops)", file=sys.stderr, flush=True)
            time.sleep(args.every)
    except KeyboardInterrupt:
        print("paperchat: update stopped (a page cut short is finished by the next run)", file=sys.stderr)
        return 0


def register(sub: Any) -> None:
    """Add `update`."""
    u = sub.add_parser("update", help="fetch the newest arXiv papers of the configured categories and ingest them")
    u.add_argument("--every", type=duration, default=None, help="keep running: update every interval (e.g. 6h, 30m, 1d)")
    u.add_argument("--json", action="store_true", help="print the report as one JSON object")
    u.set_defaults(func=cmd_update)
