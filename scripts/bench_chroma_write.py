"""How fast a Chroma server takes our chunks: one client upserting N abstract-sized chunks (384-d vectors,
about 1,200 characters of text, our metadata) in batches of 64 through the store, into a scratch collection that
is deleted after. The ceiling of the Ray batch ingest (docs/scale.md). Prints one line with the load average.

Usage: PYTHONPATH=src python scripts/bench_chroma_write.py http://HOST:PORT [N]
"""

import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paperchat.settings import Settings
from paperchat.store import StoredChunk, VectorStore
from paperchat.types import Chunk


class Scratch:
    """MiniLM's shape without a model: its own collection name and id, so it never meets a real store's."""

    id = "bench-chroma-write"
    dim = 384


def main() -> None:
    """Upsert, time, delete, print."""
    url, n, batch = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4000, 64
    settings = Settings(data_dir=Path(tempfile.mkdtemp()), chroma_url=url, embedder="hashing")
    store = VectorStore(settings, Scratch())  # type: ignore[arg-type]
    if store.count():
        sys.exit(f"the collection {store.collection_name} on {url} is not empty: use a scratch server")
    text = "word " * 240
    chunks = [StoredChunk.of(Chunk(id=f"c{i:08d}", paper_id=f"p{i}", text=f"{text}{i}", kind="abstract", page=None, start=0, end=1200),
                             dt.date(2026, 1, 1), ["rag"]) for i in range(n)]
    vectors = np.random.default_rng(0).standard_normal((n, 384)).astype(np.float32)
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        store.upsert(chunks[i : i + batch], vectors[i : i + batch])
    secs = time.perf_counter() - t0
    store.client.delete_collection(store.collection_name)
    print(f"{n} chunks in {secs:.1f} s: {n / secs:.0f} chunks/s (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
