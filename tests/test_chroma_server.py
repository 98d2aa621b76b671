"""The store on a real Chroma server (`chroma run`, what chromadb installs): PAPERCHAT_CHROMA_URL switches
the store to chromadb.HttpClient with no other change.

scripts/test.sh (and so .ci/run) starts one server on a free loopback port with a temporary path and
exports PAPERCHAT_TEST_CHROMA_URL; without it, the fixture starts its own. Either way it is stopped by pid.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from paperchat.errors import StoreError
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.qa import QA
from paperchat.store import StoredChunk
from paperchat.types import Chunk, Scope
from tests.conftest import CountingEmbedder, free_port, make_settings

pytestmark = pytest.mark.slow  # a Chroma server process per module




def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=2) as r:  # noqa: S310 - loopback
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    given = os.environ.get("PAPERCHAT_TEST_CHROMA_URL")
    if given:
        assert _up(given), f"the Chroma server at {given} (started by scripts/test.sh) does not answer"
        yield given
        return
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    assert exe, "the chroma command (installed with chromadb) is missing"
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen([exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _up(url):
            assert proc.poll() is None and time.monotonic() < deadline, "chroma run did not start"
            time.sleep(0.3)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.fixture
def server_library(chroma_url: str, tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Library]:
    # one collection per embedder on the server: a fresh server path per test run, so clear it first
    import chromadb

    host, port = chroma_url.rsplit(":", 1)
    client = chromadb.HttpClient(host=host.split("//")[1], port=int(port))
    for c in client.list_collections():
        client.delete_collection(c.name if hasattr(c, "name") else str(c))
    lib = Library(make_settings(tmp_path / "local", chroma_url=chroma_url), embedder=embedder)  # type: ignore[arg-type]
    yield lib
    lib.close()


def test_store_operations_on_the_server(server_library: Library) -> None:
    store = server_library.store
    assert not (server_library.settings.chroma_dir).exists()  # nothing written locally by Chroma
    chunks = [Chunk(id=f"c{i}", paper_id=f"p{i % 3}", text=f"text number {i}", kind="abstract", page=None, start=0, end=13) for i in range(9)]
    vecs = np.eye(9, 384, dtype=np.float32)
    stored = [StoredChunk.of(c, dt.date(2026, 1, 1 + i), ["rag"] if i % 2 == 0 else []) for i, c in enumerate(chunks)]
    store.upsert(stored, vecs)
    assert store.count() == 9 and store.existing_ids(["c1", "zz"]) == {"c1"}
    assert sorted(store.ids_of_paper("p1")) == ["c1", "c4", "c7"]
    rag = Scope.for_topic("rag")
    hits = store.dense_search(vecs[4], 3, rag)
    assert hits[0][0].id == "c4" and all(int(c.id[1:]) % 2 == 0 for c, _ in hits)
    store.set_topic_flags({p: ["rag"] for p in ("p0", "p2")}, ["rag"])  # p1's chunks (c1, c4, c7) leave the topic
    assert "c4" not in [c.id for c, _ in store.dense_search(vecs[4], 3, rag)]
    assert sorted(store.ids_in_topic("rag")) == ["c0", "c2", "c3", "c5", "c6", "c8"]
    store.delete(["c0", "c1"])
    assert store.count() == 7 and sum(len(b.chunks) for b in store.iter_all()) == 7


def test_ingest_and_ask_round_trip_on_the_server(server_library: Library, sample_jsonl: Path, five_pdfs: list[Path], embedder: CountingEmbedder) -> None:
    ing = Ingester(server_library)
    rep = ing.ingest_records(read_records(sample_jsonl))
    assert not rep.failed and rep.papers == 300
    rep = ing.ingest_pdfs([five_pdfs[1]])
    assert not rep.failed
    n = embedder.embedded
    again = Ingester(server_library).ingest_pdfs([five_pdfs[1]])
    assert embedder.embedded == n and again.chunks_added == 0  # re-ingest embeds nothing
    qa = QA(server_library)
    ans = qa.ask("How are negative passages chosen for training?", Scope.for_paper("2004.04906"))
    assert ans.citations and {c.paper_id for c in ans.citations} == {"2004.04906"}
    assert any(c.page for c in ans.citations)
    lex = server_library.ready_index()
    ids = server_library.store.all_ids()
    assert sorted(lex.ids) == sorted(ids)


def test_unreachable_server_is_a_clear_error(tmp_path: Path, embedder: CountingEmbedder) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StoreError) as exc:
        Library(make_settings(tmp_path, chroma_url=url), embedder=embedder)  # type: ignore[arg-type]
    assert "cannot reach the Chroma server" in str(exc.value) and "chroma run" in str(exc.value)
