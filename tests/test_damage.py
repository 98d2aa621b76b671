"""A damaged or half-lost data dir: a deleted vector store, garbled or truncated files, concurrent writers.

Each case must end in one line that says what is damaged and what to run (never a traceback), and the data
must come back: by itself (the lexical index), by ingesting again, or by `paperchat doctor --repair`.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperchat import doctor
from paperchat.errors import StoreError
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library, writer_lock
from paperchat.providers.minilm import MiniLMEmbedder
from paperchat.store import forget_client
from tests.conftest import ROOT, CountingEmbedder, make_settings, read_sample
from tests.pdfmaker import make_pdf

N = 20


def _forget_clients() -> None:
    """Chroma caches one client per path and process: drop it, as a new process would start without it."""
    from chromadb.api.client import SharedSystemClient

    for key in list(SharedSystemClient._identifier_to_system):
        forget_client(Path(key))  # stopped: a leftover one makes forked PDF parsers hang


def cli(data: Path, *args: str, timeout: int = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data), "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "paperchat.cli", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)


def one_line_error(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode != 0, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("paperchat: error:")]
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def _records(path: Path) -> Path:
    path.write_text("".join(read_sample(N, step=389)), encoding="utf-8")
    return path


PDF_PAGES = [
    "Sparse routing for long documents. We propose a retrieval method that routes each query to a few "
    "experts and show that it answers questions over long documents better than dense retrieval. " * 3,
    "Experiments. On three benchmarks the routed retriever improves recall at ten by four points while "
    "halving the latency of the reader; ablations show that routing, not the larger index, explains it. " * 3,
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, shared: Path, minilm: MiniLMEmbedder) -> Path:
    """A data dir with N abstracts and one PDF, a follow and a save, built once (tests damage copies)."""
    tmp = tmp_path_factory.mktemp("damage")
    data = tmp / "store"
    lib = Library(make_settings(data), embedder=minilm)
    ing = Ingester(lib)
    assert not ing.ingest_records(read_records(_records(tmp / "records.jsonl"))).failed
    assert not ing.ingest_pdfs([make_pdf(tmp / "routing.pdf", PDF_PAGES)]).failed
    first = next(p.id for p in lib.catalog.iter_papers())
    lib.catalog.follow("rag")
    lib.catalog.save(first)
    lib.catalog.rate(first, 1)  # a "more like this" rating (issue 38): kept by a repair like the follows and saves
    lib.close()
    _forget_clients()
    return data


@pytest.fixture
def records(tmp_path: Path, shared: Path) -> Path:
    return _records(tmp_path / "records.jsonl")


@pytest.fixture
def pdf(base: Path) -> Path:
    return base.parent / "routing.pdf"


@pytest.fixture
def data(base: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh copy of the base data dir."""
    copy = tmp_path / "store"
    shutil.copytree(base, copy)
    _forget_clients()
    yield copy
    _forget_clients()


def reopen(data: Path, embedder: CountingEmbedder) -> Library:
    _forget_clients()
    return Library(make_settings(data), embedder=embedder)  # type: ignore[arg-type]


def consistent(lib: Library) -> None:
    """Catalogue, store and lexical index agree."""
    ids = sorted(lib.store.all_ids())
    assert ids and sorted(lib.ready_index().ids) == ids
    assert not lib.check()
    assert doctor.check(lib.settings, lib.embedder).ok


# -- case 4: the vector store deleted, the catalogue kept -------------------------------------------


def test_deleted_store_is_reported_and_refilled_by_ingesting_again(data: Path, records: Path, pdf: Path, embedder: CountingEmbedder) -> None:
    shutil.rmtree(data / "chroma")
    lib = reopen(data, embedder)
    assert lib.warnings and "paperchat doctor --repair" in lib.warnings[0] and "vector store is empty" in lib.warnings[0]
    health = doctor.check(lib.settings, embedder)  # type: ignore[arg-type]
    assert not health.ok and any("no abstract chunk" in p for p in health.problems)
    ing = Ingester(lib)
    rep = ing.ingest_records(read_records(records))
    assert rep.chunks_added == N and rep.chunks_skipped == 0  # the skip looks at the store, not the catalogue alone
    rep = ing.ingest_pdfs([pdf])
    assert rep.chunks_added >= 2 and not rep.failed
    consistent(lib)
    lib.close()


