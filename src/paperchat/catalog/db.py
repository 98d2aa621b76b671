"""What the catalogue's tables share: the error for a damaged file and the guard that raises it."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from paperchat.errors import StoreError

_P = ParamSpec("_P")
_R = TypeVar("_R")
REPAIR_HINT = "run `paperchat doctor --repair` (it moves the damaged file aside and rebuilds what it can)"


def damaged(path: Path, exc: BaseException) -> StoreError:
    """The error for a catalogue file SQLite cannot read."""
    return StoreError(f"the catalogue {path} is damaged ({exc})", REPAIR_HINT)


def guarded(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn SQLite's errors about a damaged file into the catalogue's StoreError that says what to run."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise damaged(args[0].path, exc) from exc  # type: ignore[attr-defined]

    return wrapper


FEATURES_GENERATION = "features_generation"  # meta key: bumped when a table of the papers' topic features is replaced


def bump_features(conn: sqlite3.Connection) -> None:
    """Count one more replacement of a whole topic-feature table (inside the caller's transaction): a table emptied
    and filled again can end with the same row count and row ids, which `Catalog.features_version` alone would miss."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (FEATURES_GENERATION,),
    )
