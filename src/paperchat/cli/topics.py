"""`paperchat topics`: each topic with its paper and chunk counts, or `--check` the rules on a file;
`paperchat topics discover | show SLUG | sample | coverage SET` and `--trending`: discovered topics and
momentum."""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant, preview_topics
from paperchat.cli.common import int_in, open_assistant, settings_from
from paperchat.errors import InputError
from paperchat.text import printable

ACTIONS = ("discover", "show", "sample", "coverage", "learn")


def cmd_topics(args: argparse.Namespace) -> int:
    """Print the topics table (or JSON); with --check, apply the rules to a metadata file instead; discovery
    actions and --trending go to `discovered`."""
    if args.action or args.trending:
        return discovered(args)
    settings = settings_from(args)
    if args.check:
        # apply the rules to a metadata file without ingesting it: counts and a sample to read by hand
        pv = preview_topics(settings, Path(args.check), args.sample, args.seed)
        print(f"{pv.papers} papers, {pv.in_any} in at least one topic")
        for slug, sample in pv.samples.items():
            print(f"\n## {slug}: {pv.counts[slug]} papers")
            for pid, title, why in sample:
                print(printable(f"- {pid} | {title[:100]} | {', '.join(why)[:60]}"))
        return 0
    assistant = open_assistant(settings)
    summaries = assistant.topic_summaries(chunks=True)
    rows: list[dict[str, Any]] = [{"slug": t.slug, "name": t.name, "papers": t.papers, "chunks": t.chunks} for t in summaries]
    papers, chunks = assistant.counts()
    if args.json:
        print(json.dumps({"topics": rows, "papers": papers, "chunks": chunks}))
        return 0
    width = max(len(r["name"]) for r in rows) if rows else 10
    print(f"{'topic':<{width}}  {'slug':<22} {'papers':>7} {'chunks':>7}")
    for r in rows:
        print(printable(f"{r['name']:<{width}}  {r['slug']:<22} {r['papers']:>7} {r['chunks']:>7}"))
    print(f"{'all':<{width}}  {'':<22} {papers:>7} {chunks:>7}")
    return 0


def discovered(args: argparse.Namespace) -> int:
    """Run a discovery action or --trending."""
    assistant = open_assistant(settings_from(args))
    if args.trending:
        trends = assistant.trending(weeks=args.weeks, min_count=args.min_count)
        if args.json:
            print(json.dumps([{"slug": t.slug, "name": t.name, "kind": t.kind, "membership": t.membership, "recent": t.momentum.recent,
                               "previous": t.momentum.previous, "change_pct": t.momentum.change_pct, "share_pct": t.momentum.share_pct,
                               "z": t.z, "ranked": t.ranked, "small_counts": t.momentum.small_counts} for t in trends]))
        else:
            print(printable(assistant.format_trends(trends, args.limit)))
        return 0
    if args.action == "discover":
        rep = assistant.discover(n_topics=args.topics, seed=args.seed)
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
        return _show(assistant, args)
    if args.action == "sample":
        print(assistant.topic_samples(args.per_topic, args.seed, args.limit))
        print(f"\ncoherence: {assistant.topic_coherence()}")
        return 0
    if args.action == "learn":
        print("\n".join(assistant.learn_membership().lines()))
        if args.slug:  # question sets, comma-separated: their gold papers inside their topic
            print("\n".join(assistant.membership_recall([Path(p) for p in args.slug.split(",")])))
        return 0
    if not args.slug:
        raise InputError("coverage needs a question set", "e.g. paperchat topics coverage eval/topic_tune.jsonl")
    print(assistant.gold_coverage(Path(args.slug)))
    return 0


def _show(assistant: Assistant, args: argparse.Namespace) -> int:
    d = assistant.topic_detail(args.slug or "", weeks=args.weeks)
    papers = assistant.papers(d.paper_ids[: args.limit])
    print(printable(f"{d.name}  [{d.slug}]  {len(d.paper_ids)} papers, counted {d.how}{d.extra}\n{d.momentum.sentence()}\n"))
    for pid in d.paper_ids[: args.limit]:
        p = papers[pid]
        print(printable(f"  {p.date or ''!s:10} {pid:<12} {p.title[:100]}"))
    return 0


def register(sub: Any) -> None:
    """Add `topics`."""
    t = sub.add_parser("topics", help="each topic with its paper and chunk counts")
    t.add_argument("--json", action="store_true")
    t.add_argument("--check", metavar="JSONL", help="apply the topic rules to a metadata file (no ingest): counts and a sample")
    t.add_argument("--sample", type=int_in(0, 10_000, "--sample"), default=20, help="with --check: papers listed per topic")
    t.add_argument("--seed", type=int_in(0, 2**32 - 1, "--seed"), default=0, help="with --check, sample or discover: the seed")
    t.add_argument(
        "action", nargs="?", choices=ACTIONS, help="discover topics, show one, sample papers per topic, gold coverage, learn membership beyond the rules"
    )
    t.add_argument(
        "slug", nargs="?",
        help="with show: the topic; with coverage: a topic question set (JSONL); with learn: question sets (comma-separated) to measure gold recall",
    )
    t.add_argument("--trending", action="store_true", help="every topic ranked by momentum")
    t.add_argument("--weeks", type=int_in(1, 520, "--weeks"), default=4, help="with --trending or show: window length in weeks")
    t.add_argument("--min-count", type=int_in(0, 10_000_000, "--min-count"), default=10, help="with --trending: fewest papers (both windows) to rank")
    t.add_argument("--limit", type=int_in(1, 100_000, "--limit"), default=40, help="rows or topics shown")
    t.add_argument("--topics", type=int_in(1, 5_000, "--topics"), default=None, help="with discover: a fixed number of topics")
    t.add_argument("--per-topic", type=int_in(1, 1_000, "--per-topic"), default=5, help="with sample: papers shown per topic")
    t.set_defaults(func=cmd_topics)
