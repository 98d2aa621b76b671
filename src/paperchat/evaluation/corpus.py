"""A small retrieval-quality corpus for the test suite: every gold paper of the topic question sets plus a
seeded random sample of the shared listing as distractors, bundled with the vectors our ingester made for
them (taken from a full store's search snapshot), so the suite can build a store in seconds and fail when
recall regresses. Same file layout as the demo corpus (`abstracts.jsonl.gz`, `vectors.npz`).
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from paperchat.evaluation.questions import load_set
from paperchat.ingestion.chunking import abstract_chunk
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.types import Paper


def build_quality_corpus(source: Path, sets: Sequence[Path], out_dir: Path, full: Library, distractors: int = 2500, seed: int = 0) -> dict[str, int]:
    """Write out_dir/abstracts.jsonl.gz and vectors.npz: the gold papers of `sets` and `distractors` other
    records drawn with `seed`; vectors come from `full` (a store holding all of `source`)."""
    gold: set[str] = set()
    for f in sets:
        qs, _, _ = load_set(f)
        for q in qs:
            gold.update(q.gold_papers)
    papers = {p.id: p for p in read_records(source) if isinstance(p, Paper)}
    snap = full.ready_index()
    if snap.vectors is None:
        raise ValueError("the full store's search snapshot keeps no vectors")
    stored = {pid for pid, p in papers.items() if (c := abstract_chunk(p)) is not None and c.id in snap.pos}
    others = sorted(pid for pid in stored if pid not in gold)
    chosen = sorted(gold & stored) + random.Random(seed).sample(others, min(distractors, len(others)))
    ids, vecs, lines = [], [], {}
    with open(source, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec.get("id") in chosen:
                lines[rec["id"]] = line if line.endswith("\n") else line + "\n"
    for pid in sorted(chosen):
        chunk = abstract_chunk(papers[pid])
        if chunk is None or chunk.id not in snap.pos:
            continue
        ids.append(chunk.id)
        vecs.append(snap.vectors[snap.pos[chunk.id]])
    out_dir.mkdir(parents=True, exist_ok=True)
    with gzip.open(out_dir / "abstracts.jsonl.gz", "wt", encoding="utf-8") as gz:
        for pid in sorted(lines):
            gz.write(lines[pid])
    np.savez_compressed(out_dir / "vectors.npz", ids=np.asarray(ids), vectors=np.asarray(vecs, dtype=np.float32), model=np.asarray(full.embedder.id))
    return {"papers": len(lines), "gold": len(gold & papers.keys()), "vectors": len(ids)}
