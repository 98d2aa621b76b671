"""Issue 16: does the topic page of a discovered topic render as fast as a hand-written one? The same handlers
the app calls (header with momentum and chart, first page of papers with tags), hand-written and discovered
topics of similar size interleaved, several rounds, in one run; prints p50/p95 per kind and their ratio.

Usage: PAPERCHAT_DATA_DIR=<store with discovered topics> PYTHONPATH=src python scripts/bench_topic_pages.py [ROUNDS]
"""

import statistics
import sys
import time

from paperchat.assistant import Assistant
from paperchat.settings import Settings
from paperchat.ui import handlers


def main() -> None:
    """Render each topic's header and first page of papers ROUNDS times and print the timings."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    core = Assistant.open(Settings())
    hand = [t.slug for t in core.library.topics.topics]
    found = [t.slug for t in core.library.catalog.discovered()][: len(hand)]  # the largest discovered topics
    times: dict[str, list[float]] = {"hand-written": [], "discovered": []}
    for slug in hand + found:  # warm: first use of each path (templates, indexes)
        handlers.topic_header(core, slug)
        handlers.topic_papers(core, slug)
    for _ in range(rounds):
        for a, b in zip(hand, found, strict=False):
            for kind, slug in (("hand-written", a), ("discovered", b)):
                t = time.perf_counter()
                handlers.topic_header(core, slug)
                handlers.topic_papers(core, slug)
                times[kind].append((time.perf_counter() - t) * 1000)
    for kind, xs in times.items():
        xs.sort()
        print(f"{kind}: {len(xs)} renders, p50 {statistics.median(xs):.1f} ms, p95 {xs[int(0.95 * (len(xs) - 1))]:.1f} ms")
    h, d = statistics.median(times["hand-written"]), statistics.median(times["discovered"])
    print(f"discovered / hand-written p50: {d / h:.2f}")
    core.close()


if __name__ == "__main__":
    main()
