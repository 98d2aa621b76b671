"""`paperchat topics discover | show SLUG | sample | coverage` and `paperchat topics --trending`: discovered
topics and momentum (kept apart from cli.py's everyday commands). Parse, build Settings, call one function,
print its result."""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

from paperchat.cli import _library, _settings
from paperchat.errors import InputError, NotFound
from paperchat.text import printable

ACTIONS = ("discover", "show", "sample", "coverage")


def add_topic_arguments(t: argparse.ArgumentParser) -> None:
    """The discovery and trending arguments of `paperchat topics`."""
    t.add_argument("action", nargs="?", choices=ACTIONS, help="discover topics, show one, sample papers per topic, gold coverage")
    t.add_argument("slug", nargs="?", help="with show: the topic; with coverage: a topic question set (JSONL)")
    t.add_argument("--trending", action="store_true", help="every topic ranked by momentum")
    t.add_argument("--weeks", type=int, default=4, help="with --trending: window length in weeks")
    t.add_argument("--min-count", type=int, default=10, help="with --trending: fewest papers (both windows) to rank")
    t.add_argument("--limit", type=int, default=40, help="rows or topics shown")
    t.add_argument("--topics", type=int, default=None, help="with discover: a fixed number of topics")
    t.add_argument("--per-topic", type=int, default=5, help="with sample: papers shown per topic")


def cmd_topics_more(args: argparse.Namespace) -> int:
    """Run a discovery or trending command (cli.cmd_topics hands these over)."""
    lib = _library(_settings(args))
    if args.trending:
        from paperchat.trending import format_trends, trending

        trends = trending(lib, weeks=args.weeks, min_count=args.min_count)
        if args.json:
            print(json.dumps([{"slug": t.slug, "name": t.name, "kind": t.kind, "membership": t.membership, "recent": t.momentum.recent,
                               "previous": t.momentum.previous, "change_pct": t.momentum.change_pct, "share_pct": t.momentum.share_pct,
                               "z": t.z, "ranked": t.ranked, "small_counts": t.momentum.small_counts} for t in trends]))
        else:
            print(printable(format_trends(trends, args.limit)))
        return 0
    if args.action == "discover":
        from paperchat.discovery import DiscoverySettings, discover

        rep = discover(lib, DiscoverySettings(n_topics=args.topics, seed=args.seed))
        if args.json:
            print(json.dumps({"topics": len(rep.topics), "papers": rep.papers, "seconds": round(rep.seconds, 2), "run": rep.run}))
            return 0
        print(rep.summary())
        for t in rep.topics[: args.limit]:
            print(printable(f"{t.size:6d}  {t.label[:48]:<48} {t.slug[:40]:<40} {t.parent or '-'}"))
        if len(rep.topics) > args.limit:
            print(f"... and {len(rep.topics) - args.limit} more (--limit)")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory {peak:.0f} MB", file=sys.stderr)
        return 0
    if args.action == "show":
        return _show(lib, args)
    if args.action == "sample":
        from paperchat.topic_quality import coherence, sample_topics

        print(sample_topics(lib, args.per_topic, args.seed, args.limit))
        print(f"\ncoherence: {coherence(lib)}")
        return 0
    from paperchat.topic_quality import gold_coverage

    if not args.slug:
        raise InputError("coverage needs a question set", "e.g. paperchat topics coverage eval/topic_tune.jsonl")
    print(gold_coverage(lib, Path(args.slug)))
    return 0


def _show(lib, args: argparse.Namespace) -> int:  # type: ignore[no-untyped-def]
    from paperchat.topics import momentum

    found = {t.slug: t for t in lib.catalog.discovered()}
    if args.slug in lib.topics.by_slug:
        name, ids, how = lib.topics.by_slug[args.slug].name, lib.catalog.topic_papers(args.slug), "by its keyword rules"
        extra = ""
    elif args.slug in found:
        t = found[args.slug]
        name, ids, how = t.label, lib.catalog.tagged_papers(t.slug), "by tags (papers whose 2-4 closest topics include it)"
        extra = f"\nunder: {t.parent or '-'} ({t.parent_share:.0%} of its papers)\nphrases: {'; '.join(t.terms)}"
    else:
        hint = "list them with `paperchat topics --trending` or run `paperchat topics discover`"
        raise NotFound(f"no topic {args.slug!r}", hint)
    papers = lib.catalog.get_many(ids[: args.limit])
    dates = [p.date for p in lib.catalog.get_many(ids).values() if p.date]
    m = momentum(dates, lib.weekly_counts(), weeks=args.weeks)
    print(printable(f"{name}  [{args.slug}]  {len(ids)} papers, counted {how}{extra}\n{m.sentence()}\n"))
    for pid in ids[: args.limit]:
        p = papers[pid]
        print(printable(f"  {p.date or ''!s:10} {pid:<12} {p.title[:100]}"))
    return 0
