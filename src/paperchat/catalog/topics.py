"""The catalogue's discovered-topic tables (paperchat.discovery.clusters writes them): topics with their centroids and
labels, and each paper's tags. A mixin of Catalog, so the one SQLite connection and lock serve both.

The tables are created on open with IF NOT EXISTS: a catalogue made before them opens as before and gains
them empty.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.catalog.db import FEATURES_GENERATION, bump_features, guarded

log = logging.getLogger(__name__)
DISCOVERY_MIRROR = "discovered_topics.json"  # beside the database: what `doctor --repair` restores topics from


# Discovered topics (paperchat.discovery.clusters). Additive: an older catalogue gains these empty tables on open.
DISCOVERY_SCHEMA = """
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
CREATE TABLE IF NOT EXISTS paper_topics_learned (
    paper_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    share REAL NOT NULL,
    PRIMARY KEY (paper_id, topic)
);
"""


@dataclass(frozen=True)
class DiscoveredTopic:
    """A topic found by clustering: its label, the hand-written topic it nests under, its centroid.

    `parent_share` is the fraction of its papers that the parent's rules also hold; `size` counts the papers it
    tags first (near its centroid and saying its label; see paperchat.discovery.clusters); `terms` are its
    best label phrases, best first.
    """

    slug: str
    label: str
    parent: str | None
    parent_share: float
    size: int
    terms: tuple[str, ...]
    centroid: np.ndarray


class DiscoveryTables:
    """Reads and writes of the discovered-topic tables; Catalog provides the connection, lock and path."""

    path: Path
    _conn: sqlite3.Connection
    _lock: threading.RLock

    @guarded
    def replace_discovered(
        self, topics: list[DiscoveredTopic], tags: dict[str, list[tuple[str, float]]], run: dict[str, Any]
    ) -> None:
        """Replace every discovered topic and every paper's tags, and record how they were built, at once."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM discovered_topics")
            self._conn.execute("DELETE FROM paper_tags")
            bump_features(self._conn)
            self._insert_topics(topics)
            self._insert_tags(tags)
            self._conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", ("discovery", json.dumps(run, sort_keys=True))
            )
        self.write_discovery_mirror()

    def _insert_topics(self, topics: list[DiscoveredTopic]) -> None:
        self._conn.executemany(
            "INSERT INTO discovered_topics (slug, label, parent, parent_share, size, terms, centroid) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (t.slug, t.label, t.parent, t.parent_share, t.size, json.dumps(list(t.terms)),
                 np.asarray(t.centroid, dtype=np.float32).tobytes())
                for t in topics
            ],
        )

    def _insert_learned(self, learned: dict[str, dict[str, float]]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO paper_topics_learned (paper_id, topic, share) VALUES (?, ?, ?)",
            [(pid, slug, share) for slug, papers in learned.items() for pid, share in papers.items()],
        )

    def _insert_tags(self, tags: dict[str, list[tuple[str, float]]]) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO paper_tags (paper_id, topic, rank, score) VALUES (?, ?, ?, ?)",
            [(pid, slug, r, float(score)) for pid, ts in tags.items() for r, (slug, score) in enumerate(ts, start=1)],
        )

    @guarded
    def set_tags(self, tags: dict[str, list[tuple[str, float]]]) -> None:
        """Replace the tags of the given papers (best first; an empty list removes a paper's tags)."""
        ids = list(tags)
        with self._lock, self._conn:
            for i in range(0, len(ids), 900):
                part = ids[i : i + 900]
                self._conn.execute(f"DELETE FROM paper_tags WHERE paper_id IN ({','.join('?' * len(part))})", part)
            self._insert_tags(tags)

    @guarded
    def replace_learned(self, learned: dict[str, dict[str, float]], run: dict[str, Any]) -> None:
        """Replace every hand-written topic's learned members (paperchat.discovery.membership) at once."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM paper_topics_learned")
            bump_features(self._conn)
            self._insert_learned(learned)
            self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", ("membership", json.dumps(run, sort_keys=True)))
        self.write_discovery_mirror()

    # -- the mirror: discovered topics, their tags and the learned members survive a recreated catalogue ----

    @property
    def discovery_mirror(self) -> Path:
        """The JSON copy of the discovered topics, tags and learned members beside the database."""
        return self.path.parent / DISCOVERY_MIRROR

    @guarded
    def write_discovery_mirror(self) -> None:
        """Rewrite the mirror atomically from the tables (after a discovery or a `topics learn` run).

        Tags set at ingest later are not mirrored (that would rewrite megabytes per ingest batch): after a
        restore, those papers are tagged again when their source is ingested again (the ingest hook tags papers
        that have no tags). Written best-effort: a failed write is logged, the catalogue keeps the result."""
        with self._lock:
            meta = dict(self._conn.execute("SELECT key, value FROM meta WHERE key IN ('discovery', 'membership')").fetchall())
            topics = self._conn.execute(
                "SELECT slug, label, parent, parent_share, size, terms, centroid FROM discovered_topics ORDER BY slug"
            ).fetchall()
            tags: dict[str, list[list[Any]]] = {}
            for pid, slug, score in self._conn.execute("SELECT paper_id, topic, score FROM paper_tags ORDER BY paper_id, rank"):
                tags.setdefault(pid, []).append([slug, score])
            learned: dict[str, dict[str, float]] = {}
            for pid, slug, share in self._conn.execute("SELECT paper_id, topic, share FROM paper_topics_learned ORDER BY topic, paper_id"):
                learned.setdefault(slug, {})[pid] = share
        data: dict[str, Any] = {
            "discovery": json.loads(meta["discovery"]) if "discovery" in meta else None,
            "membership": json.loads(meta["membership"]) if "membership" in meta else None,
            "topics": [
                {"slug": s, "label": lab, "parent": par, "parent_share": share, "size": n, "terms": json.loads(terms),
                 "centroid": base64.b64encode(c).decode("ascii")}
                for s, lab, par, share, n, terms, c in topics
            ],
            "tags": tags,
            "learned": learned,
        }
        if not topics:  # a catalogue recreated by opening it, not yet repaired: keep the topics the mirror holds
            old = self._read_discovery_mirror()
            if old and old.get("topics"):
                data.update(topics=old["topics"], tags=old.get("tags", {}), discovery=data["discovery"] or old.get("discovery"))
        tmp = self.discovery_mirror.with_name(f"{DISCOVERY_MIRROR}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            tmp.write_text(json.dumps(data, separators=(",", ":")))
            os.replace(tmp, self.discovery_mirror)
        except OSError as exc:  # the catalogue holds the result; only its copy is missing
            tmp.unlink(missing_ok=True)
            log.warning("could not write %s (%s): a damaged catalogue would lose its discovered topics", self.discovery_mirror, exc)

    def _read_discovery_mirror(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.discovery_mirror.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    @guarded
    def restore_discovery(self) -> dict[str, int] | None:
        """Fill empty discovered-topic tables from the mirror (for a recreated catalogue): topics, the tags of
        papers the catalogue holds, learned members and how both were built. Returns what was added by kind:
        {} when the tables already hold topics or the mirror holds none, None when the mirror is missing or
        cannot be read (not JSON, missing fields, centroids of different lengths, repeated slugs)."""
        data = self._read_discovery_mirror()
        if data is None:
            return None
        try:
            topics = [
                DiscoveredTopic(str(t["slug"]), str(t["label"]), t["parent"], float(t["parent_share"]), int(t["size"]),
                                tuple(str(x) for x in t["terms"]), np.frombuffer(base64.b64decode(t["centroid"]), dtype=np.float32))
                for t in data["topics"]
            ]
            tags = {str(pid): [(str(s), float(sc)) for s, sc in ts] for pid, ts in data["tags"].items()}
            learned = {str(slug): {str(p): float(v) for p, v in ps.items()} for slug, ps in data["learned"].items()}
            if len({t.slug for t in topics}) != len(topics) or len({t.centroid.shape for t in topics}) > 1:
                return None
            if any(t.parent is not None and not isinstance(t.parent, str) for t in topics):
                return None
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        with self._lock, self._conn:
            if self._conn.execute("SELECT 1 FROM discovered_topics LIMIT 1").fetchone() is not None:
                return {}
            have = {r[0] for r in self._conn.execute("SELECT id FROM papers")}
            tags = {pid: ts for pid, ts in tags.items() if pid in have}
            learned = {slug: {p: v for p, v in ps.items() if p in have} for slug, ps in learned.items()}
            self._insert_topics(topics)
            self._insert_tags(tags)
            self._insert_learned(learned)
            for key in ("discovery", "membership"):
                if data.get(key):
                    self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(data[key], sort_keys=True)))
        return {"topics": len(topics), "tagged papers": len(tags), "learned members": sum(len(p) for p in learned.values())}

    def _members(self, sql: str) -> dict[str, set[str]]:
        """Topic -> its papers, from a query of (paper_id, topic) rows."""
        out: dict[str, set[str]] = {}
        with self._lock:
            for pid, slug in self._conn.execute(sql):
                out.setdefault(slug, set()).add(pid)
        return out

    @guarded
    def learned_members(self) -> dict[str, set[str]]:
        """Each hand-written topic's learned members (papers its rules miss that its neighbours hold)."""
        return self._members("SELECT paper_id, topic FROM paper_topics_learned")

    @guarded
    def rule_members(self) -> dict[str, set[str]]:
        """Each hand-written topic's members by its keyword rules."""
        return self._members("SELECT paper_id, topic FROM paper_topics")

    _discovered_cache: tuple[tuple[int, int], list[DiscoveredTopic]] | None = None

    @guarded
    def features_version(self) -> tuple[int, ...]:
        """What the papers' topic features are made of, as numbers that change when it does: rule members, learned
        members, discovered topics, tags and collections (counts and row ids; ratings, follows and visits leave it
        as it is), so a cache of those features survives every click that only writes a rating."""
        tables = ("paper_topics", "paper_topics_learned", "discovered_topics", "paper_tags", "collections")
        with self._lock:
            out: list[int] = []
            for t in tables:
                n, top, total = self._conn.execute(f"SELECT count(*), coalesce(max(rowid), 0), coalesce(total(rowid), 0) FROM {t}").fetchone()
                out += [int(n), int(top), int(total)]
            row = self._conn.execute("SELECT value FROM meta WHERE key=?", (FEATURES_GENERATION,)).fetchone()
            return (*out, int(row[0]) if row else 0)

    @guarded
    def discovered(self) -> list[DiscoveredTopic]:
        """The discovered topics, largest first. Kept between calls until the catalogue changes (a write on this
        connection, or a commit by another process: SQLite's data_version); a topic page asks several times, and
        reading the centroids cost about 10 ms a time for 320 topics."""
        with self._lock:
            key = (int(self._conn.execute("PRAGMA data_version").fetchone()[0]), self._conn.total_changes)
            if self._discovered_cache is not None and self._discovered_cache[0] == key:
                return list(self._discovered_cache[1])
            rows = self._conn.execute(
                "SELECT slug, label, parent, parent_share, size, terms, centroid FROM discovered_topics ORDER BY size DESC, slug"
            ).fetchall()
            out = [
                DiscoveredTopic(str(s), str(lab), par, float(share), int(n), tuple(json.loads(terms)), np.frombuffer(c, dtype=np.float32))
                for s, lab, par, share, n, terms, c in rows
            ]
            self._discovered_cache = (key, out)
        return list(out)

    @guarded
    def has_discovered(self) -> bool:
        """Whether any discovered topic is stored (cheap: for the ingest hook)."""
        with self._lock:
            return self._conn.execute("SELECT 1 FROM discovered_topics LIMIT 1").fetchone() is not None

    @guarded
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

    @guarded
    def tagged_papers(self, slug: str, primary: bool = False) -> list[str]:
        """Ids of the papers tagged with a discovered topic (only those whose best tag it is with
        primary=True), newest first."""
        q = "SELECT p.id FROM papers p JOIN paper_tags t ON t.paper_id=p.id WHERE t.topic=?"
        q += " AND t.rank=1" if primary else ""
        with self._lock:
            return [r[0] for r in self._conn.execute(q + " ORDER BY p.date DESC, p.id DESC", (slug,))]

    @guarded
    def tagged_overview(self, slug: str) -> tuple[list[dt.date], dict[str, int]]:
        """For a discovered topic's page, in SQL: the dates of its tagged papers, and how many of them each other
        topic holds (hand-written topics by their rules, discovered ones by tags)."""
        with self._lock:
            dates = [
                dt.date.fromisoformat(d)
                for (d,) in self._conn.execute(
                    "SELECT p.date FROM paper_tags t JOIN papers p ON p.id=t.paper_id WHERE t.topic=? AND p.date IS NOT NULL", (slug,)
                )
            ]
            shared: dict[str, int] = {}
            for q in (
                "SELECT o.topic, COUNT(*) FROM paper_tags t JOIN paper_topics o ON o.paper_id=t.paper_id WHERE t.topic=? GROUP BY o.topic",
                "SELECT o.topic, COUNT(*) FROM paper_tags t JOIN paper_tags o ON o.paper_id=t.paper_id "
                "WHERE t.topic=? AND o.topic != t.topic GROUP BY o.topic",
            ):
                for other, n in self._conn.execute(q, (slug,)):
                    shared[str(other)] = shared.get(str(other), 0) + int(n)
        return dates, shared

    @guarded
    def tag_counts(self) -> dict[str, int]:
        """Number of papers tagged with each discovered topic."""
        with self._lock:
            return dict(self._conn.execute("SELECT topic, COUNT(*) FROM paper_tags GROUP BY topic").fetchall())

    @guarded
    def primary_members(self) -> dict[str, set[str]]:
        """Discovered topic -> the papers whose best tag it is (to match an old run's topics to a new one's)."""
        return self._members("SELECT paper_id, topic FROM paper_tags WHERE rank=1")

    @guarded
    def dates_by_topic(self, learned: bool = False) -> dict[str, list[dt.date]]:
        """Every topic's paper dates in one pass: hand-written topics by their rules (and, with learned, their
        learned members too), discovered ones by tags."""
        out: dict[str, list[dt.date]] = {}
        with self._lock:
            for table in ("paper_topics", "paper_tags") + (("paper_topics_learned",) if learned else ()):
                q = f"SELECT t.topic, p.date FROM {table} t JOIN papers p ON p.id=t.paper_id WHERE p.date IS NOT NULL"
                for slug, d in self._conn.execute(q):
                    out.setdefault(slug, []).append(dt.date.fromisoformat(d))
        return out
