"""The paper catalogue (SQLite in the data directory): paper metadata, topic membership, user lists.

Chroma holds the chunks and vectors; this holds what pages and lists need without touching vectors.
Every write is one transaction, so a killed process leaves either the old or the new row.

Follows and saves are also mirrored to `user_lists.json` beside the database (rewritten atomically on each
change), so a damaged or recreated catalogue does not take them with it: a new, empty catalogue restores
them from the mirror. A damaged database file raises StoreError naming `paperchat doctor --repair`.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import numpy as np

from paperchat.errors import StoreError
from paperchat.types import Paper

USER_LISTS = "user_lists.json"
REPAIR_HINT = "run `paperchat doctor --repair` (it moves the damaged file aside and rebuilds what it can)"
_P = ParamSpec("_P")
_R = TypeVar("_R")


def damaged(path: Path, exc: BaseException) -> StoreError:
    """The error for a catalogue file SQLite cannot read."""
    return StoreError(f"the catalogue {path} is damaged ({exc})", REPAIR_HINT)


def _guarded(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn SQLite's errors about a damaged file into a StoreError that says what to run."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise damaged(args[0].path, exc) from exc  # type: ignore[attr-defined]

    return wrapper

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
"""

# Discovered topics (paperchat.discovery). Additive: an older catalogue gains these empty tables on open.
_DISCOVERY_SCHEMA = """
CREATE TABLE IF NOT EXISTS discovered_topics (
    slug TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    parent TEXT,
    parent_share REAL NOT NULL DEFAULT 0,
    size INTEGER NOT NULL,
    terms TEXT NOT NULL,
    centroid BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS paper_tags (
    paper_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    rank INTEGER NOT NULL,
    score REAL NOT NULL,
    PRIMARY KEY (paper_id, topic)
);
CREATE INDEX IF NOT EXISTS paper_tags_topic ON paper_tags(topic);
"""


@dataclass(frozen=True)
class DiscoveredTopic:
    """A topic found by clustering: its label, the hand-written topic it nests under, its centroid.

    `parent_share` is the fraction of its papers that the parent's rules also hold; `size` counts the papers
    clustered into it (each paper in one cluster); `terms` are its best label phrases, best first.
    """

    slug: str
    label: str
    parent: str | None
    parent_share: float
    size: int
    terms: tuple[str, ...]
    centroid: np.ndarray


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


