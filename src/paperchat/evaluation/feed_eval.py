"""`paperchat eval feed`: the For you model against simulated researchers, with two baselines in the same run.

A simulated researcher is one arXiv cross-list category (cs.IR, cs.SE, cs.CV, ...): the authors' own label,
which neither the vectors nor the topic tags were built from, so the model cannot read the answer off a
feature. The researcher follows the hand-written topic whose papers before the cutoff best match the category
(F1), rates k of the category's papers before the cutoff up and k papers of the followed topic outside the
category down. Each week after the cutoff is one feed: its papers ranked by (a) newest first, (b) the followed
topic's papers first, newest first, and (c) the model fitted on the ratings and the follow; relevant = in the
category. Reported: precision@10 and nDCG@10, averaged over weeks, seeds and researchers, for k = 1, 2, 5, 10,
20, separately for two halves of the researchers (alternating by name): the model's constants were set before
the first run and not tuned on either half.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from paperchat.foryou import Signal, feature_space, fit

if TYPE_CHECKING:
    from paperchat.assistant import Assistant
    from paperchat.library import Library

GENERAL = {"cs.CL", "cs.AI", "cs.LG"}  # the corpus's own categories and the catch-all: not an interest
KS = (1, 2, 5, 10, 20)
TOP = 10


@dataclass
class Researcher:
    """One simulated researcher: an interest (a category), the topic they follow and what they can rate."""

    category: str
    followed: str  # hand-written topic slug ('' when none overlaps)
    follow_f1: float
    train: list[str]  # the category's papers before the cutoff
    others: list[str]  # the followed topic's papers before the cutoff outside the category (negatives to rate)


@dataclass
class FeedEval:
    """The run's scores by method, k and half, and the refit time."""

    cutoff: dt.date
    weeks: int
    researchers: list[Researcher]
    # method -> k -> half -> (precision@10 list, ndcg@10 list)
    scores: dict[str, dict[int, dict[str, list[tuple[float, float]]]]] = field(default_factory=dict)
    fit_ms_1000: float = 0.0
    seconds: float = 0.0

    def mean(self, method: str, k: int, half: str) -> tuple[float, float]:
        """(mean precision@10, mean nDCG@10) of a method at k ratings on one half."""
        got = self.scores.get(method, {}).get(k, {}).get(half, [])
        if not got:
            return float("nan"), float("nan")
        return float(np.mean([p for p, _ in got])), float(np.mean([n for _, n in got]))

    def table(self) -> str:
        """The results as Markdown: methods by k and half, then the researchers."""
        lines = [
            f"# For you: simulated researchers ({len(self.researchers)} cross-list categories), cutoff {self.cutoff}, "
            f"{self.weeks} feeds after it",
            "",
            "| method | k ratings up/down | P@10 half A | nDCG@10 half A | P@10 half B | nDCG@10 half B |",
            "|---|---|---|---|---|---|",
        ]
        for method in ("newest first", "followed topic first", "for you"):
            for k in (KS if method == "for you" else (0,)):
                a, b = self.mean(method, k, "A"), self.mean(method, k, "B")
                lines.append(f"| {method} | {k if method == 'for you' else '-'} | {a[0]:.3f} | {a[1]:.3f} | {b[0]:.3f} | {b[1]:.3f} |")
        lines += ["", f"refit with 1,000 ratings (500 up, 500 down): {self.fit_ms_1000:.0f} ms; whole run {self.seconds:.0f} s", ""]
        lines += ["| researcher | follows | F1 of the follow | category papers before the cutoff |", "|---|---|---|---|"]
        lines += [f"| {r.category} | {r.followed or '(none)'} | {r.follow_f1:.2f} | {len(r.train)} |" for r in self.researchers]
        return "\n".join(lines)


def _p_ndcg(ranked: list[str], relevant: set[str]) -> tuple[float, float]:
    top = ranked[:TOP]
    gains = [1.0 if p in relevant else 0.0 for p in top]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(TOP, len(relevant))))
    return sum(gains) / TOP, (dcg / ideal if ideal else 0.0)


