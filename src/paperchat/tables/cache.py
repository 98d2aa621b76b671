"""Computed cells by key in `tables.sqlite` in the data folder, so adding a column computes only that column."""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path

from paperchat.tables.columns import Cell


class CellCache:
    """Cells by key in `tables.sqlite` (one table; safe to delete: cells are computed again)."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS cells (key TEXT PRIMARY KEY, cell TEXT NOT NULL)")
        self._lock = threading.Lock()

    def get(self, key: str) -> Cell | None:
        """The cached cell, or None (an unreadable entry counts as missing)."""
        with self._lock:
            row = self._conn.execute("SELECT cell FROM cells WHERE key=?", (key,)).fetchone()
        if not row:
            return None
        try:
            d = json.loads(row[0])
            d["boxes"] = [tuple(b) for b in d.get("boxes", [])]
            d["page_size"] = tuple(d["page_size"]) if d.get("page_size") else None
            return Cell(**d)
        except (ValueError, TypeError):
            return None

    def put(self, key: str, cell: Cell) -> None:
        """Store a cell under its key."""
        with self._lock, self._conn:
            self._conn.execute("INSERT OR REPLACE INTO cells (key, cell) VALUES (?, ?)", (key, json.dumps(asdict(cell))))

    def close(self) -> None:
        """Close the database."""
        self._conn.close()
