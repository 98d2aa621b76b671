"""`paperchat digest [--since DATE] [--peek] [--for-you]`: new papers in the followed topics since the last visit;
`paperchat follow SLUG [--off]`: follow a hand-written or discovered topic or a collection;
`paperchat rate ID up|down|clear`: "more like this" / "not interested";
`paperchat feed [--since DATE] [--k N] [--json]`: new papers ranked by what you rate (For you)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from paperchat.cli.common import int_in, open_assistant, settings_from
from paperchat.dates import user_day
from paperchat.text import printable


def cmd_digest(args: argparse.Namespace) -> int:
    """Print the digest (or JSON) and, unless --peek or --since, move the last visit to now."""
    d = open_assistant(settings_from(args)).digest(since=user_day(args.since), peek=args.peek, for_you=args.for_you)
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
            print(printable(f"  {str(p.date or ''):10} {p.id:<12} {p.title[:100]}"))
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


RATINGS = {"up": 1, "down": -1, "clear": 0}


def cmd_rate(args: argparse.Namespace) -> int:
    """Rate a paper up or down, or clear its rating."""
    core = open_assistant(settings_from(args))
    core.rate(args.paper_id, RATINGS[args.rating])
    n = core.ratings()
    ups = sum(1 for v in n.values() if v > 0)
    what = {"up": "more like this", "down": "not interested", "clear": "rating cleared"}[args.rating]
    print(f"{args.paper_id}: {what} ({ups} rated up, {len(n) - ups} down; `paperchat feed` ranks by them)")
    return 0


def cmd_feed(args: argparse.Namespace) -> int:
    """Print the For you feed (or JSON)."""
    got = open_assistant(settings_from(args)).for_you(since=user_day(args.since), k=args.k)
    if args.json:
        print(json.dumps({
            "basis": got.basis, "candidates": got.candidates, "positives": got.positives, "negatives": got.negatives,
            "followed": got.followed, "fit_ms": round(got.fit_ms, 1), "hint": got.hint(),
            "papers": [{"id": it.paper.id, "title": it.paper.title, "date": it.paper.date.isoformat() if it.paper.date else None,
                        "score": round(it.score, 4), "reasons": it.reasons} for it in got.items],
        }))
        return 0
    print(printable(got.headline()))
    if got.hint():
        print(printable(got.hint()))
    for j, it in enumerate(got.items, 1):
        print(printable(f"{j:>3}. {str(it.paper.date or ''):10} {it.paper.id:<12} {it.paper.title[:100]}"))
        if it.reasons:
            print(printable(f"     {'; '.join(it.reasons)}"))
    return 0


def register(sub: Any) -> None:
    """Add `digest`, `follow`, `rate` and `feed`."""
    d = sub.add_parser("digest", help="new papers in the topics you follow since your last visit")
    d.add_argument("--since", help="papers ingested since this day (YYYY-MM-DD, UTC) instead of the last visit; does not move it")
    d.add_argument("--peek", action="store_true", help="show the digest without moving the last visit")
    d.add_argument("--limit", type=int_in(1, 10_000, "--limit"), default=20, help="papers shown per topic")
    d.add_argument("--json", action="store_true", help="print the digest as one JSON object")
    d.add_argument("--for-you", action="store_true", help="order each topic's papers by what you rate (as `paperchat feed`)")
    d.set_defaults(func=cmd_digest)
    r = sub.add_parser("rate", help='rate a paper: up ("more like this"), down ("not interested") or clear')
    r.add_argument("paper_id")
    r.add_argument("rating", choices=sorted(RATINGS))
    r.set_defaults(func=cmd_rate)
    fy = sub.add_parser("feed", help="For you: new papers ranked by what you rate, save and follow, with reasons")
    fy.add_argument("--since", help="papers listed since this day (YYYY-MM-DD) instead of those new since your last visit")
    fy.add_argument("--k", type=int_in(1, 1000, "--k"), default=20, help="papers shown")
    fy.add_argument("--json", action="store_true", help="print the feed as one JSON object")
    fy.set_defaults(func=cmd_feed)
    f = sub.add_parser("follow", help="follow a topic (hand-written or discovered) or a collection")
    f.add_argument("slug")
    f.add_argument("--off", action="store_true", help="unfollow it")
    f.set_defaults(func=cmd_follow)
