"""The batch ingest on Ray (issue 18 part 4): real records, a real local Ray cluster, a real Chroma server.

scripts/test.sh (and so .ci/run) starts a Ray head on 127.0.0.1 with 2 CPUs and exports its address as
PAPERCHAT_TEST_RAY_ADDRESS, beside the Chroma server of tests/test_chroma_server.py. Without the address the
fixture starts its own cluster (stopped by its pid), except in CI, where a missing cluster fails the tests.

The Ray ingest of 300 shared abstracts (two workers, batches of 64) is compared with the local ingest of the
same records: the same chunk ids, texts and metadata, vectors within 1e-5, the same catalogue rows, the same
BM25 index, and the same answers (sources in the same order) to the topic dev questions. A rerun adds
nothing and starts no worker; a run interrupted between the store and the catalogue completes.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from paperchat.assistant import Assistant
from paperchat.errors import ConfigError, NetworkError
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.plans import IngestReport
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.qa import QA
from paperchat.types import Scope
from tests.conftest import IN_CI, ROOT, SHARED, free_port, make_settings
from tests.test_chroma_server import chroma_url  # noqa: F401 - the server fixture, shared

WORKERS = 2
BATCH = 64  # 300 records: five Ray tasks over the two workers


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    given = os.environ.get("PAPERCHAT_TEST_RAY_ADDRESS")
    if given:
        yield given
        return
    msg = "PAPERCHAT_TEST_RAY_ADDRESS is not set (scripts/test.sh starts the local Ray cluster)"
    if IN_CI:
        pytest.fail(msg)
    exe = shutil.which("ray", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip(f"{msg}, and ray (the `dist` extra) is not installed")
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="ray-")  # short: Ray's socket paths live under it
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    log = open(f"{tmp}.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([exe, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}", f"--ray-client-server-port={free_port()}",
                             f"--dashboard-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats", "--object-store-memory=200000000", f"--temp-dir={tmp}"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 90
        while "Ray runtime started" not in Path(f"{tmp}.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "ray start did not start"
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
        Path(f"{tmp}.log").unlink(missing_ok=True)


def _clear_server(url: str) -> None:
    import chromadb

    host, port = url.rsplit(":", 1)
    client = chromadb.HttpClient(host=host.split("//")[1], port=int(port))
    for c in client.list_collections():
        client.delete_collection(c.name)


@pytest.fixture(scope="module")
def local_ingest(sample_jsonl: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Library, IngestReport]]:
    """The 300 records ingested by the local ingest, with the default embedder, into a local store."""
    lib = Library(make_settings(tmp_path_factory.mktemp("local") / "store"))
    rep = Ingester(lib).ingest_records(read_records(sample_jsonl))
    assert not rep.failed and rep.chunks_added == 300, rep
    yield lib, rep
    lib.close()


@pytest.fixture(scope="module")
def ray_ingest(sample_jsonl: Path, chroma_url: str, ray_address: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Assistant, IngestReport]]:  # noqa: F811
    """The same records through Ray into the Chroma server (catalogue and BM25 index in a local data dir)."""
    _clear_server(chroma_url)
    assistant = Assistant(make_settings(tmp_path_factory.mktemp("ray") / "store", chroma_url=chroma_url))
    rep = assistant.ingest_papers_on_ray(read_records(sample_jsonl), ray_address, workers=WORKERS, batch=BATCH)
    yield assistant, rep
    assistant.close()


def _stored(lib: Library) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    chunks, vectors = {}, {}
    for batch in lib.store.iter_all(vectors=True):
        assert batch.vectors is not None
        for c, v in zip(batch.chunks, batch.vectors, strict=True):
            chunks[c.id] = dataclasses.replace(c, topics=tuple(sorted(c.topics)))  # flags in the metadata's key order, which Chroma does not keep
            vectors[c.id] = v
    return chunks, vectors


def _topic_questions(n: int = 6) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in open(SHARED / "eval" / "topic_dev.jsonl", encoding="utf-8") if line.strip()]
    picked: dict[str, str] = {}
    for r in rows:  # one question per topic, the first few topics
        if r.get("scope") == "topic" and r["topic"] not in picked.values():
            picked[r["question"]] = r["topic"]
    return list(picked.items())[:n]


@pytest.mark.slow
def test_ray_ingest_is_the_local_ingest(local_ingest: tuple[Library, IngestReport], ray_ingest: tuple[Assistant, IngestReport]) -> None:
    local, local_rep = local_ingest
    assistant, rep = ray_ingest
    lib = assistant.library
    assert not rep.failed and rep.device == "cpu"
    assert (rep.papers, rep.chunks_added, rep.chunks_skipped) == (local_rep.papers, local_rep.chunks_added, 0) == (300, 300, 0)
    assert not lib.settings.chroma_dir.exists()  # the vectors went to the server only
    # the same chunks: ids (content hashes), texts, pages, dates and topic flags
    local_chunks, local_vecs = _stored(local)
    ray_chunks, ray_vecs = _stored(lib)
    assert ray_chunks == local_chunks
    # the same vectors: one model, batched differently. The default embedder infers in bf16 on CPUs that have it,
    # where a batch's padding changes the sums a little (max element difference 4.5e-4 measured); the vectors stay
    # within the 1e-4 cosine tolerance under which backends share a store (fp32: within 1e-5 per element)
    diff = max(float(np.abs(ray_vecs[i] - local_vecs[i]).max()) for i in local_vecs)
    cos = min(float(ray_vecs[i] @ local_vecs[i]) for i in local_vecs)
    assert diff < 2e-3 and cos > 0.9999, (diff, cos)
    # the same catalogue rows, and a BM25 index built from the server's store that holds every chunk
    ids = sorted({c.paper_id for c in local_chunks.values()})  # type: ignore[attr-defined]
    assert lib.catalog.hashes(ids) == local.catalog.hashes(ids) and lib.catalog.count() == local.catalog.count() == 300
    assert not lib.search_index.is_dirty() and sorted(lib.ready_index().ids) == sorted(local_chunks)
    # the same answers: sources in the same order, the same text and citations
    for question, topic in _topic_questions():
        a = assistant.ask(question, Scope.for_topic(topic))
        b = QA(local).ask(question, Scope.for_topic(topic))
        assert [s.chunk_id for s in a.sources] == [s.chunk_id for s in b.sources], question
        assert (a.answer, [c.paper_id for c in a.citations]) == (b.answer, [c.paper_id for c in b.citations]), question
    assert any(QA(local).ask(q, Scope.for_topic(t)).sources for q, t in _topic_questions())  # the comparison compared something


@pytest.mark.slow
def test_ray_rerun_adds_nothing_and_an_interrupted_run_completes(local_ingest: tuple[Library, IngestReport], ray_ingest: tuple[Assistant, IngestReport],
                                                                  sample_jsonl: Path, ray_address: str) -> None:
    local, _ = local_ingest
    assistant, _ = ray_ingest
    lib = assistant.library
    before = sorted(lib.store.all_ids())
    again = assistant.ingest_papers_on_ray(read_records(sample_jsonl), ray_address, workers=WORKERS, batch=BATCH)
    assert (again.chunks_added, again.chunks_skipped, again.papers, again.failed) == (0, 300, 300, [])
    assert again.device == ""  # nothing to embed: no worker was started
    assert sorted(lib.store.all_ids()) == before
    # what a run killed mid-way leaves: the last 100 papers' chunks stored but not their catalogue rows (killed
    # between a worker's write and the commit), 40 of them not even stored (killed before the worker wrote), and
    # the lexical index dirty
    papers = [p.id for p in read_records(sample_jsonl)]  # type: ignore[union-attr]
    lost = papers[-100:]
    hashes = lib.catalog.hashes(lost)
    for pid in lost:
        lib.catalog.remove_paper(pid)
    lib.store.delete([hashes[pid][0] for pid in lost[:40]])
    lib.search_index.mark_dirty()
    assert lib.store.count() == 260 and lib.catalog.count() == 200
    done = assistant.ingest_papers_on_ray(read_records(sample_jsonl), ray_address, workers=WORKERS, batch=BATCH)
    assert (done.chunks_added, done.chunks_skipped, done.failed) == (40, 260, [])  # embedded once, nothing twice
    assert sorted(lib.store.all_ids()) == before and lib.catalog.hashes(papers) == local.catalog.hashes(papers)
    assert not lib.search_index.is_dirty() and sorted(lib.ready_index().ids) == before


@pytest.mark.slow
def test_bench_ray_small(sample_jsonl: Path, chroma_url: str, ray_address: str, tmp_path: Path) -> None:  # noqa: F811
    # after the round trips (it empties the server they wrote): the numbers come from `paperchat bench ray`
    from paperchat import bench

    _clear_server(chroma_url)
    res = bench.bench_ray_ingest(sample_jsonl, 24, make_settings(tmp_path / "s", chroma_url=chroma_url), ray_address, [1, 2], batch=8)
    assert res["abstracts"] == 24 and res["ray_1w_per_worker"] > 0 and res["ray_2w_abstracts_per_s"] > 0 and res["arxiv_worker_hours"] > 0
    with pytest.raises(ConfigError):  # never into a server that holds chunks: it deletes what it wrote
        lib = Assistant(make_settings(tmp_path / "t", chroma_url=chroma_url))
        lib.ingest_papers(itertools.islice(read_records(sample_jsonl), 2))
        lib.close()
        bench.bench_ray_ingest(sample_jsonl, 4, make_settings(tmp_path / "u", chroma_url=chroma_url), ray_address, [1])


def test_ray_ingest_needs_a_chroma_server(tmp_path: Path) -> None:
    assistant = Assistant(make_settings(tmp_path / "store", embedder="hashing"))
    with pytest.raises(ConfigError) as exc:
        assistant.ingest_papers_on_ray([], "127.0.0.1:1")
    assert "PAPERCHAT_CHROMA_URL" in str(exc.value)
    assistant.close()


def test_unreachable_ray_cluster_is_an_error_at_once() -> None:
    pytest.importorskip("ray")
    from paperchat.ingestion.distributed import connect

    t0 = time.monotonic()
    with pytest.raises(NetworkError) as exc:
        connect(f"127.0.0.1:{free_port()}")  # ray.init alone retries for minutes
    assert "cannot reach the Ray cluster" in str(exc.value) and "ray start --head" in str(exc.value) and time.monotonic() - t0 < 30


def test_cli_workers_without_ray_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from paperchat.cli import main

    records = tmp_path / "r.jsonl"
    records.write_text("")
    assert main(["--data-dir", str(tmp_path / "d"), "ingest", "abstracts", str(records), "--workers", "2"]) == 2
    assert "--workers and --ray-batch go with --ray" in capsys.readouterr().err