def researchers(lib: Library, cutoff: dt.date, min_train: int = 40, min_test: int = 20) -> list[Researcher]:
    """One researcher per cross-list category with enough papers before and after the cutoff."""
    facts = lib.catalog.dates_and_categories()
    by_cat: dict[str, list[str]] = {}
    for pid, (date, cats) in facts.items():
        if date is None:
            continue
        for c in cats:
            if c not in GENERAL:
                by_cat.setdefault(c, []).append(pid)
    before = {p for p, (d, _) in facts.items() if d is not None and d < cutoff}
    rules = lib.catalog.rule_members()
    out = []
    for cat in sorted(by_cat):
        train = sorted(p for p in by_cat[cat] if p in before)
        test = [p for p in by_cat[cat] if p not in before]
        if len(train) < min_train or len(test) < min_test:
            continue
        best, f1 = "", 0.0
        tset = set(train)
        for slug, members in sorted(rules.items()):
            m = members & before
            hit = len(m & tset)
            if hit:
                f = 2 * hit / (len(m) + len(tset))
                if f > f1:
                    best, f1 = slug, f
        others = sorted((rules.get(best, set()) & before) - tset) if best else []
        out.append(Researcher(cat, best, f1, train, others))
    return out


def evaluate_feed(
    core: Assistant | Library, cutoff: dt.date | None = None, weeks: int = 8, seeds: int = 3, ks: tuple[int, ...] = KS,
    feed_days: int = 7, min_train: int = 40, min_test: int = 20,
) -> FeedEval:
    """Run every researcher through every feed after the cutoff (`weeks` feeds of `feed_days` days; the cutoff
    defaults to that many days before the newest listing date); over an Assistant's library or a Library."""
    lib: Library = core.library if hasattr(core, "library") else core
    t0 = time.perf_counter()
    facts = lib.catalog.dates_and_categories()
    dated = {p: d for p, (d, _) in facts.items() if d is not None}
    newest = max(dated.values())
    span = dt.timedelta(days=feed_days)
    cutoff = cutoff or newest - weeks * span + dt.timedelta(days=1)
    space = feature_space(lib)
    people = researchers(lib, cutoff, min_train, min_test)
    cats = {p: set(c) for p, (_, c) in facts.items()}
    rules = lib.catalog.rule_members()
    feeds = []
    for w in range(weeks):
        lo, hi = cutoff + w * span, cutoff + (w + 1) * span
        ids = sorted((p for p, d in dated.items() if lo <= d < hi and p in space.pos), key=lambda p: (dated[p], p), reverse=True)
        if ids:
            feeds.append(ids)
    test_ids = {p for f in feeds for p in f}
    ev = FeedEval(cutoff, len(feeds), people)

    def add(method: str, k: int, half: str, val: tuple[float, float]) -> None:
        ev.scores.setdefault(method, {}).setdefault(k, {}).setdefault(half, []).append(val)

    for n, r in enumerate(people):
        half = "A" if n % 2 == 0 else "B"
        followed = rules.get(r.followed, set()) if r.followed else set()
        for feed in feeds:
            rel = {p for p in feed if r.category in cats[p]}
            if not rel:
                continue
            add("newest first", 0, half, _p_ndcg(feed, rel))
            add("followed topic first", 0, half, _p_ndcg([p for p in feed if p in followed] + [p for p in feed if p not in followed], rel))
        for k in ks:
            for seed in range(seeds):
                rng = np.random.default_rng(1000 * seed + k)
                ups = list(rng.choice(r.train, size=min(k, len(r.train)), replace=False))
                pool = r.others or [p for p in dated if dated[p] < cutoff and r.category not in cats[p]]
                downs = list(rng.choice(pool, size=min(k, len(pool)), replace=False))
                sigs = [Signal(p, 1, "rated up") for p in ups] + [Signal(p, 0, "marked not interested") for p in downs]
                follows = [r.followed] if r.followed else []
                # the prior and the background come from before the cutoff only: the test weeks are never sampled
                model = fit(space, sigs, follows, {p for p in followed if dated.get(p, newest) < cutoff}, seed=seed, exclude=test_ids)
                for feed in feeds:
                    rel = {p for p in feed if r.category in cats[p]}
                    if not rel:
                        continue
                    rows = np.asarray([space.pos[p] for p in feed], dtype=np.int64)
                    s = model.score(rows)
                    order = sorted(range(len(feed)), key=lambda j: (-float(s[j]), j))
                    add("for you", k, half, _p_ndcg([feed[j] for j in order], rel))
    # refit time at 1,000 ratings
    rng = np.random.default_rng(7)
    picks = rng.choice(len(space.ids), size=min(1000, len(space.ids)), replace=False)
    sigs = [Signal(space.ids[int(i)], int(j % 2 == 0), "rated up") for j, i in enumerate(picks)]
    times = [fit(space, sigs, [], set(), seed=s).fit_ms for s in range(3)]
    ev.fit_ms_1000 = float(np.median(times))
    ev.seconds = time.perf_counter() - t0
    return ev