def test_reingesting_after_a_deleted_store_restores_every_chunk(data: Path, records: Path, pdf: Path, shared: Path, embedder: CountingEmbedder) -> None:
    """Round three, case 12: a PDF whose paper was already catalogued (with an abstract from metadata.json) got
    its page chunks back but not its abstract chunk ("402 of 407 chunks", and doctor then reported the gap)."""
    real = shared / "pdfs" / "scholarly_nlp" / "2304.02623v1.pdf"
    lib = reopen(data, embedder)
    rep = Ingester(lib).ingest_pdfs([real])
    assert not rep.failed
    paper = lib.catalog.get(rep.paper_ids[0])
    assert paper is not None and paper.abstract
    want = sorted(lib.store.all_ids())
    lib.close()
    shutil.rmtree(data / "chroma")
    lib = reopen(data, embedder)
    ing = Ingester(lib)
    assert not ing.ingest_records(read_records(records)).failed
    assert not ing.ingest_pdfs([pdf, real]).failed
    assert sorted(lib.store.all_ids()) == want
    consistent(lib)
    lib.close()


def test_doctor_repair_reembeds_reingests_and_drops_orphans(data: Path, embedder: CountingEmbedder) -> None:
    lib = reopen(data, embedder)
    want = sorted(lib.store.all_ids())
    lib.close()
    shutil.rmtree(data / "chroma")
    lib = reopen(data, embedder)
    # an orphan: a chunk of a paper the catalogue does not list
    from paperchat.ingestion.chunking import abstract_chunk
    from paperchat.store import StoredChunk
    from paperchat.types import Paper

    ghost = abstract_chunk(Paper(id="9999.99999", title="Ghost", abstract="A paper nobody ingested."))
    assert ghost is not None
    lib.store.upsert([StoredChunk.of(ghost, None, [])], embedder.embed([ghost.text]))
    lib.close()
    _forget_clients()
    rep = doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    text = " | ".join(rep.actions)
    assert f"re-embedded {N} abstract chunks" in text and "re-ingested 1 PDFs" in text and "dropped 1 chunks" in text, text
    assert not rep.need_pdf
    lib = reopen(data, embedder)
    assert sorted(lib.store.all_ids()) == want
    consistent(lib)
    lib.close()


# -- case 5: damaged files ----------------------------------------------------------------------------


def _garble(path: Path) -> None:
    body = path.read_bytes()
    path.write_bytes(b"\x00garbage\xff" * 64 + body[len(body) // 2 :])


@pytest.mark.parametrize("part", ["ids.json", "topics.json", "bm25/vocab.index.json", "vectors.npy"])
def test_damaged_lexical_files_rebuild_themselves(data: Path, embedder: CountingEmbedder, part: str, caplog: pytest.LogCaptureFixture) -> None:
    current = data / "lexical" / (data / "lexical" / "CURRENT").read_text().strip()
    target = current / part
    assert target.exists(), sorted(p.name for p in current.rglob("*"))
    if part == "vectors.npy":
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 3])  # truncated
    else:
        _garble(target)
    lib = reopen(data, embedder)
    assert doctor.check(lib.settings, embedder).problems  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="paperchat"):
        snap = lib.ready_index()
    assert any("lexical index" in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records)
    assert snap.search("language model", 5)
    consistent(lib)
    lib.close()


