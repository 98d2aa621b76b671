"""`paperchat digest [--since DATE] [--peek]`: new papers in the followed topics since the last visit;
`paperchat follow SLUG [--off]`: follow a hand-written or discovered topic or a collection."""

from __future__ import annotations

import argparse
import json
from typing import Any

from paperchat.assistant import printable, user_day
from paperchat.cli.common import int_in, open_assistant, settings_from


def cmd_digest(args: argparse.Namespace) -> int:
    """Print the digest (or JSON) and, unless --peek or --since, move the last visit to now."""
    d = open_assistant(settings_from(args)).digest(since=user_day(args.since), peek=args.peek)
    if args.json:
        print(json.dumps({
            "since": d.since.isoformat(), "until": d.until.isoformat(), "basis": d.basis, "advanced": d.advanced,
            "new_in_store": d.new_in_store, "total": d.total,
            "topics": [{"slug": t.slug, "name": t.name, "kind": t.kind, "papers": [p.id for p in t.papers]} for t in d.topics],
        }))
        return 0
    print(printable(d.headline()))
    for t in d.topics:
        if not t.papers:
            continue
        print(printable(f"\n## {t.name} [{t.slug}]: {len(t.papers)} new"))
        for p in t.papers[: args.limit]:
            print(printable(f"  {p.date or '':10} {p.id:<12} {p.title[:100]}"))
        if len(t.papers) > args.limit:
            print(f"  ... and {len(t.papers) - args.limit} more (--limit)")
    if not d.advanced:
        print("(the last visit was not moved)")
    return 0


def cmd_follow(args: argparse.Namespace) -> int:
    """Follow or unfollow a topic or collection."""
    open_assistant(settings_from(args)).follow(args.slug, on=not args.off)
    print(f"{'unfollowed' if args.off else 'following'} {args.slug}")
    return 0


def register(sub: Any) -> None:
    """Add `digest` and `follow`."""
    d = sub.add_parser("digest", help="new papers in the topics you follow since your last visit")
    d.add_argument("--since", help="papers ingested since this day (YYYY-MM-DD, UTC) instead of the last visit; does not move it")
    d.add_argument("--peek", action="store_true", help="show the digest without moving the last visit")
    d.add_argument("--limit", type=int_in(1, 10_000, "--limit"), default=20, help="papers shown per topic")
    d.add_argument("--json", action="store_true", help="print the digest as one JSON object")
    d.set_defaults(func=cmd_digest)
    f = sub.add_parser("follow", help="follow a topic (hand-written or discovered) or a collection")
    f.add_argument("slug")
    f.add_argument("--off", action="store_true", help="unfollow it")
    f.set_defaults(func=cmd_follow)
