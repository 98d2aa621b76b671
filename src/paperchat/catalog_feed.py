"""The catalogue's feed tables: when each paper entered the store (for `paperchat digest`), and personal
collections (`paperchat import`). A mixin of Catalog, like catalog_topics: one SQLite connection and lock.

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

from paperchat.catalog_topics import _guarded

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


def utc_now() -> dt.datetime:
    """Now, in UTC (ingest times and the last visit are stored as UTC ISO strings, which sort as times)."""
    return dt.datetime.now(dt.UTC)


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

    def _mark_added(self, ids: Iterable[str]) -> None:
        """Record now as the ingest time of papers that have none (inside the caller's transaction)."""
        now = stamp(utc_now())
        self._conn.executemany("INSERT OR IGNORE INTO paper_added (paper_id, at) VALUES (?, ?)", [(i, now) for i in ids])

    @_guarded
    def delete_meta(self, key: str) -> None:
        """Remove a meta key (nothing when it is not there)."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM meta WHERE key=?", (key,))

    @_guarded
    def added_between(self, since: dt.datetime, until: dt.datetime | None = None) -> dict[str, dt.datetime]:
        """Papers first stored at or after `since` (and before `until`): id -> ingest time, newest first."""
        q, args = "SELECT a.paper_id, a.at FROM paper_added a JOIN papers p ON p.id=a.paper_id WHERE a.at >= ?", [stamp(since)]
        if until is not None:
            q += " AND a.at < ?"
            args.append(stamp(until))
        with self._lock:
            rows = self._conn.execute(q + " ORDER BY a.at DESC, a.paper_id", args).fetchall()
        return {str(pid): dt.datetime.fromisoformat(at) for pid, at in rows}

    @_guarded
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
            return int(self._conn.execute("SELECT COUNT(*) FROM collection_papers WHERE collection=?", (slug,)).fetchone()[0])

    @_guarded
    def collections(self) -> list[Collection]:
        """Every collection, by name."""
        q = """SELECT c.slug, c.name, c.source, c.created, COUNT(m.paper_id) FROM collections c
               LEFT JOIN collection_papers m ON m.collection=c.slug GROUP BY c.slug ORDER BY c.name"""
        with self._lock:
            return [Collection(str(s), str(n), str(src), str(c), int(k)) for s, n, src, c, k in self._conn.execute(q)]

    @_guarded
    def collection_papers(self, slug: str) -> list[str]:
        """Ids of a collection's papers that are in the store, newest first."""
        q = """SELECT p.id FROM papers p JOIN collection_papers m ON m.paper_id=p.id WHERE m.collection=?
               ORDER BY p.date DESC, p.id DESC"""
        with self._lock:
            return [r[0] for r in self._conn.execute(q, (slug,))]