def test_garbled_catalogue_is_one_error_and_repair_refills_it(data: Path, records: Path, embedder: CountingEmbedder) -> None:
    lib = reopen(data, embedder)
    follows, saves, n, ratings = lib.catalog.followed(), lib.catalog.saved(), lib.catalog.count(), lib.catalog.ratings()
    assert len(ratings) == 1
    lib.close()
    _garble(data / "catalog.sqlite")
    with pytest.raises(StoreError) as err:
        reopen(data, embedder)
    assert "catalogue" in err.value.message and "paperchat doctor --repair" in err.value.hint
    _forget_clients()
    rep = doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    text = " | ".join(rep.actions)
    assert "moved the damaged catalogue" in text and f"refilled {N} paper rows" in text and "restored 1 follows, 1 saves and 1 ratings" in text, text
    assert list(data.glob("catalog.sqlite.damaged-*"))
    lib = reopen(data, embedder)
    assert lib.catalog.followed() == follows and lib.catalog.saved() == saves and lib.catalog.count() == n
    assert lib.catalog.ratings() == ratings
    rep2 = Ingester(lib).ingest_records(read_records(records))  # restores authors, embeds nothing
    assert rep2.chunks_added == 0
    assert all(p.authors for p in lib.catalog.get_many([pid for pid in rep2.paper_ids]).values())
    consistent(lib)
    lib.close()


def test_empty_catalogue_file_is_reported_and_keeps_follows(data: Path, embedder: CountingEmbedder) -> None:
    lib = reopen(data, embedder)
    follows, saves = lib.catalog.followed(), lib.catalog.saved()
    lib.close()
    for side in ("catalog.sqlite-wal", "catalog.sqlite-shm"):
        (data / side).unlink(missing_ok=True)
    (data / "catalog.sqlite").write_bytes(b"")
    lib = reopen(data, embedder)
    assert lib.warnings and "its file was empty" in lib.warnings[0] and "paperchat doctor --repair" in lib.warnings[0]
    assert lib.catalog.followed() == follows and lib.catalog.saved() == saves  # from user_lists.json
    lib.close()
    _forget_clients()
    doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    lib = reopen(data, embedder)
    assert lib.catalog.count() >= N and not lib.warnings
    lib.close()


def test_garbled_chroma_file_is_one_error_and_repair_reembeds(data: Path, embedder: CountingEmbedder) -> None:
    lib = reopen(data, embedder)
    want = sorted(lib.store.all_ids())
    lib.close()
    _forget_clients()
    _garble(data / "chroma" / "chroma.sqlite3")
    with pytest.raises(StoreError) as err:
        reopen(data, embedder)
    assert "vector store" in err.value.message and "paperchat doctor --repair" in err.value.hint
    _forget_clients()
    rep = doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    assert any("moved the damaged vector store" in a for a in rep.actions), rep.actions
    lib = reopen(data, embedder)
    assert sorted(lib.store.all_ids()) == want
    consistent(lib)
    lib.close()


def _made_by_the_user(a: Any, question: str) -> dict[str, Any]:
    """The collection 'thesis' (its papers, and the sources a question about it finds), the last visit, the
    digest, follows and saves."""
    from paperchat.types import Scope

    cat = a.library.catalog
    return {
        "papers": a.collection_papers("thesis"),
        "sources": [s.paper_id for s in a.ask(question, Scope.for_collection("thesis")).sources],
        "visit": cat.get_meta("last_visit"),
        "new": [(t.slug, [p.id for p in t.papers]) for t in a.digest(peek=True).topics],
        "follows": cat.followed(),
        "saves": cat.saved(),
    }


