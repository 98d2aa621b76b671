"""File digests shared by the ingest path (PDF identity) and the model providers (exported and joined model files):
a leaf module, so both can import it without either reaching into the other."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's contents, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
