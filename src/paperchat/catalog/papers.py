"""The paper catalogue (SQLite in the data directory): paper metadata, topic membership, user lists.

Chroma holds the chunks and vectors; this holds what pages and lists need without touching vectors.
Every write is one transaction, so a killed process leaves either the old or the new row.

What the user made is also mirrored to `user_lists.json` beside the database (rewritten atomically on each
change): follows, saves, collections with their papers, the last visit and the ingest times of the papers
that arrived since it. A damaged or recreated catalogue does not take them with it: a new, empty catalogue
restores them from the mirror. A damaged database file raises StoreError naming `paperchat doctor --repair`.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from paperchat.catalog.db import bump_features, damaged, guarded
from paperchat.catalog.feed import FEED_SCHEMA, LAST_VISIT_KEY
from paperchat.catalog.lists import USER_LISTS, UserLists
from paperchat.catalog.topics import DISCOVERY_SCHEMA, DiscoveryTables
from paperchat.types import Paper

_SCHEMA = """
CREATE TABLE IF NOT EXISTS papers (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    authors TEXT NOT NULL,
    abstract TEXT NOT NULL,
    date TEXT,
    categories TEXT NOT NULL,
    url TEXT NOT NULL,
    pdf_path TEXT,
    pdf_sha256 TEXT,
    abstract_hash TEXT,
    pdf_hash TEXT
);
CREATE INDEX IF NOT EXISTS papers_date ON papers(date);
CREATE INDEX IF NOT EXISTS papers_pdf_sha ON papers(pdf_sha256);
CREATE TABLE IF NOT EXISTS paper_topics (
    paper_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    PRIMARY KEY (paper_id, topic)
);
CREATE INDEX IF NOT EXISTS paper_topics_topic ON paper_topics(topic);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS follows (topic TEXT PRIMARY KEY, since TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS saves (paper_id TEXT PRIMARY KEY, since TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ratings (paper_id TEXT PRIMARY KEY, value INTEGER NOT NULL, since TEXT NOT NULL);
"""


def _paper_columns(paper: Paper) -> tuple[object, ...]:
    """id, title, authors, abstract, date, categories, url: the metadata columns of a paper row."""
    return (
        paper.id,
        paper.title,
        json.dumps(paper.authors),
        paper.abstract,
        paper.date.isoformat() if paper.date else None,
        json.dumps(paper.categories),
        paper.url,
    )


class Catalog(DiscoveryTables, UserLists):
    """Paper metadata and user lists in one SQLite file (WAL mode, safe across threads)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.mirror = path.parent / USER_LISTS
        # a missing or 0-byte file: SQLite makes a new, empty catalogue of it (the caller may want to know)
        self.was_empty = not path.exists() or path.stat().st_size == 0
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
            with self._lock, self._conn:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.executescript(_SCHEMA)
                self._conn.executescript(DISCOVERY_SCHEMA)
                self._conn.executescript(FEED_SCHEMA)
                for table in ("papers", "paper_topics", "meta", "follows", "saves"):  # cheap: reads each table's pages
                    self._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise damaged(path, exc) from exc
        self.restored: dict[str, int] = {}  # what restore_user_lists added, by kind
        if self.was_empty:
            self.restore_user_lists()
        elif self.mirror.exists() and "collections" not in (self._mirror_json() or {}) and self.collections():
            self._write_mirror()  # a mirror written before collections were mirrored: add them now
        if not self.was_empty and not self.discovery_mirror.exists() and self.has_discovered():
            self.write_discovery_mirror()  # topics discovered before they were mirrored: mirror them now

    def close(self) -> None:
        """Write the ingest times that wait for the mirror, and close the database connection."""
        try:
            self.flush_mirror()
        except (OSError, sqlite3.DatabaseError):  # a damaged catalogue still closes
            pass
        self._conn.close()

    def integrity(self) -> str:
        """SQLite's quick check: "ok", or what is wrong (reads the whole file: for `paperchat doctor`)."""
        try:
            with self._lock:
                rows = self._conn.execute("PRAGMA quick_check").fetchall()
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return "; ".join(str(r[0]) for r in rows[:3])

    # -- papers -------------------------------------------------------------------------------

    @guarded
    def hashes(self, ids: Iterable[str]) -> dict[str, tuple[str | None, str | None]]:
        """(abstract_hash, pdf_hash) of the given papers that exist."""
        out: dict[str, tuple[str | None, str | None]] = {}
        ids = list(ids)
        with self._lock:
            for i in range(0, len(ids), 900):
                part = ids[i : i + 900]
                q = f"SELECT id, abstract_hash, pdf_hash FROM papers WHERE id IN ({','.join('?' * len(part))})"
                for pid, ah, ph in self._conn.execute(q, part):
                    out[pid] = (ah, ph)
        return out

    @guarded
    def sample_abstract_hashes(self, n: int) -> list[str]:
        """Up to n abstract chunk ids (a paper's abstract_hash is its abstract chunk's id), picked at random."""
        with self._lock:
            q = "SELECT abstract_hash FROM papers WHERE abstract_hash IS NOT NULL ORDER BY random() LIMIT ?"
            return [r[0] for r in self._conn.execute(q, (n,))]

    @guarded
    def stored_hashes(self) -> dict[str, tuple[str | None, str | None, str | None]]:
        """Every paper's (abstract_hash, pdf_hash, pdf_path): what the store should hold for it."""
        with self._lock:
            rows = self._conn.execute("SELECT id, abstract_hash, pdf_hash, pdf_path FROM papers").fetchall()
        return {str(r[0]): (r[1], r[2], r[3]) for r in rows}

    @guarded
    def upsert_papers(self, rows: Iterable[tuple[Paper, str | None, list[str]]], arrived: bool = True) -> None:
        """Insert or update papers with their abstract hash and topics, keeping PDF fields; `arrived`: record
        now as the ingest time of papers that have none (False when rows are rebuilt, not ingested)."""
        arrivals = 0
        with self._lock, self._conn:
            for paper, abstract_hash, topics in rows:
                self._conn.execute(
                    """INSERT INTO papers (id, title, authors, abstract, date, categories, url, abstract_hash)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT(id) DO UPDATE SET title=excluded.title, authors=excluded.authors,
                         abstract=excluded.abstract, date=COALESCE(excluded.date, papers.date),
                         categories=excluded.categories, url=excluded.url,
                         abstract_hash=excluded.abstract_hash""",
                    (*_paper_columns(paper), abstract_hash),
                )
                self._set_topics(paper.id, topics)
                if arrived:
                    arrivals += self._mark_added([paper.id])
        if arrivals:
            self._arrivals_changed()  # ingest times since the last visit are mirrored too (for the digest)

    @guarded
    def set_pdf(self, paper: Paper, pdf_path: str, pdf_sha256: str, pdf_hash: str, topics: list[str]) -> None:
        """Record that a PDF was ingested for a paper (creating the paper when it is new)."""
        with self._lock, self._conn:
            self._conn.execute(
                """INSERT INTO papers (id, title, authors, abstract, date, categories, url,
                                       pdf_path, pdf_sha256, pdf_hash)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT(id) DO UPDATE SET pdf_path=excluded.pdf_path,
                     pdf_sha256=excluded.pdf_sha256, pdf_hash=excluded.pdf_hash""",
                (*_paper_columns(paper), pdf_path, pdf_sha256, pdf_hash),
            )
            self._set_topics(paper.id, topics)
            arrived = self._mark_added([paper.id])
        if arrived:
            self._arrivals_changed()

    def _set_topics(self, paper_id: str, topics: list[str]) -> None:
        self._conn.execute("DELETE FROM paper_topics WHERE paper_id=?", (paper_id,))
        self._conn.executemany(
            "INSERT OR IGNORE INTO paper_topics (paper_id, topic) VALUES (?, ?)", [(paper_id, t) for t in topics]
        )

    @guarded
    def replace_all_topics(self, memberships: dict[str, list[str]]) -> None:
        """Replace every paper's topics at once (after the topic rules changed)."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM paper_topics")
            bump_features(self._conn)
            self._conn.executemany(
                "INSERT INTO paper_topics (paper_id, topic) VALUES (?, ?)",
                [(pid, t) for pid, ts in memberships.items() for t in ts],
            )

    @guarded
    def remove_paper(self, paper_id: str) -> bool:
        """Delete a paper with its topics, tags and save; True when it existed."""
        with self._lock:
            with self._conn:
                cur = self._conn.execute("DELETE FROM papers WHERE id=?", (paper_id,))
                self._conn.execute("DELETE FROM paper_topics WHERE paper_id=?", (paper_id,))
                self._conn.execute("DELETE FROM paper_tags WHERE paper_id=?", (paper_id,))
                self._conn.execute("DELETE FROM paper_added WHERE paper_id=?", (paper_id,))
                self._conn.execute("DELETE FROM collection_papers WHERE paper_id=?", (paper_id,))
                saved = self._conn.execute("DELETE FROM saves WHERE paper_id=?", (paper_id,)).rowcount
            if saved:
                self._write_mirror()
            return cur.rowcount > 0

    def _row_to_paper(self, row: tuple[object, ...], topics: list[str]) -> Paper:
        pid, title, authors, abstract, date, cats, url, pdf_path = row
        return Paper(
            id=str(pid),
            title=str(title),
            authors=json.loads(str(authors)),
            abstract=str(abstract),
            date=dt.date.fromisoformat(str(date)) if date else None,
            categories=json.loads(str(cats)),
            url=str(url),
            pdf_path=str(pdf_path) if pdf_path else None,
            topics=topics,
        )

    _COLS = "id, title, authors, abstract, date, categories, url, pdf_path"

    @guarded
    def get(self, paper_id: str) -> Paper | None:
        """The paper with this id, or None."""
        papers = self.get_many([paper_id])
        return papers.get(paper_id)

    @guarded
    def get_many(self, ids: Iterable[str]) -> dict[str, Paper]:
        """Papers by id (with their topics) for the ids found; unknown ids are left out."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, Paper] = {}
        with self._lock:
            for i in range(0, len(ids), 900):
                part = ids[i : i + 900]
                marks = ",".join("?" * len(part))
                topics: dict[str, list[str]] = {}
                for pid, t in self._conn.execute(
                    f"SELECT paper_id, topic FROM paper_topics WHERE paper_id IN ({marks}) ORDER BY topic", part
                ):
                    topics.setdefault(pid, []).append(t)
                for row in self._conn.execute(f"SELECT {self._COLS} FROM papers WHERE id IN ({marks})", part):
                    out[row[0]] = self._row_to_paper(row, topics.get(row[0], []))
        return out

    @guarded
    def find_by_pdf_sha(self, sha256: str) -> Paper | None:
        """The paper whose PDF has this SHA-256, or None."""
        with self._lock:
            row = self._conn.execute("SELECT id FROM papers WHERE pdf_sha256=?", (sha256,)).fetchone()
        return self.get(row[0]) if row else None

    @guarded
    def topic_papers(self, topic: str, since: dt.date | None = None, until: dt.date | None = None) -> list[str]:
        """Ids of a topic's papers, newest first."""
        q = "SELECT p.id FROM papers p JOIN paper_topics t ON t.paper_id=p.id WHERE t.topic=?"
        args: list[object] = [topic]
        if since:
            q += " AND p.date >= ?"
            args.append(since.isoformat())
        if until:
            q += " AND p.date <= ?"
            args.append(until.isoformat())
        q += " ORDER BY p.date DESC, p.id DESC"
        with self._lock:
            return [r[0] for r in self._conn.execute(q, args)]

    @guarded
    def papers_between(self, since: dt.date, until: dt.date | None = None) -> list[str]:
        """Ids of the papers listed on or after `since` (and on or before `until`), newest first."""
        q, args = "SELECT id FROM papers WHERE date >= ?", [since.isoformat()]
        if until:
            q += " AND date <= ?"
            args.append(until.isoformat())
        with self._lock:
            return [r[0] for r in self._conn.execute(q + " ORDER BY date DESC, id DESC", args)]

    @guarded
    def dates_and_categories(self) -> dict[str, tuple[dt.date | None, list[str]]]:
        """Every paper's listing date and arXiv categories, in one read (the feed's evaluation needs all)."""
        with self._lock:
            rows = self._conn.execute("SELECT id, date, categories FROM papers").fetchall()
        return {str(i): (dt.date.fromisoformat(d) if d else None, json.loads(c) if c else []) for i, d, c in rows}

    @guarded
    def topic_counts(self) -> dict[str, int]:
        """Number of papers in each topic."""
        with self._lock:
            return dict(self._conn.execute("SELECT topic, COUNT(*) FROM paper_topics GROUP BY topic").fetchall())

    @guarded
    def topic_dates(self, topic: str | None) -> list[dt.date]:
        """Dates of all papers (topic=None) or of one topic's papers."""
        if topic is None:
            q, args = "SELECT date FROM papers WHERE date IS NOT NULL", []
        else:
            q = "SELECT p.date FROM papers p JOIN paper_topics t ON t.paper_id=p.id WHERE t.topic=? AND p.date IS NOT NULL"
            args = [topic]
        with self._lock:
            return [dt.date.fromisoformat(r[0]) for r in self._conn.execute(q, args)]

    @guarded
    def date_counts(self) -> dict[dt.date, int]:
        """Number of papers per date, counted by SQLite (a few hundred dates rather than every paper's)."""
        with self._lock:
            q = "SELECT date, COUNT(*) FROM papers WHERE date IS NOT NULL GROUP BY date"
            return {dt.date.fromisoformat(d): int(n) for d, n in self._conn.execute(q)}

    @guarded
    def shared_papers(self, topic: str) -> dict[str, int]:
        """For each other topic, how many papers it shares with `topic`."""
        q = """SELECT b.topic, COUNT(*) FROM paper_topics a JOIN paper_topics b ON a.paper_id=b.paper_id
               WHERE a.topic=? AND b.topic<>? GROUP BY b.topic"""
        with self._lock:
            return dict(self._conn.execute(q, (topic, topic)).fetchall())

    @guarded
    def iter_papers(self) -> Iterator[Paper]:
        """Every paper in the catalogue (without topics)."""
        with self._lock:
            rows = self._conn.execute(f"SELECT {self._COLS} FROM papers").fetchall()
        for row in rows:
            yield self._row_to_paper(row, [])

    @guarded
    def titles(self) -> dict[str, str]:
        """Paper id -> title of every paper in the catalogue."""
        with self._lock:
            return dict(self._conn.execute("SELECT id, title FROM papers").fetchall())

    @guarded
    def count(self) -> int:
        """Number of papers in the catalogue."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0])

    # -- meta and user lists -------------------------------------------------------------------

    @guarded
    def get_meta(self, key: str) -> str | None:
        """The stored value of a meta key, or None."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    @guarded
    def set_meta(self, key: str, value: str) -> None:
        """Store a meta key's value, replacing any old one."""
        with self._lock, self._conn:
            self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        if key == LAST_VISIT_KEY:  # the last visit is the user's: mirrored (and the arrivals before it dropped there)
            self._write_mirror()