def test_repair_keeps_what_the_user_made(data: Path, embedder: CountingEmbedder, tmp_path: Path) -> None:
    """A garbled catalogue, repaired: the imported collection is still there with the same papers and is asked
    about as before; the follows, saves, last visit and the ingest times since it (the digest) come back too."""
    from paperchat.assistant import Assistant

    lib = reopen(data, embedder)
    a = Assistant(lib.settings, library=lib)
    stored = sorted(p.id for p in lib.catalog.iter_papers() if not p.id.startswith(("file:", "pdf-")))[:3]
    bib = tmp_path / "thesis.bib"
    entries = [f"@misc{{k{i},\n  title = {{x}},\n  eprint = {{{pid}}}\n}}\n" for i, pid in enumerate(stored)]
    entries.append("@article{mine,\n  title = {Sparse Expert Routing for Long Documents},\n  author = {Doe, Jane},\n  year = {2026},\n"
                   "  abstract = {We route each query to a few experts and answer questions over long documents better than dense retrieval.}\n}\n")
    bib.write_text("\n".join(entries))
    a.digest()  # the last visit: now; the entry ingested by the import below arrives after it
    rep = a.import_collection(bib, "Thesis")
    assert rep.size == 4 and len(rep.ingested) == 1, rep
    a.follow("thesis")
    question = "How are questions over long documents answered?"
    before = _made_by_the_user(a, question)
    assert before["new"] == [("rag", []), ("thesis", rep.ingested)] and set(before["sources"]) <= set(before["papers"])
    lib.close()
    _garble(data / "catalog.sqlite")
    _forget_clients()
    done = doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    text = " | ".join(done.actions)
    assert "moved the damaged catalogue" in text and "restored 1 collections (4 memberships), the last visit and 1 ingest times" in text, text
    lib = reopen(data, embedder)
    a = Assistant(lib.settings, library=lib)
    after = _made_by_the_user(a, question)
    assert after == before
    assert [c.name for c in a.collections()] == ["Thesis"] and a.topic_page("thesis").total == 4  # the app's page
    consistent(lib)
    lib.close()


# -- the same through the command line -------------------------------------------------------------


def test_cli_says_what_is_damaged_and_doctor_repairs(data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    # a deleted vector store: a warning naming the doctor, then doctor finds it and --repair fixes it
    shutil.rmtree(data / "chroma")
    r = cli(data, "ask", "What do these papers propose?")
    assert r.returncode == 0 and "paperchat: warning:" in r.stderr and "paperchat doctor --repair" in r.stderr, r.stderr
    r = cli(data, "doctor")
    assert r.returncode == 1 and "problem:" in r.stdout and "paperchat doctor --repair" in r.stdout, r.stdout
    r = cli(data, "doctor", "--repair")
    assert r.returncode == 0 and "Traceback" not in r.stderr and "ok:" in r.stdout, (r.stdout, r.stderr)
    # a garbled catalogue: one line, exit 2
    _garble(copy / "catalog.sqlite")
    one_line_error(cli(copy, "ask", "What do these papers propose?"), "catalogue", "damaged", "paperchat doctor --repair")
    # a garbled lexical file: the question is answered, with a one-line notice
    current = data / "lexical" / (data / "lexical" / "CURRENT").read_text().strip()
    _garble(current / "ids.json")
    r = cli(data, "ask", "How does routing each query to a few experts help retrieval over long documents?")
    assert r.returncode == 0 and "Traceback" not in r.stderr and "rebuilding it from the store" in r.stderr, r.stderr
    assert "References" in r.stdout


def test_cli_garbled_chroma_file(data: Path) -> None:
    _garble(data / "chroma" / "chroma.sqlite3")
    one_line_error(cli(data, "ask", "What do these papers propose?"), "vector store", "damaged", "paperchat doctor --repair")


# -- case 8: concurrent writers ------------------------------------------------------------------------


@pytest.mark.slow  # integration: seconds, not the fast layer's unit checks
def test_writer_lock_waits_with_one_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'4242 7'); print('held', flush=True); time.sleep(1.5)",
         str(tmp_path / "ingest.lock")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    t0 = time.perf_counter()
    with writer_lock(tmp_path) as before:
        waited = time.perf_counter() - t0
    holder.wait(timeout=10)
    assert waited > 0.5 and before == 7
    assert "another ingest is running (pid 4242), waiting..." in capfd.readouterr().err
    with writer_lock(tmp_path), writer_lock(tmp_path) as inner:  # re-entrant in one thread
        assert inner == 8  # the outer hold (write 9) is its own
    assert (tmp_path / "ingest.lock").read_text().split()[1] == "9"


