"""The catalogue's feed tables: when each paper entered the store (for `paperchat digest`), and personal
collections (`paperchat import`). A mixin of Catalog, like catalog.topics: one SQLite connection and lock.

Created on open with IF NOT EXISTS: an older catalogue gains them empty, and its papers have no ingest time
(a digest never lists them as new).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperchat.catalog.db import guarded

FEED_SCHEMA = """
CREATE TABLE IF NOT EXISTS paper_added (paper_id TEXT PRIMARY KEY, at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS paper_added_at ON paper_added(at);
CREATE TABLE IF NOT EXISTS collections (
    slug TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS collection_papers (
    collection TEXT NOT NULL,
    paper_id TEXT NOT NULL,
    PRIMARY KEY (collection, paper_id)
);
CREATE INDEX IF NOT EXISTS collection_papers_paper ON collection_papers(paper_id);
"""


LAST_VISIT_KEY = "last_visit"  # the meta key of the last visit (`paperchat digest` moves it)
LONG_AGO = "1970-01-01T00:00:00.000000+00:00"  # the ingest time of a paper whose real one was lost


def utc_now() -> dt.datetime:
    """Now, in UTC (ingest times and the last visit are stored as UTC ISO strings, which sort as times)."""
    return dt.datetime.now(dt.UTC)


def read_visit(raw: object, now: dt.datetime | None = None) -> dt.datetime | None:
    """A stored last visit as a UTC time, or None when it is missing, unreadable, without a time zone's meaning
    (taken as UTC), out of range once in UTC (`9999-12-31T23:59:59-14:00` is year 10000 there) or more than a day
    in the future (it would hide every new paper). Everything that reads or restores a last visit goes through
    here, so a hand-edited `user_lists.json` cannot crash `digest` or the app (issue 33, case 2)."""
    if not isinstance(raw, str) or not raw or len(raw) > 64:
        return None
    try:
        t = dt.datetime.fromisoformat(raw)
        t = t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)
        t + dt.timedelta(days=FUTURE_SLACK_DAYS)  # the window arithmetic must not overflow either
    except (ValueError, OverflowError):
        return None
    if t > (now or utc_now()) + dt.timedelta(days=FUTURE_SLACK_DAYS):
        return None
    return t


FUTURE_SLACK_DAYS = 1


def stamp(t: dt.datetime) -> str:
    """A time as the stored string: UTC, ISO 8601, microseconds (one width, so strings compare as times)."""
    return t.astimezone(dt.UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Collection:
    """A personal collection (an imported BibTeX or CSL-JSON file): its slug, name, source and size."""

    slug: str
    name: str
    source: str
    created: str
    papers: int


class FeedTables:
    """Ingest times and collections; Catalog provides the connection, lock and path."""

    path: Path
    _conn: sqlite3.Connection
    _lock: threading.RLock

    def _write_mirror(self) -> None:
        """Rewrite the mirror of what the user made (Catalog does it: user_lists.json)."""
        raise NotImplementedError

    def _mark_added(self, ids: Iterable[str]) -> int:
        """Record now as the ingest time of papers that have none (inside the caller's transaction); returns how
        many were new (the caller rewrites the mirror after its commit when any was)."""
        now = stamp(utc_now())
        cur = self._conn.executemany("INSERT OR IGNORE INTO paper_added (paper_id, at) VALUES (?, ?)", [(i, now) for i in ids])
        return max(cur.rowcount, 0)

    def feed_lists(self) -> dict[str, Any]:
        """What the mirror keeps of the feed tables: every collection with its papers, the last visit, and the
        ingest times of the papers that arrived since it (what a digest can still list; all of them before the
        first visit)."""
        with self._lock:
            rows = self._conn.execute("SELECT slug, name, source, created FROM collections ORDER BY slug").fetchall()
            members: dict[str, list[str]] = {}
            for slug, pid in self._conn.execute("SELECT collection, paper_id FROM collection_papers ORDER BY collection, paper_id"):
                members.setdefault(slug, []).append(pid)
            visit = self._conn.execute("SELECT value FROM meta WHERE key=?", (LAST_VISIT_KEY,)).fetchone()
            since = str(visit[0]) if visit else ""
            arrivals = self._conn.execute("SELECT paper_id, at FROM paper_added WHERE at >= ? ORDER BY at, paper_id", (since,)).fetchall()
        return {
            "collections": [[s, n, src, c, members.get(s, [])] for s, n, src, c in rows],
            "last_visit": since,
            "arrivals": [[str(p), str(a)] for p, a in arrivals],
        }

    def _restore_feed(self, data: dict[str, Any]) -> dict[str, int]:
        """Add the mirrored collections, last visit and ingest times that the catalogue lacks (inside the
        caller's transaction); returns what was added, by kind."""
        added = {"collections": 0, "collection papers": 0, "last visit": 0, "ingest times": 0}
        for slug, name, source, created, ids in data.get("collections", []):
            added["collections"] += self._conn.execute(
                "INSERT OR IGNORE INTO collections (slug, name, source, created) VALUES (?, ?, ?, ?)", (slug, name, source, created)
            ).rowcount
            cur = self._conn.executemany("INSERT OR IGNORE INTO collection_papers (collection, paper_id) VALUES (?, ?)", [(slug, i) for i in ids])
            added["collection papers"] += max(cur.rowcount, 0)
        visit = read_visit(data.get("last_visit"))
        if visit is not None:  # an unreadable or far-future mirrored visit is not restored (the first-visit window applies)
            added["last visit"] = self._conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (LAST_VISIT_KEY, stamp(visit))
            ).rowcount
        cur = self._conn.executemany("INSERT OR IGNORE INTO paper_added (paper_id, at) VALUES (?, ?)", data.get("arrivals", []))
        added["ingest times"] = max(cur.rowcount, 0)
        return added

    @guarded
    def delete_meta(self, key: str) -> None:
        """Remove a meta key (nothing when it is not there)."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM meta WHERE key=?", (key,))

    @guarded
    def added_between(self, since: dt.datetime, until: dt.datetime | None = None) -> dict[str, dt.datetime]:
        """Papers first stored at or after `since` (and before `until`): id -> ingest time, newest first."""
        q, args = "SELECT a.paper_id, a.at FROM paper_added a JOIN papers p ON p.id=a.paper_id WHERE a.at >= ?", [stamp(since)]
        if until is not None:
            q += " AND a.at < ?"
            args.append(stamp(until))
        with self._lock:
            rows = self._conn.execute(q + " ORDER BY a.at DESC, a.paper_id", args).fetchall()
        return {str(pid): dt.datetime.fromisoformat(at) for pid, at in rows}

    @guarded
    def mark_old(self, ids: Iterable[str]) -> None:
        """Give these papers an ingest time before any visit (rows rebuilt by a repair whose time was lost): they
        are not arrivals, and ingesting their source again does not make them new."""
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO paper_added (paper_id, at) VALUES (?, ?)", [(i, LONG_AGO) for i in ids])

    @guarded
    def save_collection(self, slug: str, name: str, source: str, ids: Iterable[str]) -> int:
        """Create a collection or add papers to it; returns its size."""
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT INTO collections (slug, name, source, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(slug) DO UPDATE SET source=excluded.source",
                (slug, name, source, stamp(utc_now())),
            )
            self._conn.executemany(
                "INSERT OR IGNORE INTO collection_papers (collection, paper_id) VALUES (?, ?)", [(slug, i) for i in ids]
            )
            size = int(self._conn.execute("SELECT COUNT(*) FROM collection_papers WHERE collection=?", (slug,)).fetchone()[0])
        self._write_mirror()  # a damaged catalogue must not take the collection with it
        return size

    @guarded
    def collections(self) -> list[Collection]:
        """Every collection, by name."""
        q = """SELECT c.slug, c.name, c.source, c.created, COUNT(m.paper_id) FROM collections c
               LEFT JOIN collection_papers m ON m.collection=c.slug GROUP BY c.slug ORDER BY c.name"""
        with self._lock:
            return [Collection(str(s), str(n), str(src), str(c), int(k)) for s, n, src, c, k in self._conn.execute(q)]

    @guarded
    def collection_papers(self, slug: str) -> list[str]:
        """Ids of a collection's papers that are in the store, newest first."""
        q = """SELECT p.id FROM papers p JOIN collection_papers m ON m.paper_id=p.id WHERE m.collection=?
               ORDER BY p.date DESC, p.id DESC"""
        with self._lock:
            return [r[0] for r in self._conn.execute(q, (slug,))]
