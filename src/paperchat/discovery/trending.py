"""Trending: every topic's momentum (hand-written and discovered), ranked by a rise that is not noise.

Momentum is paperchat.topics.momentum: the last N weeks against the N before, the share of all new papers,
the weekly series. The ranking asks whether the rise is more than chance: given the topic's papers in both
windows (n = recent + previous), under "the topic kept its share of the corpus" the recent count is
binomial with p = the corpus's recent papers / the corpus's papers in both windows (so a corpus that
grew does not make every topic look hot). The z-score of the recent count under that null ranks the topics;
topics with fewer than `min_count` papers in the two windows together are listed last, flagged, unranked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from paperchat.library import Library
from paperchat.topics import Momentum, momentum


@dataclass(frozen=True)
class TopicTrend:
    """One topic's momentum and the strength of its rise."""

    slug: str
    name: str
    kind: str  # "hand-written" or "discovered"
    # what the counts count: "rules" (keyword rules), "rules+neighbours" (the rules and the papers whose nearest
    # neighbours the rules hold, paperchat.discovery.membership) or "tags" (2-4 closest discovered topics)
    membership: str
    momentum: Momentum
    z: float  # the recent count's z-score against the topic's own earlier share; 0 when unranked
    ranked: bool  # False below min_count: listed with the small-count warning, never ranked


def rise_z(recent: int, previous: int, all_recent: int, all_previous: int) -> float:
    """z-score of `recent` under Binomial(recent + previous, p), p = the corpus's share of papers in the recent
    window; positive when the topic rose faster than the corpus."""
    n = recent + previous
    total = all_recent + all_previous
    if n == 0 or total == 0:
        return 0.0
    p = min(max(all_recent / total, 1e-6), 1 - 1e-6)
    return (recent - n * p) / math.sqrt(n * p * (1 - p))


def trending(lib: Library, weeks: int = 4, min_count: int = 10, small: int = 10) -> list[TopicTrend]:
    """Every topic's trend, best-supported rise first; unranked (too few papers) topics last, biggest first.

    Args:
        weeks: the length of each window.
        min_count: topics with fewer papers in the two windows together are not ranked.
        small: the small-count warning's threshold (as on topic pages), per window.
    """
    all_weekly = lib.weekly_counts()
    learned = lib.catalog.get_meta("membership") is not None  # `paperchat topics learn` has run
    dates = lib.catalog.dates_by_topic(learned=learned)
    names = [(t.slug, t.name, "hand-written", "rules+neighbours" if learned and t.learn else "rules") for t in lib.topics.topics]
    names += [(t.slug, t.label, "discovered", "tags") for t in lib.catalog.discovered()]
    # one reference day for all, so every topic's windows are the same weeks
    now = momentum([d for ds in dates.values() for d in ds], all_weekly).now
    out = []
    for slug, name, kind, membership in names:
        m = momentum(dates.get(slug, []), all_weekly, now=now, small=small, weeks=weeks)
        ranked = m.recent + m.previous >= min_count
        z = rise_z(m.recent, m.previous, m.all_recent, m.all_previous) if ranked else 0.0
        out.append(TopicTrend(slug, name, kind, membership, m, round(z, 2), ranked))
    return sorted(out, key=lambda t: (not t.ranked, -t.z if t.ranked else -t.momentum.recent, t.slug))


def format_trends(trends: list[TopicTrend], limit: int = 30) -> str:
    """A table: rank, topic, recent/previous counts, % change, share, z, and the small-count flag."""
    if not trends:
        return "no topics"
    weeks = trends[0].momentum.weeks
    lines = [
        (
            f"momentum: last {weeks} weeks to {trends[0].momentum.now} against the {weeks} before; hand-written topics "
            "count papers by their rules, discovered topics by tags; z: how far the topic's share of new papers rose beyond chance"
        ),
        f"{'#':>3} {'topic':<44} {'kind':<12} {'now':>5} {'before':>6} {'change':>7} {'share':>6} {'z':>6}",
    ]
    for i, t in enumerate(trends[:limit], start=1):
        m = t.momentum
        change = "new" if m.change_pct is None else f"{m.change_pct:+.0f}%"
        share = f"{m.share_pct:.1f}%" if m.share_pct is not None else "-"
        flag = "" if t.ranked and not m.small_counts else "  (small counts: not a trend)"
        z = f"{t.z:+.1f}" if t.ranked else "-"
        lines.append(f"{i if t.ranked else '-':>3} {t.name[:44]:<44} {t.kind:<12} {m.recent:>5} {m.previous:>6} {change:>7} {share:>6} {z:>6}{flag}")
    if len(trends) > limit:
        lines.append(f"... and {len(trends) - limit} more (--limit)")
    return "\n".join(lines)