@pytest.mark.slow  # five processes that each load MiniLM
def test_concurrent_cli_ingests(tmp_path: Path, shared: Path) -> None:
    data = tmp_path / "store"
    lines = read_sample(5, step=1009)
    procs = []
    for i, line in enumerate(lines):
        src = tmp_path / f"one{i}.jsonl"
        src.write_text(line, encoding="utf-8")
        env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data)}
        procs.append(subprocess.Popen([sys.executable, "-m", "paperchat.cli", "ingest", "abstracts", str(src)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env))
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and "Traceback" not in err, (out, err)
    _forget_clients()
    lib = Library(make_settings(data))
    ids = sorted(lib.store.all_ids())
    assert len(ids) == 5 and lib.catalog.count() == 5
    assert sorted(lib.ready_index().ids) == ids
    lib.close()


# -- issue 33, cases 4 and 5: a moved folder, and both stores lost ----------------------------------------


def test_repair_of_a_moved_folder_uses_its_own_copies(data: Path, embedder: CountingEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder moved elsewhere and its vector store deleted: the PDF comes back from the folder's own
    `uploads/<sha256>.pdf` (checked by hash), never from the absolute path recorded where the folder used to be."""
    moved = tmp_path / "elsewhere" / "store"
    shutil.move(str(data), str(moved))
    shutil.rmtree(moved / "chroma")
    _forget_clients()
    read: list[Path] = []
    original = Ingester.ingest_pdfs

    def spy(self: Ingester, paths: list[Path], *args: Any, **kwargs: Any) -> Any:
        read.extend(Path(p) for p in paths)
        return original(self, paths, *args, **kwargs)

    monkeypatch.setattr(Ingester, "ingest_pdfs", spy)
    rep = doctor.repair(make_settings(moved), embedder)  # type: ignore[arg-type]
    assert "re-ingested 1 PDFs" in " | ".join(rep.actions) and not rep.need_pdf, rep
    assert read and all(p.resolve().is_relative_to(moved.resolve()) for p in read), read
    # a copy whose bytes changed is not the paper's PDF: it is asked for again, not ingested
    shutil.rmtree(moved / "chroma")
    copy = next((moved / "uploads").glob("*.pdf"))
    copy.write_bytes(copy.read_bytes() + b"\n% changed\n")
    _forget_clients()
    again = doctor.repair(make_settings(moved), embedder)  # type: ignore[arg-type]
    assert len(again.need_pdf) == 1, again


def test_repair_with_store_and_catalogue_both_deleted_keeps_the_stored_pdfs(data: Path, embedder: CountingEmbedder) -> None:
    lib = reopen(data, embedder)
    pdf_papers = sorted(p.id for p in lib.catalog.iter_papers() if lib.catalog.stored_hashes()[p.id][1])
    lib.close()
    assert pdf_papers
    shutil.rmtree(data / "chroma")
    for f in data.glob("catalog.sqlite*"):
        f.unlink()
    _forget_clients()
    rep = doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    assert "re-read 1 stored PDF copies" in " | ".join(rep.actions), rep.actions
    lib = reopen(data, embedder)
    assert [p for p in pdf_papers if lib.catalog.get(p) is not None] == pdf_papers
    assert lib.store.ids_of_papers(pdf_papers)
    lib.close()


def test_a_repair_stopped_midway_is_finished_by_the_next(data: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33, case 3: a repair killed after it made a new catalogue left a healthy but partial one, and the next
    run said ok. Now the stopped run leaves its marker, `doctor` says so, and the next run rebuilds the rows."""
    lib = reopen(data, embedder)
    want = {pid: h for pid, (_, h, _) in lib.catalog.stored_hashes().items() if h}
    lib.close()
    _garble(data / "catalog.sqlite")
    _forget_clients()

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # stands for kill -9 between the catalogue's rebuild and the rest

    monkeypatch.setattr(doctor, "_refill", killed)
    with pytest.raises(KeyboardInterrupt):
        doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    monkeypatch.undo()
    _forget_clients()
    health = doctor.check(make_settings(data), embedder)  # type: ignore[arg-type]
    assert not health.ok and any("stopped before it finished" in p for p in health.problems)
    rep = doctor.repair(make_settings(data), embedder)  # type: ignore[arg-type]
    assert any("stopped midway" in a for a in rep.actions), rep.actions
    lib = reopen(data, embedder)
    got = {pid: h for pid, (_, h, _) in lib.catalog.stored_hashes().items() if h}
    assert got == want  # the PDF's link (its hash) is back
    consistent(lib)
    lib.close()
