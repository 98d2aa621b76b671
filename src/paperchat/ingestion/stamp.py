"""What the catalogue records of a stored PDF beside its paper: the file's sha256 and how its chunks were made
(chunk size, overlap, extractor), written `<sha256>:<size>/<overlap>[/<extractor>]`. The same bytes under the same
stamp are skipped at ingest; the same bytes under another stamp are parsed again, and the report says why."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_EXTRACTOR = "pypdf"  # the first extractor: stamps written before the setting existed name none


@dataclass(frozen=True)
class PdfStamp:
    """A stored PDF's hash and chunking."""

    sha256: str
    chunk_size: int
    chunk_overlap: int
    extractor: str = DEFAULT_EXTRACTOR

    @classmethod
    def parse(cls, text: str | None) -> PdfStamp | None:
        """The stamp written in the catalogue, or None when there is none (or it does not read as one)."""
        sha, sep, chunking = (text or "").partition(":")
        parts = chunking.split("/")
        if not sha or not sep or len(parts) not in (2, 3) or not all(p.isdigit() for p in parts[:2]):
            return None
        return cls(sha, int(parts[0]), int(parts[1]), parts[2] if len(parts) == 3 else DEFAULT_EXTRACTOR)

    @staticmethod
    def sha_of(text: str | None) -> str:
        """The sha256 part of a recorded stamp ("" when there is none)."""
        return (text or "").partition(":")[0]

    @property
    def chunking(self) -> str:
        """'1000/150', or '1000/150/pdfium' for another extractor than pypdf."""
        base = f"{self.chunk_size}/{self.chunk_overlap}"
        return base if self.extractor == DEFAULT_EXTRACTOR else f"{base}/{self.extractor}"

    def __str__(self) -> str:
        return f"{self.sha256}:{self.chunking}"

    def change_from(self, old: PdfStamp) -> str:
        """What differs from an older stamp of the same bytes: 'chunks 1000/150 -> 800/100', 'extractor pypdf ->
        pdfium', or both."""
        parts = []
        if (old.chunk_size, old.chunk_overlap) != (self.chunk_size, self.chunk_overlap):
            parts.append(f"chunks {old.chunk_size}/{old.chunk_overlap} -> {self.chunk_size}/{self.chunk_overlap}")
        if old.extractor != self.extractor:
            parts.append(f"extractor {old.extractor} -> {self.extractor}")
        return ", ".join(parts) or f"{old.chunking} -> {self.chunking}"
