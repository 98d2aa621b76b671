"""Batch ingest of abstract records on a Ray cluster: the embedding is mapped over record batches across Ray
workers, each writing its vectors straight into the Chroma server (`PAPERCHAT_CHROMA_URL`).

Everything else is the local ingest's (`Ingester`): the same records, chunks and content-hash ids, the same
skip of what is stored (checked before anything is sent to a worker), the same order of writes. This process
plans each batch, sends its new chunks to a worker, and when the worker has stored them writes the batch's
catalogue rows; the lexical (BM25) index is marked dirty before the first write and rebuilt from the store at
the end. A rerun after an interruption therefore finishes the job and adds nothing twice.

Ray is imported here only, and this module only by the commands that ask for a cluster: the `dist` extra
(`pip install -e '.[dist]'`). Workers must have paperchat installed (the same version) and reach the Chroma
server; they export the ONNX model into their own `PAPERCHAT_MODELS_DIR` once, offline, as the local ingest does.
"""

from __future__ import annotations

import os
import socket
from collections import Counter, deque
from typing import Any

from paperchat.errors import ConfigError, NetworkError
from paperchat.ingestion.pipeline import Ingester, Progress
from paperchat.ingestion.plans import IngestReport, RecordBatch
from paperchat.library import Library
from paperchat.settings import Settings
from paperchat.store import StoredChunk
from paperchat.types import Paper

RAY_BATCH = 256  # records per Ray task: big enough that a task's overhead (ms) is noise next to embedding it
DIST_EXTRA = "pip install -e '.[dist]' (the `dist` extra: ray)"


def import_ray() -> Any:
    """The ray module (usage statistics off: nothing phones home), or a ConfigError naming the extra."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"the Ray batch ingest needs ray ({exc})", DIST_EXTRA) from exc
    return ray


def connect(address: str) -> bool:
    """Connect this process to the Ray cluster at `address` (host:port of its head, or "auto"); returns True
    when this call made the connection (and so should end it).

    Raises:
        NetworkError: no cluster answers there.
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    hint = "start one with `ray start --head --port PORT` and pass HOST:PORT to --ray"
    if address != "auto":  # ray.init retries an address where nothing listens for minutes: ask once first
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host.removeprefix("ray://") or "127.0.0.1", int(port)), timeout=5).close()
        except (OSError, ValueError) as exc:
            raise NetworkError(f"cannot reach the Ray cluster at {address} ({exc})", hint) from exc
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise NetworkError(f"cannot reach the Ray cluster at {address} ({exc})", hint) from exc
    return True


class EmbedWorker:
    """One Ray actor: opens the embedder and the Chroma server's collection once, then embeds batches of chunks
    and writes them. Upserts by content-hash id, so a retried task changes nothing."""

    def __init__(self, settings: Settings, threads: int) -> None:
        from paperchat.providers.devices import device_note, device_of
        from paperchat.providers.embedders import get_embedder
        from paperchat.store import VectorStore

        self.batch_size = settings.batch_size
        self.embedder = get_embedder(settings)
        if hasattr(self.embedder, "threads"):  # ONNX Runtime: one thread per CPU Ray gave this worker
            self.embedder.threads = threads
        self.store = VectorStore(settings, self.embedder)  # also checks that the collection is this embedder's
        self.embedder.embed(["warm up"], 1)  # the model loads now, not inside the first batch
        self.where = (device_of(self.embedder), device_note(self.embedder))

    def device(self) -> tuple[str, str | None]:
        """(where the embedder runs, its note about the device or None)."""
        return self.where

    def embed_and_store(self, chunks: list[StoredChunk]) -> int:
        """Embed the chunks and write them into the store; returns how many."""
        self.store.upsert(chunks, self.embedder.embed([c.text for c in chunks], self.batch_size))
        return len(chunks)


