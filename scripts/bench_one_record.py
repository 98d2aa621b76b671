"""A one-record ingest into a big store, timed: what `paperchat ingest abstracts one.jsonl` (a fresh process,
no index loaded) and the app (index loaded) pay for one new paper. Works on any version of paperchat that has
`Assistant.ingest_papers`, so one command measures before and after (run it with PYTHONPATH=<other tree>/src).

    python scripts/bench_one_record.py --store /tmp/store36k [--runs 3] [--json]

The store is copied to a scratch folder first (never written).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from paperchat.assistant import Assistant
from paperchat.settings import Settings
from paperchat.types import Paper


def _paper(i: int) -> Paper:
    return Paper(id=f"2612.{90000 + i}", title=f"A new paper on retrieval-augmented agents ({i})", authors=["B. Enchmark"],
                 abstract=f"We propose variant {i} of a retrieval-augmented agent trained with process rewards and evaluate it on "
                          "multi-hop question answering benchmarks.", categories=["cs.CL"], date=dt.date(2026, 7, 1))


def main() -> int:
    """Copy the store, then time one-record ingests: the first in a fresh process, then with the index loaded."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench1rec-") as tmp:
        data = Path(tmp) / "store"
        shutil.copytree(args.store, data)
        core = Assistant(Settings(data_dir=data))
        core.embed(["warm up"])  # model load is not ingest
        t0 = time.perf_counter()
        rep = core.ingest_papers(iter([_paper(0)]))
        first = time.perf_counter() - t0
        assert rep.chunks_added == 1, rep
        core.ready()  # as the app: the index is loaded
        loaded = []
        for i in range(1, args.runs + 1):
            t0 = time.perf_counter()
            rep = core.ingest_papers(iter([_paper(i)]))
            loaded.append(time.perf_counter() - t0)
            assert rep.chunks_added == 1, rep
        chunks = core.counts()[1]
        core.close()
    res = {"store_chunks": chunks, "first_in_fresh_process_s": round(first, 2), "index_loaded_p50_s": round(statistics.median(loaded), 2),
           "index_loaded_runs_s": [round(x, 2) for x in loaded]}
    print(json.dumps(res) if args.json else "\n".join(f"{k}: {v}" for k, v in res.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
