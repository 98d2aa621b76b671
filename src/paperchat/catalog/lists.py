"""The catalogue's user lists: follows, saves and ratings ("more like this" +1, "not interested" -1), and the mirror of everything the user made
(`user_lists.json` beside the database, rewritten atomically on each change): follows, saves, and the feed's
part (collections with their papers, the last visit, the ingest times since it: `FeedTables.feed_lists`). A
new, empty catalogue restores them from the mirror. A mixin of Catalog: one SQLite connection and lock.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from paperchat.catalog.db import damaged, guarded
from paperchat.catalog.feed import FeedTables

USER_LISTS = "user_lists.json"
ARRIVALS_EVERY_S = 30.0  # new ingest times reach the mirror at most this late (or when the catalogue closes)


class UserLists(FeedTables):
    """Follows, saves and the mirror; Catalog provides the connection, lock, path and `mirror` (the file)."""

    mirror: Path
    restored: dict[str, int]
    _mirror_due: float | None = None  # when waiting ingest times are due in the mirror (None: nothing waits)

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

    def user_lists(self) -> dict[str, Any]:
        """What the mirror holds: {"follows": [[topic, since], ...], "saves": [[paper_id, since], ...],
        "ratings": [[paper_id, +1 or -1, since], ...]} and the feed's part (`feed_lists`: "collections",
        "last_visit", "arrivals")."""
        with self._lock:
            return {
                "follows": [list(r) for r in self._conn.execute("SELECT topic, since FROM follows ORDER BY since")],
                "saves": [list(r) for r in self._conn.execute("SELECT paper_id, since FROM saves ORDER BY since")],
                "ratings": [list(r) for r in self._conn.execute("SELECT paper_id, value, since FROM ratings ORDER BY since, paper_id")],
                **self.feed_lists(),
            }

    def _write_mirror(self) -> None:
        """Rewrite user_lists.json atomically (a temporary file renamed over it)."""
        tmp = self.mirror.with_name(f"{USER_LISTS}.tmp-{os.getpid()}-{threading.get_ident()}")
        tmp.write_text(json.dumps(self.user_lists(), indent=1))
        os.replace(tmp, self.mirror)
        self._mirror_due = None

    def _arrivals_changed(self) -> None:
        """New ingest times: mirrored at most every ARRIVALS_EVERY_S seconds (and on close). A bulk ingest before
        any visit would otherwise rewrite every arrival after every batch: 32,000 papers upserted in batches of
        256 took 17.1 s against 1.5 s without the mirror, and 1.3 s this way (one 2 MB write at the end; a real
        ingest of that size, about 25 minutes, writes it about 50 times). What the user does is mirrored at once."""
        now = time.monotonic()
        if self._mirror_due is None:
            self._mirror_due = now + ARRIVALS_EVERY_S
        elif now >= self._mirror_due:
            self._write_mirror()

    def flush_mirror(self) -> None:
        """Write the mirror now when ingest times are waiting for it."""
        if self._mirror_due is not None:
            self._write_mirror()

    def _mirror_json(self) -> Any:
        try:
            return json.loads(self.mirror.read_text())
        except (OSError, ValueError):
            return None

    def read_mirror(self) -> dict[str, Any] | None:
        """The mirrored lists (see `user_lists`), or None when there is no readable mirror; a mirror written
        before collections were mirrored reads as having none."""
        try:
            data: Any = self._mirror_json()
            out: dict[str, Any] = {k: [[str(a), str(b)] for a, b in data.get(k, [])] for k in ("follows", "saves", "arrivals")}
            out["collections"] = [[str(s), str(n), str(src), str(c), [str(i) for i in ids]] for s, n, src, c, ids in data.get("collections", [])]
            out["last_visit"] = str(data.get("last_visit") or "")
            # a mirror written before ratings existed reads as having none; a value other than +1/-1 is dropped
            out["ratings"] = [[str(i), int(v), str(t)] for i, v, t in data.get("ratings", []) if int(v) in (1, -1)]
            return out
        except (TypeError, ValueError, AttributeError):
            return None

    def restore_user_lists(self) -> int:
        """Add the mirrored follows, saves, collections, last visit and ingest times that the catalogue lacks;
        returns how many follows and saves were added (`restored` counts every kind)."""
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
                cur = self._conn.executemany("INSERT OR IGNORE INTO ratings (paper_id, value, since) VALUES (?, ?, ?)", data["ratings"])
                rated = max(cur.rowcount, 0)
                self.restored = {"follows and saves": added, "ratings": rated, **self._restore_feed(data)}
        except sqlite3.DatabaseError as exc:
            raise damaged(self.path, exc) from exc
        return added

    @guarded
    def follow(self, topic: str, on: bool = True) -> None:
        """Follow a topic (or unfollow it when on is False)."""
        self._toggle("follows", "topic", topic, on)

    @guarded
    def save(self, paper_id: str, on: bool = True) -> None:
        """Save a paper (or unsave it when on is False)."""
        self._toggle("saves", "paper_id", paper_id, on)

    @guarded
    def followed(self) -> list[str]:
        """Followed topics, oldest follow first."""
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT topic FROM follows ORDER BY since")]

    @guarded
    def saved(self) -> list[str]:
        """Saved paper ids, most recently saved first."""
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT paper_id FROM saves ORDER BY since DESC")]

    @guarded
    def rate(self, paper_id: str, value: int) -> None:
        """Rate a paper: +1 "more like this", -1 "not interested", 0 clears its rating."""
        if value not in (1, 0, -1):
            raise ValueError(f"a rating is +1, -1 or 0, not {value!r}")
        with self._lock:
            with self._conn:
                if value:
                    self._conn.execute(
                        "INSERT INTO ratings (paper_id, value, since) VALUES (?, ?, ?) "
                        "ON CONFLICT(paper_id) DO UPDATE SET value=excluded.value, since=excluded.since",
                        (paper_id, value, dt.datetime.now().isoformat()),
                    )
                else:
                    self._conn.execute("DELETE FROM ratings WHERE paper_id=?", (paper_id,))
            self._write_mirror()

    @guarded
    def ratings(self) -> dict[str, int]:
        """Every rated paper: id -> +1 or -1, oldest rating first."""
        with self._lock:
            return {str(i): int(v) for i, v in self._conn.execute("SELECT paper_id, value FROM ratings ORDER BY since, paper_id")}
