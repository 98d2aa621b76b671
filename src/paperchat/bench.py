"""Benchmarks that print numbers (ratios against a baseline measured in the same run)."""

from __future__ import annotations

import itertools
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from paperchat.settings import Settings


def bench_ingest(source: Path, limit: int | None, settings: Settings) -> dict[str, Any]:
    """Our ingest of `limit` abstracts into a fresh store, MiniLM alone on the same texts and batch size
    (the limit here), and a re-ingest of the same input."""
    from paperchat.ingestion.chunking import abstract_chunk
    from paperchat.ingestion.pipeline import Ingester
    from paperchat.ingestion.records import read_records
    from paperchat.library import Library
    from paperchat.types import Paper

    items = list(itertools.islice(read_records(source), limit))
    papers = [p for p in items if isinstance(p, Paper)]
    texts = [c.text for c in (abstract_chunk(p) for p in papers) if c is not None]
    with tempfile.TemporaryDirectory() as tmp:
        s = settings.model_copy(update={"data_dir": Path(tmp) / "store"})
        lib = Library(s)
        lib.embedder.embed(["warm up"] * 4)  # model load is not ingest
        t0 = time.perf_counter()
        lib.embedder.embed(texts, s.batch_size)
        limit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        first = Ingester(lib).ingest_records(iter(items))
        ours_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = Ingester(lib).ingest_records(read_records(source) if limit is None else iter(items))
        re_s = time.perf_counter() - t0
        lib.close()
    return {
        "abstracts": len(texts),
        "ours_s": round(ours_s, 2),
        "limit_s": round(limit_s, 2),
        "abstracts_per_s": round(len(texts) / ours_s, 2),
        "ours/limit": round(ours_s / limit_s, 3),
        "reingest_s": round(re_s, 3),
        "reingest_chunks_embedded": again.chunks_added,
        "reingest/first": round(re_s / ours_s, 4),
        "first_added": first.chunks_added,
    }


def bench_query(settings: Settings, questions: list[tuple[str, str]], repeat: int = 3) -> dict[str, Any]:
    """Retrieval and extractive-answer latency (ms) over the store in settings.data_dir."""
    from paperchat.library import Library
    from paperchat.qa import QA
    from paperchat.types import Scope

    lib = Library(settings)
    qa = QA(lib)
    lib.ready_lexical()
    lib.embedder.embed_query("warm up")
    retr, total = [], []
    for _ in range(repeat):
        for q, topic in questions:
            lib.embedder._cache.clear() if hasattr(lib.embedder, "_cache") else None  # type: ignore[attr-defined]
            ans = qa.ask(q, Scope.for_topic(topic))
            retr.append(ans.timings_ms["retrieve"])
            total.append(ans.timings_ms["total"])

    def pct(v: list[float], q: int) -> float:
        return round(statistics.quantiles(v, n=100)[q - 1], 1) if len(v) > 1 else round(v[0], 1)

    return {"store_chunks": lib.store.count(), "n": len(retr), "retrieve_p50_ms": pct(retr, 50), "retrieve_p95_ms": pct(retr, 95), "answer_total_p50_ms": pct(total, 50), "answer_total_p95_ms": pct(total, 95)}