class Catalog:
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
                self._conn.executescript(_DISCOVERY_SCHEMA)
                for table in ("papers", "paper_topics", "meta", "follows", "saves"):  # cheap: reads each table's pages
                    self._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise damaged(path, exc) from exc
        if self.was_empty:
            self.restore_user_lists()

    def close(self) -> None:
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

    @_guarded
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

    @_guarded
    def sample_abstract_hashes(self, n: int) -> list[str]:
        """Up to n abstract chunk ids (a paper's abstract_hash is its abstract chunk's id), picked at random."""
        with self._lock:
            q = "SELECT abstract_hash FROM papers WHERE abstract_hash IS NOT NULL ORDER BY random() LIMIT ?"
            return [r[0] for r in self._conn.execute(q, (n,))]

    @_guarded
    def stored_hashes(self) -> dict[str, tuple[str | None, str | None, str | None]]:
        """Every paper's (abstract_hash, pdf_hash, pdf_path): what the store should hold for it."""
        with self._lock:
            rows = self._conn.execute("SELECT id, abstract_hash, pdf_hash, pdf_path FROM papers").fetchall()
        return {str(r[0]): (r[1], r[2], r[3]) for r in rows}

    @_guarded
    def upsert_papers(self, rows: Iterable[tuple[Paper, str | None, list[str]]]) -> None:
        """Insert or update papers with their abstract hash and topics, keeping PDF fields."""
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

    @_guarded
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

    def _set_topics(self, paper_id: str, topics: list[str]) -> None:
        self._conn.execute("DELETE FROM paper_topics WHERE paper_id=?", (paper_id,))
        self._conn.executemany(
            "INSERT OR IGNORE INTO paper_topics (paper_id, topic) VALUES (?, ?)", [(paper_id, t) for t in topics]
        )

    @_guarded
    def replace_all_topics(self, memberships: dict[str, list[str]]) -> None:
        """Replace every paper's topics at once (after the topic rules changed)."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM paper_topics")
            self._conn.executemany(
                "INSERT INTO paper_topics (paper_id, topic) VALUES (?, ?)",
                [(pid, t) for pid, ts in memberships.items() for t in ts],
            )

    @_guarded
    def remove_paper(self, paper_id: str) -> bool:
        with self._lock:
            with self._conn:
                cur = self._conn.execute("DELETE FROM papers WHERE id=?", (paper_id,))
                self._conn.execute("DELETE FROM paper_topics WHERE paper_id=?", (paper_id,))
                self._conn.execute("DELETE FROM paper_tags WHERE paper_id=?", (paper_id,))
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

    @_guarded
    def get(self, paper_id: str) -> Paper | None:
        papers = self.get_many([paper_id])
        return papers.get(paper_id)

    @_guarded
    def get_many(self, ids: Iterable[str]) -> dict[str, Paper]:
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

    @_guarded
    def find_by_pdf_sha(self, sha256: str) -> Paper | None:
        with self._lock:
            row = self._conn.execute("SELECT id FROM papers WHERE pdf_sha256=?", (sha256,)).fetchone()
        return self.get(row[0]) if row else None

    @_guarded
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

    @_guarded
    def topic_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._conn.execute("SELECT topic, COUNT(*) FROM paper_topics GROUP BY topic").fetchall())

    @_guarded
    def topic_dates(self, topic: str | None) -> list[dt.date]:
        """Dates of all papers (topic=None) or of one topic's papers."""
        if topic is None:
            q, args = "SELECT date FROM papers WHERE date IS NOT NULL", []
        else:
            q = "SELECT p.date FROM papers p JOIN paper_topics t ON t.paper_id=p.id WHERE t.topic=? AND p.date IS NOT NULL"
            args = [topic]
        with self._lock:
            return [dt.date.fromisoformat(r[0]) for r in self._conn.execute(q, args)]

    @_guarded
    def shared_papers(self, topic: str) -> dict[str, int]:
        """For each other topic, how many papers it shares with `topic`."""
        q = """SELECT b.topic, COUNT(*) FROM paper_topics a JOIN paper_topics b ON a.paper_id=b.paper_id
               WHERE a.topic=? AND b.topic<>? GROUP BY b.topic"""
        with self._lock:
            return dict(self._conn.execute(q, (topic, topic)).fetchall())

    @_guarded
    def iter_papers(self) -> Iterator[Paper]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {self._COLS} FROM papers").fetchall()
        for row in rows:
            yield self._row_to_paper(row, [])

    @_guarded
    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0])

    # -- meta and user lists -------------------------------------------------------------------

    @_guarded
    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    @_guarded
    def set_meta(self, key: str, value: str) -> None:
        with self._lock, self._conn:
            self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _toggle(self, table: str, col: str, key: str, on: bool) -> None:
        with self._lock:
            with self._conn:
                if on:
                    self._conn.execute(
                        f"INSERT OR IGNORE INTO {table} ({col}, since) VALUES (?, ?)", (key, dt.datetime.now().isoformat())
                    )
                else:
                    self._conn.execute(f"DELETE FROM {table} WHERE {col}=?", (key,))
            self._write_mirror()

    def user_lists(self) -> dict[str, list[list[str]]]:
        """Follows and saves as {"follows": [[topic, since], ...], "saves": [[paper_id, since], ...]}."""
        with self._lock:
            return {
                "follows": [list(r) for r in self._conn.execute("SELECT topic, since FROM follows ORDER BY since")],
                "saves": [list(r) for r in self._conn.execute("SELECT paper_id, since FROM saves ORDER BY since")],
            }

    def _write_mirror(self) -> None:
        """Rewrite user_lists.json atomically (a temporary file renamed over it)."""
        tmp = self.mirror.with_name(f"{USER_LISTS}.tmp-{os.getpid()}-{threading.get_ident()}")
        tmp.write_text(json.dumps(self.user_lists(), indent=1))
        os.replace(tmp, self.mirror)

    def read_mirror(self) -> dict[str, list[list[str]]] | None:
        """The mirrored follows and saves, or None when there is no readable mirror."""
        try:
            data: Any = json.loads(self.mirror.read_text())
            return {k: [[str(a), str(b)] for a, b in data.get(k, [])] for k in ("follows", "saves")}
        except (OSError, ValueError, TypeError, AttributeError):
            return None

    def restore_user_lists(self) -> int:
        """Add the mirrored follows and saves that the catalogue lacks; returns how many were added."""
        data = self.read_mirror()
        if not data:
            return 0
        added = 0
        try:
            with self._lock, self._conn:
                for table, col in (("follows", "topic"), ("saves", "paper_id")):
                    for key, since in data[table]:
                        added += self._conn.execute(
                            f"INSERT OR IGNORE INTO {table} ({col}, since) VALUES (?, ?)", (key, since)
                        ).rowcount
        except sqlite3.DatabaseError as exc:
            raise damaged(self.path, exc) from exc
        return added

    @_guarded
    def follow(self, topic: str, on: bool = True) -> None:
        self._toggle("follows", "topic", topic, on)

    @_guarded
    def save(self, paper_id: str, on: bool = True) -> None:
        self._toggle("saves", "paper_id", paper_id, on)

    @_guarded
    def followed(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT topic FROM follows ORDER BY since")]

    @_guarded
    def saved(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT paper_id FROM saves ORDER BY since DESC")]

    # -- discovered topics and tags -------------------------------------------------------------

    @_guarded
    def replace_discovered(
        self, topics: list[DiscoveredTopic], tags: dict[str, list[tuple[str, float]]], run: dict[str, Any]
    ) -> None:
        """Replace every discovered topic and every paper's tags, and record how they were built, at once."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM discovered_topics")
            self._conn.execute("DELETE FROM paper_tags")
            self._conn.executemany(
                "INSERT INTO discovered_topics (slug, label, parent, parent_share, size, terms, centroid) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (t.slug, t.label, t.parent, t.parent_share, t.size, json.dumps(list(t.terms)),
                     np.asarray(t.centroid, dtype=np.float32).tobytes())
                    for t in topics
                ],
            )
            self._insert_tags(tags)
            self._conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", ("discovery", json.dumps(run, sort_keys=True))
            )

    def _insert_tags(self, tags: dict[str, list[tuple[str, float]]]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO paper_tags (paper_id, topic, rank, score) VALUES (?, ?, ?, ?)",
            [(pid, slug, r, float(score)) for pid, ts in tags.items() for r, (slug, score) in enumerate(ts, start=1)],
        )

    @_guarded
    def set_tags(self, tags: dict[str, list[tuple[str, float]]]) -> None:
        """Replace the tags of the given papers (best first; an empty list removes a paper's tags)."""
        ids = list(tags)
        with self._lock, self._conn:
            for i in range(0, len(ids), 900):
                part = ids[i : i + 900]
                self._conn.execute(f"DELETE FROM paper_tags WHERE paper_id IN ({','.join('?' * len(part))})", part)
            self._insert_tags(tags)

    @_guarded
    def discovered(self) -> list[DiscoveredTopic]:
        """The discovered topics, largest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT slug, label, parent, parent_share, size, terms, centroid FROM discovered_topics ORDER BY size DESC, slug"
            ).fetchall()
        return [
            DiscoveredTopic(str(s), str(lab), par, float(share), int(n), tuple(json.loads(terms)), np.frombuffer(c, dtype=np.float32))
            for s, lab, par, share, n, terms, c in rows
        ]

    @_guarded
    def has_discovered(self) -> bool:
        """Whether any discovered topic is stored (cheap: for the ingest hook)."""
        with self._lock:
            return self._conn.execute("SELECT 1 FROM discovered_topics LIMIT 1").fetchone() is not None

    @_guarded
    def tags_of(self, ids: Iterable[str]) -> dict[str, list[tuple[str, float]]]:
        """Each given paper's tags as (slug, similarity), best first; papers without tags are left out."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, list[tuple[str, float]]] = {}
        with self._lock:
            for i in range(0, len(ids), 900):
                part = ids[i : i + 900]
                q = f"SELECT paper_id, topic, score FROM paper_tags WHERE paper_id IN ({','.join('?' * len(part))}) ORDER BY paper_id, rank"
                for pid, slug, score in self._conn.execute(q, part):
                    out.setdefault(pid, []).append((slug, float(score)))
        return out

    @_guarded
    def tagged_papers(self, slug: str, primary: bool = False) -> list[str]:
        """Ids of the papers tagged with a discovered topic (only those whose best tag it is with
        primary=True), newest first."""
        q = "SELECT p.id FROM papers p JOIN paper_tags t ON t.paper_id=p.id WHERE t.topic=?"
        q += " AND t.rank=1" if primary else ""
        with self._lock:
            return [r[0] for r in self._conn.execute(q + " ORDER BY p.date DESC, p.id DESC", (slug,))]

    @_guarded
    def primary_members(self) -> dict[str, set[str]]:
        """Discovered topic -> the papers whose best tag it is (to match an old run's topics to a new one's)."""
        out: dict[str, set[str]] = {}
        with self._lock:
            for pid, slug in self._conn.execute("SELECT paper_id, topic FROM paper_tags WHERE rank=1"):
                out.setdefault(slug, set()).add(pid)
        return out

    @_guarded
    def dates_by_topic(self) -> dict[str, list[dt.date]]:
        """Every topic's paper dates in one pass: hand-written topics by their rules, discovered ones by tags."""
        out: dict[str, list[dt.date]] = {}
        with self._lock:
            for table in ("paper_topics", "paper_tags"):
                q = f"SELECT t.topic, p.date FROM {table} t JOIN papers p ON p.id=t.paper_id WHERE p.date IS NOT NULL"
                for slug, d in self._conn.execute(q):
                    out.setdefault(slug, []).append(dt.date.fromisoformat(d))
        return out
