"""What is new in the followed topics since the last visit (`paperchat digest`, the app's Following tab).

"New" means new to this store: first ingested after the last visit (the catalogue keeps each paper's ingest
time), which is what a person who runs `paperchat update` expects to see; a paper's listing date can be days
older than the moment it reached the store. The last visit is one meta key (the app has one user); a digest
advances it to the moment it was read unless it only peeks. With no last visit yet, the last seven days count.
A followed topic can be hand-written (papers by its rules), discovered (by tags) or a collection.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paperchat.catalog.feed import LAST_VISIT_KEY, read_visit  # one key, mirrored by the catalogue
from paperchat.types import Paper

if TYPE_CHECKING:
    from paperchat.library import Library

__all__ = ["LAST_VISIT_KEY", "Digest", "DigestTopic", "digest", "parse_visit"]
FIRST_VISIT_DAYS = 7


@dataclass(frozen=True)
class DigestTopic:
    """One followed topic's new papers (newest listing date first); `kind` is 'rules', 'discovered' or
    'collection'."""

    slug: str
    name: str
    kind: str
    papers: list[Paper]


@dataclass(frozen=True)
class Digest:
    """The new papers of every followed topic between `since` and `until` (UTC ingest times).

    `basis` says where `since` came from ('last visit', 'given', 'first visit: the last 7 days'); `new_in_store`
    counts every paper ingested in the window, followed or not; `advanced` tells whether the last visit moved.
    """

    since: dt.datetime
    until: dt.datetime
    basis: str
    topics: list[DigestTopic] = field(default_factory=list)
    followed: int = 0
    new_in_store: int = 0
    advanced: bool = False

    @property
    def total(self) -> int:
        """Distinct new papers over the followed topics."""
        return len({p.id for t in self.topics for p in t.papers})

    def headline(self) -> str:
        """'5 new papers in 2 of 3 followed topics since 2026-07-01 09:00 UTC (last visit); 40 new in the store'."""
        when = self.since.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        if not self.followed:
            return f"You follow no topic yet; {self.new_in_store} papers are new in the store since {when} ({self.basis})"
        busy = sum(1 for t in self.topics if t.papers)
        return (
            f"{self.total} new paper{'s' if self.total != 1 else ''} in {busy} of {self.followed} followed topic"
            f"{'s' if self.followed != 1 else ''} since {when} ({self.basis}); {self.new_in_store} new in the store"
        )


def parse_visit(raw: str | None) -> dt.datetime | None:
    """A stored time (ISO, UTC), or None when missing, unreadable, out of range or far in the future."""
    return read_visit(raw)


def digest(lib: Library, since: dt.datetime | None = None, peek: bool = False, now: dt.datetime | None = None) -> Digest:
    """The followed topics' papers ingested since `since` (else the last visit); advances the last visit to
    `now` unless `peek`."""
    from paperchat.catalog.feed import stamp, utc_now

    cat = lib.catalog
    until = now or utc_now()
    if since is not None:
        basis = "given"
    else:
        raw = cat.get_meta(LAST_VISIT_KEY)
        since = read_visit(raw, until)
        basis = "last visit"
        if since is None and raw:
            since, basis = (
                until - dt.timedelta(days=FIRST_VISIT_DAYS),
                f"the stored last visit {raw[:40]!r} is not a usable time: the last {FIRST_VISIT_DAYS} days",
            )
        elif since is None:
            since, basis = until - dt.timedelta(days=FIRST_VISIT_DAYS), f"first visit: the last {FIRST_VISIT_DAYS} days"
    added = cat.added_between(since, until)
    ids = list(added)
    papers = cat.get_many(ids)
    tags = cat.tags_of(ids)
    discovered = {t.slug: t.label for t in cat.discovered()}
    collections = {c.slug: c.name for c in cat.collections()}
    out = []
    followed = cat.followed()
    for slug in followed:
        if slug in lib.topics.by_slug:
            kind, name, members = "rules", lib.topics.by_slug[slug].name, [i for i in ids if i in papers and slug in papers[i].topics]
        elif slug in discovered:
            kind, name, members = "discovered", discovered[slug], [i for i in ids if any(s == slug for s, _ in tags.get(i, []))]
        elif slug in collections:
            inside = set(cat.collection_papers(slug))
            kind, name, members = "collection", collections[slug], [i for i in ids if i in inside]
        else:
            continue  # a topic that no longer exists (rules edited, discovery re-run)
        rows = sorted((papers[i] for i in members if i in papers), key=lambda p: (p.date or dt.date.min, p.id), reverse=True)
        out.append(DigestTopic(slug, name, kind, rows))
    if not peek:
        cat.set_meta(LAST_VISIT_KEY, stamp(until))
    return Digest(since, until, basis, out, len(out), len(ids), advanced=not peek)
