"""The open library: settings, embedder, vector store, catalogue, lexical index and topics, opened once."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from paperchat.catalog import Catalog
from paperchat.providers.embedders import get_embedder
from paperchat.search_index import SearchIndex, SearchSnapshot
from paperchat.settings import Settings
from paperchat.store import VectorStore
from paperchat.topics import TopicSet, week_start
from paperchat.types import Embedder
from paperchat.writer import Writer

WEEKLY_COUNTS_KEY = "weekly_counts"
LOCK_FILE = "ingest.lock"
DOCTOR = "`paperchat doctor --repair`"
_log = logging.getLogger("paperchat")
_SAMPLE = 64  # abstract chunk ids checked against the store at open: one small get, cheap on any size

_thread_locks: dict[str, threading.RLock] = {}
_depth: dict[str, int] = {}
_units: dict[str, Writer] = {}  # the write unit of each data folder's hold (one per holder: the lock is per thread)
_guard = threading.Lock()


def _read_lock(path: Path) -> tuple[int, int]:
    """(pid of the last writer, writes so far) from the lock file; (0, 0) when there is none."""
    try:
        pid, gen = path.read_text().split()[:2]
        return int(pid), int(gen)
    except (OSError, ValueError):
        return 0, 0


@contextmanager
def writer_lock(data_dir: Path) -> Iterator[int]:
    """Hold data_dir/ingest.lock (flock) while writing: one writer at a time across processes and threads.

    Re-entrant in one thread. Yields the number of writes made before this one (other processes' included),
    so a caller can tell whether its view of the store is stale. Prints one line to stderr when it waits.
    """
    path = data_dir / LOCK_FILE
    key = str(path.resolve())
    with _guard:
        rlock = _thread_locks.setdefault(key, threading.RLock())
    with rlock:
        depth = _depth.get(key, 0)
        if depth:
            _depth[key] = depth + 1
            try:
                yield _read_lock(path)[1] - 1  # the outer hold's own write is not news
            finally:
                _depth[key] -= 1
            return
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_lock(path)[0]
                print(f"paperchat: another ingest is running (pid {pid or '?'}), waiting...", file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
            gen = _read_lock(path)[1]
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {gen + 1}\n".encode(), 0)
            _depth[key] = 1
            try:
                yield gen
            finally:
                _depth[key] = 0
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class TopicSync:
    """What `Library.sync_topics` changed: nothing when `synced` is False."""

    synced: bool = False
    papers: int = 0  # papers matched against the new rules
    chunks: int = 0  # chunks whose topic flags were rewritten
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # topic -> (papers before, after), changed ones

    def describe(self) -> str:
        """One line for a log or a report."""
        if not self.synced:
            return "topic membership is up to date"
        moved = ", ".join(f"{t} {a} -> {b}" for t, (a, b) in sorted(self.counts.items())) or "no topic changed size"
        return f"topic membership synced with the new rules: {self.papers} papers, {self.chunks} chunks re-flagged ({moved})"


class Library:
    """Everything a question or a page needs, opened once per process.

    Opening writes nothing. When the topics file changed since membership was last synced, it logs one
    line; the entry points (ingest, the app, eval, doctor) call `sync_topics` explicitly.
    """

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder or get_embedder(settings)
        self.topics = TopicSet.load(settings.topics_file)
        self._writes_seen = _read_lock(settings.data_dir / LOCK_FILE)[1]  # read before the store opens
        self.store = VectorStore(settings, self.embedder)
        self.catalog = Catalog(settings.catalog_path)
        self.search_index = SearchIndex(settings.search_index_dir)
        self.warnings: list[str] = self.check()
        if self.topics_out_of_date():
            _log.warning(
                f"paperchat: topic membership is out of date (the rules in {settings.topics_file} changed): "
                f"it is synced by `paperchat doctor --repair`, any `paperchat ingest` or `paperchat serve`"
            )

    @contextmanager
    def writing(self) -> Iterator[Writer]:
        """Hold the writer lock and yield the write unit (`paperchat.writer.Writer`) every store change goes
        through; first reopen the store when another process wrote since it was opened (Chroma's in-memory
        index would not know that process's chunks). On a normal exit the writer finishes (the search index is
        brought up to date); after an exception the index stays marked dirty, and the next reader rebuilds it."""
        with writer_lock(self.settings.data_dir) as before:
            key = str((self.settings.data_dir / LOCK_FILE).resolve())
            unit = _units.get(key)
            if unit is not None:  # inside this thread's own hold (this library's or another's on the folder): one unit
                yield unit
                return
            if _depth.get(key, 0) == 1:  # nested in this thread's hold (e.g. doctor's): nobody else wrote, never reload here
                if before != self._writes_seen:
                    self.store.reload()
                self._writes_seen = before + 1
            unit = _units[key] = Writer(self.store, self.search_index)
            try:
                yield unit
                unit.finish()
            finally:
                del _units[key]

    def check(self) -> list[str]:
        """Cheap open-time check that the store and the catalogue agree (counts and a sample of abstract
        chunk ids); one line for each disagreement, naming `paperchat doctor`."""
        chunks, papers = self.store.count(), self.catalog.count()
        if papers == 0 and chunks:
            empty = " (its file was empty)" if self.catalog.was_empty else ""
            return [f"the catalogue{empty} lists no papers but the vector store holds {chunks} chunks: run {DOCTOR} to refill it"]
        if papers and chunks == 0:
            return [f"the vector store is empty but the catalogue lists {papers} papers (was it deleted?): run {DOCTOR} to re-embed them"]
        sample = self.catalog.sample_abstract_hashes(_SAMPLE)
        missing = len(sample) - len(self.store.existing_ids(sample)) if sample else 0
        if missing:
            return [f"{missing} of {len(sample)} sampled papers have no chunks in the vector store: run {DOCTOR} to re-embed them"]
        return []

    def close(self) -> None:
        """Close the catalogue."""
        self.catalog.close()

    # -- topics ------------------------------------------------------------------------------------

    def topics_out_of_date(self) -> bool:
        """True when the topic rules changed since membership was last synced (and there are papers)."""
        return self.catalog.get_meta("topics_hash") != self.topics.hash and self.catalog.count() > 0

    def sync_topics(self) -> TopicSync:
        """Apply the current topic rules to every paper when they changed since the last sync (metadata
        and the search index only, no re-embedding); logs one line when it changed something."""
        if self.catalog.get_meta("topics_hash") == self.topics.hash:
            return TopicSync()
        if self.catalog.count() == 0:
            self.catalog.set_meta("topics_hash", self.topics.hash)
            return TopicSync()
        with self.writing() as writer:
            result = self._sync_topics(writer)
        if result.synced:
            _log.warning(f"paperchat: {result.describe()}")
        return result

    def _sync_topics(self, writer: Writer) -> TopicSync:
        if self.catalog.get_meta("topics_hash") == self.topics.hash:
            return TopicSync()  # another process synced them while this one waited
        before = self.catalog.topic_counts()
        memberships = {p.id: self.topics.match(p) for p in self.catalog.iter_papers()}
        writer.mark_dirty()  # flags change in place: the index is rebuilt from the store
        chunks = self.store.set_topic_flags(memberships, [t.slug for t in self.topics.topics])
        self.catalog.replace_all_topics(memberships)
        writer.finish()
        self.catalog.set_meta("topics_hash", self.topics.hash)
        after = Counter(t for ts in memberships.values() for t in ts)
        counts = {t: (before.get(t, 0), after.get(t, 0)) for t in set(before) | set(after) if before.get(t, 0) != after.get(t, 0)}
        return TopicSync(synced=True, papers=len(memberships), chunks=chunks, counts=counts)

    # -- corpus-wide counts ---------------------------------------------------------------------------

    def weekly_counts(self) -> dict[dt.date, int]:
        """All new papers per week: the bundled corpus-wide counts when known, else the catalogue's."""
        raw = self.catalog.get_meta(WEEKLY_COUNTS_KEY)
        if raw:
            return {dt.date.fromisoformat(k): int(v) for k, v in json.loads(raw).items()}
        weeks: Counter[dt.date] = Counter()
        for day, n in self.catalog.date_counts().items():  # every topic page asks: group by date in SQL first
            weeks[week_start(day)] += n
        return dict(weeks)

    def set_weekly_counts(self, path: Path) -> None:
        """Record corpus-wide weekly counts ({"YYYY-MM-DD" (Monday): n}) from a JSON file."""
        data = json.loads(path.read_text())
        self.catalog.set_meta(WEEKLY_COUNTS_KEY, json.dumps({str(k): int(v) for k, v in data.items()}))

    def ready_index(self) -> SearchSnapshot:
        """The search index, consistent with the store (see SearchIndex.ensure)."""
        return self.search_index.ensure(self.store)
