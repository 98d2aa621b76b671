"""What an ingest run plans and reports: a batch of records and a parsed PDF, planned (what to embed, write and
drop), and the run's report (counts, failures, the papers it stored and those whose abstract changed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperchat.ingestion.records import Failure
from paperchat.ingestion.stamp import PdfStamp
from paperchat.store import StoredChunk
from paperchat.types import Chunk, Paper, ParsedPdf


@dataclass
class IngestReport:
    """What one ingest run did. `exit_code`: 0 all fine, 1 some inputs failed, 2 nothing could be ingested."""

    papers: int = 0
    chunks_added: int = 0
    chunks_skipped: int = 0
    chunks_removed: int = 0
    failed: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    paper_ids: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # papers whose abstract changed (their discovered tags are stale)
    stored: list[tuple[str, str]] = field(default_factory=list)  # (input file, what became of it) for PDFs
    device: str = ""  # where the embedder ran ("cpu", "cuda"); "" when it never loaded (nothing embedded)
    device_note: str | None = None  # e.g. CUDA asked for but not usable: ran on CPU

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "papers": self.papers,
            "chunks_added": self.chunks_added,
            "chunks_skipped": self.chunks_skipped,
            "chunks_removed": self.chunks_removed,
            "failed": [{"source": f.source, "reason": f.reason} for f in self.failures],
            "notes": [{"source": f.source, "reason": f.reason} for f in self.failed if f.kept],
            "stored": [{"source": src, "outcome": what} for src, what in self.stored],
            "seconds": round(self.seconds, 3),
            "device": self.device,
            "device_note": self.device_note,
        }

    @property
    def failures(self) -> list[Failure]:
        """The inputs that were not stored (notes about stored inputs left out)."""
        return [f for f in self.failed if not f.kept]

    @property
    def exit_code(self) -> int:
        """0 when nothing failed; else 1 when some papers were stored, 2 when none was."""
        if not self.failures:
            return 0
        return 1 if self.papers else 2

    def merge(self, other: IngestReport) -> None:
        """Add another report's counts and lists to this one."""
        self.papers += other.papers
        self.chunks_added += other.chunks_added
        self.chunks_skipped += other.chunks_skipped
        self.chunks_removed += other.chunks_removed
        self.seconds += other.seconds
        self.failed.extend(other.failed)
        self.paper_ids.extend(other.paper_ids)
        self.changed.extend(other.changed)
        self.stored.extend(other.stored)
        self.device = other.device or self.device
        self.device_note = other.device_note or self.device_note


@dataclass
class RecordBatch:
    """One batch of abstract records, planned: `todo` are the papers to (re)write with their chunk, `new` the
    chunks the store does not hold yet (to embed and write), `skipped` the chunks already stored."""

    papers: list[Paper]
    todo: list[tuple[Paper, Chunk]]
    topics: dict[str, list[str]]
    new: list[StoredChunk]
    skipped: int = 0
    changed: list[str] = field(default_factory=list)  # papers stored before whose abstract changed


@dataclass
class PdfPlan:
    """One parsed PDF, planned: its paper (new or known), its chunk ids, and the chunks to embed and write."""

    source: Path
    pdf: ParsedPdf
    paper: Paper
    is_new: bool
    topics: list[str]
    chunk_ids: set[str]
    abs_chunk: Chunk | None
    stamp: PdfStamp
    new: list[StoredChunk]
    skipped: int
    rechunk: str | None = None  # stored before under another chunking: what changed
