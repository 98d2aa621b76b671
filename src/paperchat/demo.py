"""The bundled demo corpus: a CC0 subset of the shared arXiv abstracts with vectors made by our ingester.

Files under `ingest/demo/`: `abstracts.jsonl.gz` (records), `vectors.npz` (chunk ids, vectors, model id)
and `weekly_counts.json` (all new papers per week in the full listing, for "share of all new papers").
Vectors are used only when the model id matches the embedder and the chunk id (a hash of the text) matches.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.plans import IngestReport
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.progress import make_progress
from paperchat.settings import PROJECT_ROOT

DEMO_DIR = PROJECT_ROOT / "ingest" / "demo"


def load_vectors(path: Path, model_id: str) -> dict[str, np.ndarray]:
    """Precomputed vectors by chunk id, or {} when the file is missing or made by another model."""
    if not path.exists():
        return {}
    data = np.load(path, allow_pickle=False)
    if str(data["model"]) != model_id:
        return {}
    return {str(cid): vec.astype(np.float32) for cid, vec in zip(data["ids"], data["vectors"], strict=True)}


def ensure_demo(library: Library, demo_dir: Path = DEMO_DIR, show_progress: bool | None = None) -> IngestReport | None:
    """Ingest the demo corpus once; later calls find every chunk stored and return quickly."""
    records = demo_dir / "abstracts.jsonl.gz"
    if not records.exists():
        return None
    if library.catalog.get_meta("demo_loaded") == _stamp(records):
        return None
    cache = load_vectors(demo_dir / "vectors.npz", library.embedder.id)
    counts = demo_dir / "weekly_counts.json"
    if counts.exists():
        library.set_weekly_counts(counts)
    update, close = make_progress(None, enabled=show_progress)
    try:
        report = Ingester(library, vector_cache=cache, progress=update).ingest_records(read_records(records))
    finally:
        close()
    if not report.failed:
        library.catalog.set_meta("demo_loaded", _stamp(records))
    return report


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{int(st.st_mtime)}"


def build_demo(source: Path, out_dir: Path, library: Library, per_topic_week: int = 3, seed: int = 0) -> dict[str, int]:
    """Write the demo corpus from the full listing file: for every topic and week up to `per_topic_week`
    papers, plus the weekly counts of all records; then embed them with `library` and save the vectors."""
    import gzip
    import random
    from collections import Counter, defaultdict

    from paperchat.ingestion.chunking import abstract_chunk
    from paperchat.topics import week_start
    from paperchat.types import Paper

    rng = random.Random(seed)
    papers = [p for p in read_records(source) if isinstance(p, Paper)]
    weekly = Counter(week_start(p.date).isoformat() for p in papers if p.date)
    buckets: dict[tuple[str, str], list[Paper]] = defaultdict(list)
    for p in papers:
        if p.date:
            for t in library.topics.match(p):
                buckets[(t, week_start(p.date).isoformat())].append(p)
    chosen: dict[str, Paper] = {}
    for key in sorted(buckets):
        group = buckets[key]
        for p in rng.sample(group, min(per_topic_week, len(group))):
            chosen[p.id] = p
    out_dir.mkdir(parents=True, exist_ok=True)
    raw = {}
    with open(source, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["id"] in chosen:
                raw[rec["id"]] = line
    with gzip.open(out_dir / "abstracts.jsonl.gz", "wt", encoding="utf-8") as gz:
        for pid in sorted(raw):
            gz.write(raw[pid] if raw[pid].endswith("\n") else raw[pid] + "\n")
    (out_dir / "weekly_counts.json").write_text(json.dumps(dict(sorted(weekly.items())), indent=0))
    chunks = [c for c in (abstract_chunk(chosen[pid]) for pid in sorted(raw)) if c is not None]
    vectors = library.embedder.embed([c.text for c in chunks], library.settings.batch_size)
    np.savez_compressed(
        out_dir / "vectors.npz",
        ids=np.asarray([c.id for c in chunks]),
        vectors=vectors.astype(np.float32),
        model=np.asarray(library.embedder.id),
    )
    return {"papers": len(raw), "weeks": len(weekly)}
