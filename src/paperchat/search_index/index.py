"""The search index: BM25 (bm25s) over the store's chunks and a row-aligned copy of their vectors (exact
dense search in memory), built at ingest and persisted beside the store. Messages call it "the lexical
index" (its folder is `lexical/`), as they always did.

Consistency with the vector store: any writer first drops a DIRTY marker, changes Chroma, then rebuilds
this index and removes the marker. A reader that finds the marker (a killed ingest) rebuilds before use.
The index is written to a fresh folder and switched to with an atomic rename of the CURRENT pointer.
Every file here can be rebuilt from the store: one that does not load (garbled, truncated) makes `ensure`
rebuild the index, with a one-line notice on the `paperchat` logger.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from paperchat.search_index import bm25
from paperchat.search_index.snapshot import LOAD_ERRORS, SearchSnapshot
from paperchat.store import StoredChunk, VectorStore, date_int
from paperchat.text import Tokenizer

_log = logging.getLogger("paperchat")


def _is_chroma_error(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "chromadb"


@dataclass
class IndexChanges:
    """What one writer did to the store: chunks added and chunk ids removed (the vectors are read back from the
    store when the index is patched, as a rebuild reads them)."""

    added: dict[str, StoredChunk] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)

    def add(self, chunks: Sequence[StoredChunk]) -> None:
        """Chunks written (an id written again replaces its earlier row)."""
        for c in chunks:
            self.removed.discard(c.id)
            self.added[c.id] = c

    def remove(self, ids: Iterable[str]) -> None:
        """Chunk ids deleted."""
        for cid in ids:
            self.added.pop(cid, None)
            self.removed.add(cid)

    def __len__(self) -> int:
        return len(self.added) + len(self.removed)


@dataclass
class _Parts:
    """The columns of a snapshot being built, row-aligned; each chunk's tokens as ids into `vocab`."""

    ids: list[str] = field(default_factory=list)
    papers: list[str] = field(default_factory=list)
    dates: list[int] = field(default_factory=list)
    topics: dict[str, list[int]] = field(default_factory=dict)
    vectors: np.ndarray | None = None
    vocab: dict[str, int] = field(default_factory=dict)
    pieces: list[np.ndarray] = field(default_factory=list)  # token ids, concatenated in row order
    lengths: list[int] = field(default_factory=list)

    def add(self, cid: str, tokens: list[str], paper_id: str, date: int, topics: Iterable[str]) -> None:
        idx = len(self.ids)
        self.ids.append(cid)
        vocab = self.vocab
        self.pieces.append(np.asarray([vocab.setdefault(w, len(vocab)) for w in tokens], dtype=np.int32))
        self.lengths.append(len(tokens))
        self.papers.append(paper_id)
        self.dates.append(date)
        for slug in topics:
            self.topics.setdefault(slug, []).append(idx)

    def tokens(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(flat token ids, offsets, vocabulary), with the words no chunk holds any more left out."""
        flat = np.concatenate(self.pieces) if self.pieces else np.zeros(0, np.int32)
        offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        words = list(self.vocab)
        used = np.bincount(flat, minlength=len(words)) > 0
        if not used.all():
            remap = np.cumsum(used, dtype=np.int64) - 1
            flat = remap[flat].astype(np.int32)
            words = [w for w, u in zip(words, used.tolist(), strict=True) if u]
        return flat, offsets, words


class SearchIndex:
    """BM25 over every chunk of the store, persisted beside it, served as immutable snapshots.

    Thread-safe: one lock guards loading and rebuilding. While an ingest in this process is writing (from
    `mark_dirty` to the `rebuild` at its end) queries keep the last consistent snapshot instead of
    rebuilding per query; a DIRTY marker found at start (a killed ingest) makes the next `ensure` rebuild.
    """

    def __init__(self, root: Path, k1: float = 0.9, b: float = 0.6) -> None:
        self.root = root
        self.k1 = k1
        self.b = b
        self.tokenizer = Tokenizer()
        self._snap: SearchSnapshot | None = None
        self._lock = threading.RLock()
        self._writing = False

    # -- state on disk --------------------------------------------------------------------------

    @property
    def dirty_marker(self) -> Path:
        """Path of the DIRTY marker file."""
        return self.root / "DIRTY"

    def mark_dirty(self) -> None:
        """Create the DIRTY marker: the index no longer matches the store."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.dirty_marker.touch()
        self._writing = True

    def is_dirty(self) -> bool:
        """True when the DIRTY marker exists."""
        return self.dirty_marker.exists()

    def _current_dir(self) -> Path | None:
        pointer = self.root / "CURRENT"
        if not pointer.exists():
            return None
        path = self.root / pointer.read_text().strip()
        return path if path.is_dir() else None

    # -- build and load -------------------------------------------------------------------------

    def rebuild(self, store: VectorStore, reader: bool = False) -> SearchSnapshot:
        """Rebuild from every chunk in the store, switch to it atomically, clear the DIRTY marker.

        A Chroma error while reading the store (another process wrote meanwhile) is retried once on a
        freshly opened client. `reader`: a query's rebuild, without the writer lock; when another process switched
        the index meanwhile (a writer that finished first), its build wins and this one is dropped."""
        with self._lock:
            expected = self._pointer() if reader else None
            try:
                return self._write(self._read_store(store), expected, reader)
            except Exception as exc:
                if not _is_chroma_error(exc):
                    raise
                _log.warning(f"paperchat: reading the store failed ({type(exc).__name__}: {exc}); retrying")
                store.reload()
                return self._write(self._read_store(store), expected, reader)

    def update(self, store: VectorStore, changes: IndexChanges | None) -> SearchSnapshot:
        """Bring the index up to date after a writer's changes: the last snapshot with the removed chunks left
        out and the added ones put in, without reading the store back; a full `rebuild` when that is not
        safe (no loaded snapshot that is current, one built without its tokens or by another tokenizer, changes
        unknown or touching more than a quarter of the index, or a result whose size differs from the store's)."""
        with self._lock:
            base = self._snap
            if base is None or self._pointer() != base.name:
                base = self._load_current()  # a fresh process: the build on disk, current when the unit began
            if (changes is None or base is None or not (self.root / base.name / "tokens.npy").exists()
                    or base.tokenizer_version != Tokenizer.VERSION or (base.vectors is None and base.ids)
                    or len(changes) > max(len(base.ids) // 4, 1000)):
                return self.rebuild(store)
            try:
                parts = self._patched(base, changes, store)
            except (*LOAD_ERRORS, RuntimeError) as exc:  # chromadb's errors are RuntimeErrors or ValueErrors
                _log.warning(f"paperchat: patching the search index failed ({type(exc).__name__}: {exc}); rebuilding it")
                return self.rebuild(store)
            if len(parts.ids) != store.count():
                return self.rebuild(store)
            return self._write(parts)

    def _load_current(self) -> SearchSnapshot | None:
        current = self._current_dir()
        if current is None:
            return None
        try:
            return SearchSnapshot(current, self.tokenizer)
        except LOAD_ERRORS:  # damaged or replaced meanwhile: the caller rebuilds
            return None

    def _read_store(self, store: VectorStore) -> _Parts:
        parts = _Parts()
        vectors: list[np.ndarray] = []
        for batch in store.iter_all(vectors=True):
            assert batch.vectors is not None
            vectors.append(batch.vectors)
            for c in batch.chunks:
                parts.add(c.id, self.tokenizer(c.text), c.paper_id, date_int(c.date), c.topics)
        parts.vectors = np.concatenate(vectors) if vectors else None
        return parts

    def _patched(self, base: SearchSnapshot, changes: IndexChanges, store: VectorStore) -> _Parts:
        """The base snapshot's rows minus the removed and replaced chunks, then the added ones (their vectors read
        back from the store, as a rebuild would read them: Chroma keeps them a rounding away from those written)."""
        folder = self.root / base.name
        words: list[str] = json.loads((folder / "vocab.json").read_text())
        flat = np.load(folder / "tokens.npy")
        offsets = np.load(folder / "offsets.npy")
        if len(offsets) != len(base.ids) + 1 or (len(flat) and int(flat.max()) >= len(words)):
            raise ValueError("tokens.npy, offsets.npy and vocab.json out of step with ids.json")
        gone = changes.removed | set(changes.added)
        keep = np.asarray([cid not in gone for cid in base.ids], dtype=bool)
        rows = np.flatnonzero(keep)
        lengths = np.diff(offsets)
        parts = _Parts(vocab={w: i for i, w in enumerate(words)})
        parts.ids = [base.ids[i] for i in rows.tolist()]
        parts.papers = [str(p) for p in base.paper_ids[rows]]
        parts.dates = base.dates[rows].astype(int).tolist()
        new_row = np.cumsum(keep) - 1
        parts.topics = {slug: new_row[np.flatnonzero(mask & keep)].tolist() for slug, mask in base.topic_masks.items()}
        parts.pieces = [flat[np.repeat(keep, lengths)]]
        parts.lengths = lengths[rows].tolist()
        added = list(changes.added.values())
        for c in added:
            parts.add(c.id, self.tokenizer(c.text), c.paper_id, date_int(c.date), c.topics)
        parts.topics = {slug: idx for slug, idx in parts.topics.items() if idx}
        stored = store.vectors([c.id for c in added]) if added else {}
        if len(stored) != len(added):
            raise ValueError("an added chunk is not in the store")
        old = base.vectors[rows] if base.vectors is not None else np.zeros((0, 0), dtype=np.float32)
        new = [stored[c.id] for c in added]
        if new:
            fresh = np.stack(new).astype(np.float32)
            parts.vectors = np.concatenate([old, fresh]) if old.size else fresh
        else:
            parts.vectors = old
        return parts

    def _write(self, parts: _Parts, expected: str | None = None, reader: bool = False) -> SearchSnapshot:
        self.root.mkdir(parents=True, exist_ok=True)
        stamp = time.time_ns()
        name = f"idx-{stamp}"
        # built under another name and renamed when complete: a cleanup in another process (which deletes
        # idx-* folders it does not use) never takes a build that is still being written
        target = self.root / f"building-{stamp}-{os.getpid()}"
        target.mkdir()
        ids = parts.ids
        flat, offsets, words = parts.tokens()
        if ids:
            bm25.save(target / "bm25", flat, offsets, words, self.k1, self.b)
        np.save(target / "dates.npy", np.asarray(parts.dates, dtype=np.int32))
        if ids and parts.vectors is not None:  # the store's vectors, row-aligned with ids: exact in-memory dense search over any scope
            np.save(target / "vectors.npy", parts.vectors)
        # each chunk's tokens, for the next update (adding a chunk then needs no pass over the store)
        np.save(target / "tokens.npy", flat)
        np.save(target / "offsets.npy", offsets)
        (target / "vocab.json").write_text(json.dumps(words))
        (target / "ids.json").write_text(json.dumps(ids))
        (target / "papers.json").write_text(json.dumps(parts.papers))
        (target / "topics.json").write_text(json.dumps(parts.topics))
        (target / "tokenizer.txt").write_text(Tokenizer.VERSION)
        os.rename(target, self.root / name)
        target = self.root / name
        if reader and self._pointer() != expected:  # a writer switched the index while this query's rebuild read
            shutil.rmtree(target, ignore_errors=True)
            newer = self._load_current()
            if newer is not None:
                self._snap = newer
                return newer
        snap = SearchSnapshot(target, self.tokenizer)
        tmp = self.root / f"CURRENT.tmp-{os.getpid()}"
        tmp.write_text(name)
        os.replace(tmp, self.root / "CURRENT")
        self.dirty_marker.unlink(missing_ok=True)
        self._writing = False
        self._snap = snap
        # older builds go; a snapshot loaded from one keeps working (its files are memory-mapped)
        for old in self.root.glob("idx-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        for old in self.root.glob("building-*"):  # left by a killed build an hour or more ago
            stamp_s = old.name.split("-")[1]
            if stamp_s.isdigit() and int(stamp_s) < time.time_ns() - 3600 * 10**9:
                shutil.rmtree(old, ignore_errors=True)
        return snap

    def _pointer(self) -> str | None:
        try:
            return (self.root / "CURRENT").read_text().strip()
        except OSError:
            return None

    def _current(self, snap: SearchSnapshot) -> bool:
        """A loaded snapshot is served while a writer here is at work, or while it is still the current build."""
        return self._writing or self._pointer() == snap.name

    def ensure(self, store: VectorStore) -> SearchSnapshot:
        """The current snapshot. Rebuilt first when there is none, when the one on disk is dirty, does not
        load (damaged files: a one-line notice) or is out of step with the store at load time; a newer
        build (from another process) is picked up by its pointer. Once loaded, a snapshot is served as is
        while any writer is at work, so queries never rebuild per query."""
        snap = self._snap
        if snap is not None and self._current(snap):
            return snap
        with self._lock:
            snap = self._snap
            if snap is not None and self._current(snap):
                return snap
            current = self._current_dir()
            if current is None:
                return self.rebuild(store, reader=True)
            if snap is None and self.is_dirty():  # a killed writer left it: rebuild before first use
                return self.rebuild(store, reader=True)
            try:
                new = SearchSnapshot(current, self.tokenizer)
            except FileNotFoundError:  # replaced by another process meanwhile
                return snap if snap is not None else self.rebuild(store, reader=True)
            except LOAD_ERRORS as exc:
                _log.warning(f"paperchat: the lexical index {current} is damaged ({type(exc).__name__}: {exc}); rebuilding it from the store")
                return self.rebuild(store, reader=True)
            stale = new.tokenizer_version != Tokenizer.VERSION or (new.vectors is None and new.ids)
            if snap is None and (len(new.ids) != store.count() or stale):
                return self.rebuild(store, reader=True)  # out of step, or built by older code (tokens, no vectors)
            self._snap = new
            return new

    def load_problem(self, store: VectorStore) -> str | None:
        """What is wrong with the index on disk (for `paperchat doctor`), or None when it loads and holds
        exactly the store's chunk ids."""
        if self.is_dirty():
            return "the lexical index is marked dirty (an ingest was interrupted)"
        current = self._current_dir()
        if current is None:
            return "there is no lexical index"
        try:
            snap = SearchSnapshot(current, self.tokenizer)
        except LOAD_ERRORS as exc:
            return f"the lexical index {current.name} does not load ({type(exc).__name__}: {exc})"
        if snap.tokenizer_version != Tokenizer.VERSION:
            return "the lexical index was built by an older version"
        ids = set(store.all_ids())
        if set(snap.ids) != ids:
            return f"the lexical index holds {len(snap.ids)} chunks, the store {len(ids)} (different ids)"
        return None
