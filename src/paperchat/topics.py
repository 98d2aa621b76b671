"""Topics: definitions from TOML, rule-based membership, momentum and related topics."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from paperchat.dates import is_plausible, plausible
from paperchat.errors import ConfigError
from paperchat.types import Paper


@dataclass(frozen=True)
class Topic:
    """A topic and the rules that decide which papers belong to it.

    A paper belongs when its title + abstract matches at least one phrase of `any`, and at least one phrase
    of every group in `all`, and no phrase of `exclude`; when `categories` is set, one of the paper's arXiv
    categories must be in it as well.
    """

    slug: str
    name: str
    description: str
    any: tuple[str, ...]
    all: tuple[tuple[str, ...], ...] = ()
    exclude: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    min_score: int = 1
    title_any: tuple[str, ...] = ()
    learn: bool = True  # whether the papers' vectors may add members the rules miss (paperchat.discovery.membership)


def _phrase_regex(phrase: str) -> str:
    """A phrase as a regex: words separated by space or hyphen; a trailing * is a prefix match, a
    leading * a suffix match (GraphRAG for *RAG), a trailing ! an exact word; otherwise an optional
    plural 's'/'es'."""
    prefix = phrase.endswith("*")
    exact = phrase.endswith("!")
    suffix = phrase.startswith("*")
    words = phrase.strip("*!").split()
    body = r"[\s\-]+".join(re.escape(w) for w in words)
    tail = r"\w*" if prefix else (r"\b" if exact else r"(?:s|es)?\b")
    head = r"\w*" if suffix else ""
    return f"{head}{body}{tail}"


def _compile(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """Phrases in one pattern. Short all-caps acronyms (RAG, RL, VLM) match case-sensitively."""
    parts = []
    for p in phrases:
        rx = _phrase_regex(p)
        word = p.strip("*!")
        parts.append(rx if any(c.isupper() for c in word[1:]) or word.isupper() else f"(?i:{rx})")
    # one shared word-start guard: positions inside a word fail at once instead of per phrase
    return re.compile(r"(?<![\w-])(?:" + "|".join(parts) + ")" if parts else r"(?!x)x")


class TopicSet:
    """The topics of a TOML file, compiled for matching."""

    def __init__(self, topics: list[Topic], source_hash: str) -> None:
        self.topics = topics
        self.hash = source_hash
        self.by_slug = {t.slug: t for t in topics}
        self._any = {t.slug: _compile(t.any) for t in topics}
        self._all = {t.slug: [_compile(g) for g in t.all] for t in topics}
        self._excl = {t.slug: _compile(t.exclude) for t in topics}
        self._title = {t.slug: _compile(t.title_any) for t in topics}

    @classmethod
    def load(cls, path: Path) -> TopicSet:
        """Read and validate a topics file; errors name the topic and the field."""
        try:
            raw = path.read_bytes()
            data = tomllib.loads(raw.decode("utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"topics file {path} not found", "set PAPERCHAT_TOPICS_FILE to ingest/topics.toml") from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"topics file {path} is not valid TOML: {exc}", "fix the file") from exc
        topics: list[Topic] = []
        for i, t in enumerate(data.get("topic", []), start=1):
            slug = t.get("slug", "")
            if not re.fullmatch(r"[a-z0-9][a-z0-9\-]*", slug or ""):
                raise ConfigError(f"{path}: topic {i} has no valid slug (lower case, digits, hyphens)", "fix the slug")
            if not t.get("any"):
                raise ConfigError(f"{path}: topic {slug!r} has no 'any' phrases", "add at least one phrase")
            topics.append(
                Topic(
                    slug=slug,
                    name=t.get("name", slug),
                    description=t.get("description", ""),
                    any=tuple(t["any"]),
                    all=tuple(tuple(g) for g in t.get("all", [])),
                    exclude=tuple(t.get("exclude", [])),
                    categories=tuple(t.get("categories", [])),
                    min_score=int(t.get("min_score", 1)),
                    title_any=tuple(t.get("title_any", [])),
                    learn=bool(t.get("learn", True)),
                )
            )
        if len({t.slug for t in topics}) != len(topics):
            raise ConfigError(f"{path}: two topics share a slug", "make every slug unique")
        return cls(topics, hashlib.sha256(raw).hexdigest()[:16])

    def match(self, paper: Paper) -> list[str]:
        """Slugs of the topics this paper belongs to."""
        text = f"{paper.title}\n{paper.abstract}"
        out = []
        for t in self.topics:
            if t.categories and not set(t.categories) & set(paper.categories):
                continue
            rx = self._any[t.slug]
            title_hits = len(self._title[t.slug].findall(paper.title)) if t.title_any else 0
            if not rx.search(text):
                continue
            if t.min_score > 1:
                score = 3 * (len(rx.findall(paper.title)) + title_hits) + len(rx.findall(paper.abstract))
                if score < t.min_score:
                    continue
            if any(not g.search(text) for g in self._all[t.slug]):
                continue
            if self._excl[t.slug].search(text):
                continue
            out.append(t.slug)
        return out

    def explain(self, paper: Paper, slug: str) -> list[str]:
        """The `any` phrases of a topic found in a paper (to check why it matched)."""
        text = f"{paper.title}\n{paper.abstract}"
        return [m.group(0) for m in self._any[slug].finditer(text)]

    def get(self, slug: str) -> Topic:
        """The topic with this slug; raises ConfigError when there is none."""
        if slug not in self.by_slug:
            raise ConfigError(f"unknown topic {slug!r}", f"choose one of: {', '.join(self.by_slug)}")
        return self.by_slug[slug]


# -- momentum -----------------------------------------------------------------------------------


def week_start(d: dt.date) -> dt.date:
    """Monday of the ISO week holding d."""
    return d - dt.timedelta(days=d.weekday())


_WEEK_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 8: "eight", 12: "twelve"}


@dataclass(frozen=True)
class Momentum:
    """How a topic is moving: last four weeks against the four before, and its share of all new papers."""

    recent: int
    previous: int
    change_pct: float | None
    share_pct: float | None
    all_recent: int
    now: dt.date
    weekly: list[tuple[dt.date, int, int]]
    small_counts: bool
    weeks: int = 4
    all_previous: int = 0

    def sentence(self) -> str:
        """'70 papers in the last four weeks, up 141% on the four weeks before, 0.7% of all new papers'."""
        span = _WEEK_WORDS.get(self.weeks, str(self.weeks)) + " weeks" if self.weeks != 1 else "week"
        parts = [f"{self.recent} paper{'s' if self.recent != 1 else ''} in the last {span}"]
        if self.change_pct is None:
            parts.append(f"none in the {span} before")
        elif round(self.change_pct) == 0:
            parts.append(f"about level with the {span} before")
        else:
            word = "up" if self.change_pct > 0 else "down"
            parts.append(f"{word} {abs(self.change_pct):.0f}% on the {span} before")
        if self.share_pct is not None:
            parts.append(f"{self.share_pct:.1f}% of all new papers")
        text = ", ".join(parts)
        if self.small_counts:
            text += f" (only {self.recent} vs {self.previous}: too few papers to call a trend)"
        return text


def momentum(
    topic_dates: list[dt.date],
    all_weekly: dict[dt.date, int],
    now: dt.date | None = None,
    small: int = 10,
    weeks: int = 4,
) -> Momentum:
    """Momentum of a topic from its papers' dates and the weekly counts of all papers.

    Args:
        topic_dates: dates of the topic's papers.
        all_weekly: Monday -> number of all new papers that week (the corpus-wide denominator).
        now: the reference day; the newest date in the corpus when None.
        small: below this many papers in either window the change is flagged as not a trend.
        weeks: the length of each of the two windows compared.
    """
    # a date before 1991 or after tomorrow is a data error: it never sets "now" nor counts in a window
    topic_dates = plausible(topic_dates)
    all_weekly = {w: c for w, c in all_weekly.items() if is_plausible(w)}
    if now is None:
        candidates = list(topic_dates) + [w + dt.timedelta(days=6) for w in all_weekly if all_weekly[w]]
        now = max(candidates) if candidates else dt.date.today()
    # Windows are whole ISO weeks so the topic and the corpus-wide weekly counts line up.
    this_week = week_start(now)
    start_recent = this_week - dt.timedelta(weeks=weeks - 1)
    start_prev = start_recent - dt.timedelta(weeks=weeks)
    tcounts = Counter(week_start(d) for d in topic_dates if d <= now)
    recent = sum(c for w, c in tcounts.items() if start_recent <= w <= this_week)
    previous = sum(c for w, c in tcounts.items() if start_prev <= w < start_recent)
    change = None if previous == 0 else 100.0 * (recent - previous) / previous
    all_recent = sum(c for w, c in all_weekly.items() if start_recent <= w <= this_week)
    all_previous = sum(c for w, c in all_weekly.items() if start_prev <= w < start_recent)
    share = 100.0 * recent / all_recent if all_recent else None
    mondays = sorted(w for w in set(all_weekly) | set(tcounts) if w <= this_week)
    weekly = [(w, tcounts.get(w, 0), all_weekly.get(w, 0)) for w in mondays]
    return Momentum(
        recent=recent,
        previous=previous,
        change_pct=change,
        share_pct=share,
        all_recent=all_recent,
        now=now,
        weekly=weekly,
        small_counts=min(recent, previous) < small,
        weeks=weeks,
        all_previous=all_previous,
    )
