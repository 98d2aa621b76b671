"""kill -9 an ingest midway; the rerun must finish it: unique ids, same count as an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from paperchat.library import Library

from .conftest import ROOT, CountingEmbedder, make_settings, read_sample

CHILD = """
import sys
from pathlib import Path
from paperchat.settings import Settings
from paperchat.library import Library
from paperchat.ingestion.pipeline import Ingester, PAPER_BATCH
import paperchat.ingestion.pipeline as pl
pl.PAPER_BATCH = 40  # small batches, so a kill lands between batches and inside one
from paperchat.ingestion.records import read_records
lib = Library(Settings(data_dir=Path(sys.argv[1])))
print("ready", flush=True)
Ingester(lib, progress=lambda p, c: print("batch", p, flush=True)).ingest_records(read_records(Path(sys.argv[2])))
print("done", flush=True)
"""


def _state(data_dir: Path, embedder: CountingEmbedder) -> tuple[list[str], list[str]]:
    lib = Library(make_settings(data_dir), embedder=embedder)  # type: ignore[arg-type]
    ids = [i for page, _d, _m, _v in lib.store.iter_all() for i in page]
    lex = sorted(lib.ready_lexical().ids)
    lib.close()
    return ids, lex


def test_sigkill_then_rerun(tmp_path: Path, shared: Path, embedder: CountingEmbedder) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(read_sample(200, step=53)))
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(killed), str(src)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    for _ in range(2):  # two batches stored ...
        assert proc.stdout.readline().startswith("batch")
    time.sleep(1.0)  # ... and the third in flight
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    partial, _ = _state(killed, embedder)
    assert 0 < len(partial) < 200, "the kill should land midway"
    # rerun finishes the job
    rerun = subprocess.run([sys.executable, "-c", CHILD, str(killed), str(src)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert "done" in rerun.stdout, rerun.stderr
    ids, lex = _state(killed, embedder)
    assert len(ids) == len(set(ids)) == 200
    assert sorted(ids) == lex  # lexical index agrees with the vector store
