"""One write unit: every change to the vector store goes through a `Writer`, which owns the search index's DIRTY
marker and brings the index up to date when the unit finishes.

`Library.writing()` holds the data folder's writer lock and yields the writer. The marker is dropped before the
first chunk changes, so a killed run leaves the index marked and the next reader rebuilds it. At `finish` the
writer hands its changes (chunks added with their vectors, ids removed) to `SearchIndex.update`, which patches the
last snapshot instead of reading the whole store back; a change it cannot describe (`mark_dirty`: topic flags, a
repair, chunks written by Ray workers) makes the finish a full rebuild.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from paperchat.search_index import IndexChanges, SearchIndex, SearchSnapshot
from paperchat.store import StoredChunk, VectorStore


class Writer:
    """Writes chunks to the store and keeps the search index in step (one per writer-lock hold)."""

    def __init__(self, store: VectorStore, index: SearchIndex) -> None:
        self.store = store
        self.index = index
        self._dirty = False
        self._changes: IndexChanges | None = IndexChanges()
        # an index left dirty by a killed run is out of step before this unit starts: its finish rebuilds in full
        self._stale = index.is_dirty()

    def mark_dirty(self) -> None:
        """A change the writer does not see (topic flags, a repair, chunks written elsewhere): mark the index
        dirty now and rebuild it in full at the finish."""
        self._mark()
        self._changes = None

    def upsert(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        """Write chunks with their vectors."""
        if not chunks:
            return
        self._mark()
        self.store.upsert(chunks, vectors)
        if self._changes is not None:
            self._changes.add(chunks)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete chunks by id."""
        if not ids:
            return
        self._mark()
        self.store.delete(ids)
        if self._changes is not None:
            self._changes.remove(ids)

    def finish(self) -> SearchSnapshot | None:
        """Bring the index up to date (patched with this unit's changes, or rebuilt), and clear the marker;
        also rebuilds an index a killed run left dirty. None when there was nothing to do."""
        if not self._dirty and not self.index.is_dirty():
            return None
        changes = None if self._stale else self._changes
        snap = self.index.update(self.store, changes) if self._dirty else self.index.rebuild(self.store)
        self._dirty, self._stale, self._changes = False, False, IndexChanges()
        return snap

    def _mark(self) -> None:
        if not self._dirty:
            self.index.mark_dirty()
            self._dirty = True