class RayIngester(Ingester):
    """The local ingest of abstract records, with the embedding done by Ray workers.

    Args:
        library: the open library; its settings must name a Chroma server (`chroma_url`), which the workers
            write into (a local store cannot be written from other machines).
        address: the Ray cluster (host:port of its head, or "auto").
        workers: how many embedding workers (one CPU each); None: one per CPU of the cluster.
        batch: records per Ray task.
        progress: called after each committed batch with running totals.
        start: start the workers (and load their models) now; else on the first batch that needs embedding.

    Raises:
        ConfigError: no Chroma server configured, ray missing, or more workers than the cluster has CPUs.
        NetworkError: the cluster cannot be reached.
    """

    def __init__(
        self, library: Library, address: str, workers: int | None = None, batch: int = RAY_BATCH, progress: Progress | None = None, start: bool = False
    ) -> None:
        super().__init__(library, progress=progress)
        if not library.settings.chroma_url:
            raise ConfigError(
                "the Ray batch ingest writes into a Chroma server, and none is set",
                "start one (`chroma run --path DIR --port PORT`) and set PAPERCHAT_CHROMA_URL=http://HOST:PORT",
            )
        self.paper_batch = batch
        self._ray = import_ray()
        self._owns_connection = connect(address)
        self.workers: list[Any] = []
        try:
            cpus = int(self._ray.cluster_resources().get("CPU", 0))
            n = workers or max(1, cpus)
            if n > cpus:
                raise ConfigError(f"{n} workers asked for, but the Ray cluster at {address} has {cpus} CPUs", f"use --workers {max(1, cpus)} or fewer")
            self.n_workers = n
            self.where: tuple[str, str | None] = ("", None)  # known once the workers are up
            if start:
                self._start_workers()
        except BaseException:
            self.close()
            raise
        self._pending: deque[tuple[RecordBatch, Any]] = deque()  # submitted, in order; the task's ref or None
        self._in_flight: Counter[str] = Counter()  # paper ids of the pending batches
        self._sent = 0

    def _start_workers(self) -> list[Any]:
        """The workers, started on the first batch that has something to embed (a rerun that finds everything
        stored starts none), each with its model loaded before this returns."""
        if not self.workers:
            actor = self._ray.remote(num_cpus=1, max_restarts=2, max_task_retries=2)(EmbedWorker)
            self.workers = [actor.remote(self.settings, 1) for _ in range(self.n_workers)]
            try:
                self.where = self._ray.get([w.device.remote() for w in self.workers])[0]
            except self._ray.exceptions.RayError as exc:  # e.g. paperchat missing on a node, or the store is another embedder's
                last = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                raise ConfigError(
                    f"the Ray workers could not start ({last})",
                    "install paperchat (same version, `dist` extra) on every node, check that they reach PAPERCHAT_CHROMA_URL, and see the Ray logs",
                ) from exc
        return self.workers

    def close(self) -> None:
        """Stop the workers, and leave the cluster when this ingester joined it."""
        for w in self.workers:
            self._ray.kill(w)
        self.workers = []
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()

    def _records_batch_safe(self, papers: list[Paper], report: IngestReport) -> None:
        """Plan the batch here, send its new chunks to the next worker, and commit the batches that are back."""
        if not self._in_flight.keys().isdisjoint(p.id for p in papers):
            self._drain(report)  # a paper in two pending batches: commit in input order, as the local ingest would
        try:
            batch = self._plan_records(papers)
        except Exception:  # the store or catalogue refused a read: the local path says which record failed
            self._drain(report)
            super()._records_batch_safe(papers, report)
            return
        ref = None
        if batch.new:
            self._writer.mark_dirty()  # before any chunk reaches the store (the workers write it): a killed run leaves the index dirty
            ref = self._start_workers()[self._sent % self.n_workers].embed_and_store.remote(batch.new)
            self._sent += 1
        self._pending.append((batch, ref))
        self._in_flight.update(p.id for p in papers)
        while len(self._pending) > 2 * self.n_workers or (self._pending and self._done(self._pending[0][1])):
            self._commit_next(report)

    def _done(self, ref: Any) -> bool:
        return ref is None or bool(self._ray.wait([ref], timeout=0)[0])

    def _commit_next(self, report: IngestReport) -> None:
        batch, ref = self._pending.popleft()
        self._in_flight.subtract(p.id for p in batch.papers)
        self._in_flight = +self._in_flight  # drop the zeros
        try:
            if ref is not None:
                self._ray.get(ref)
            self._commit_records(batch, report)
        except Exception:  # a worker or the store refused the batch: locally, record by record, as the local ingest
            super()._records_batch_safe(batch.papers, report)

    def _drain(self, report: IngestReport) -> None:
        while self._pending:
            self._commit_next(report)

    def _note_device(self, report: IngestReport) -> None:
        report.device, report.device_note = self.where
