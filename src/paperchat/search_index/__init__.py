"""The search index beside the store: `snapshot` is one built index, loaded and queried; `index` builds,
persists, updates and loads them (a DIRTY marker and an atomic CURRENT pointer keep it in step with the store)."""

from paperchat.search_index.index import IndexChanges, SearchIndex
from paperchat.search_index.snapshot import LOAD_ERRORS, SearchSnapshot

__all__ = ["LOAD_ERRORS", "IndexChanges", "SearchIndex", "SearchSnapshot"]
