from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paperchat import doctor
from paperchat.errors import EmbedderMismatch
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.store import StoredChunk

from .conftest import ROOT, CountingEmbedder, jsonl, make_settings, read_sample


def _ids(lib: Library) -> list[str]:
    return lib.store.all_ids()


def _stored(lib: Library) -> list[StoredChunk]:
    return [c for batch in lib.store.iter_all(texts=False) for c in batch.chunks]


def test_built_store_counts_and_scopes(built_library: Library) -> None:
    lib = built_library
    ids = _ids(lib)
    assert len(ids) == len(set(ids)) == lib.store.count()
    assert lib.catalog.count() >= 300
    # PDF chunks are linked to their paper and carry pages; the RAG paper is in the rag topic
    rag = lib.catalog.get("2005.11401")
    assert rag is not None and rag.pdf_path and "rag" in rag.topics
    stored = _stored(lib)
    pages = [c for c in stored if c.paper_id == "2005.11401" and c.kind == "pdf"]
    assert pages and all(c.page and c.page >= 1 for c in pages)
    assert all("rag" in c.topics for c in pages)
    assert sorted(c.id for c in pages) == sorted(lib.store.ids_of_paper("2005.11401", "pdf"))
    # topic scope = exactly the chunks of the topic's papers
    members = set(lib.catalog.topic_papers("rag"))
    in_scope = lib.store.get_chunks(lib.store.ids_in_topic("rag"))
    assert {c.paper_id for c in in_scope.values()} == members
    assert set(in_scope) == {c.id for c in stored if "rag" in c.topics}
    # the lexical index agrees with the store
    lex = lib.ready_lexical()
    assert sorted(lex.ids) == sorted(ids)


def test_reingest_embeds_nothing(built_library: Library, embedder: CountingEmbedder, sample_jsonl: Path, five_pdfs: list[Path]) -> None:
    ing = Ingester(built_library)
    before = built_library.store.count()
    rep = ing.ingest_records(read_records(sample_jsonl))
    rep2 = ing.ingest_pdfs(five_pdfs)
    assert embedder.embedded == 0
    assert rep.chunks_added == rep2.chunks_added == 0
    assert rep.chunks_skipped == 300 and rep2.papers == 5
    assert built_library.store.count() == before


def test_changed_text_replaces_old_chunk(built_library: Library, embedder: CountingEmbedder, tmp_path: Path) -> None:
    rec = json.loads(read_sample(1)[0])
    rec["abstract"] += " We also release code."
    path = tmp_path / "changed.jsonl"
    path.write_text(jsonl([rec]))
    before = built_library.store.count()
    rep = Ingester(built_library).ingest_records(read_records(path))
    assert rep.chunks_added == 1 and rep.chunks_removed == 1 and embedder.embedded == 1
    assert built_library.store.count() == before
    docs = [c.text for c in built_library.store.get_chunks(built_library.store.ids_of_paper(rec["id"])).values()]
    assert len(docs) == 1 and docs[0].endswith("We also release code.")


def test_remove_paper(built_library: Library) -> None:
    n = Ingester(built_library).remove_paper("2005.11401")
    assert n > 10
    assert built_library.catalog.get("2005.11401") is None
    assert not built_library.store.ids_of_paper("2005.11401")
    assert "2005.11401" not in set(built_library.ready_lexical().paper_ids)


def test_bad_pdf_leaves_store_unchanged(built_library: Library, tmp_path: Path, five_pdfs: list[Path]) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(five_pdfs[0].read_bytes()[:5000])
    before = sorted(_ids(built_library))
    rep = Ingester(built_library).ingest_pdfs([bad, five_pdfs[0]])
    assert rep.exit_code == 1 and len(rep.failed) == 1 and rep.failed[0].source == str(bad)
    assert sorted(_ids(built_library)) == before


def test_other_embedder_is_refused(built_store: Path, tmp_path: Path, embedder: CountingEmbedder) -> None:
    class Other(CountingEmbedder):
        pass

    other = Other(embedder.inner)
    other.id = "some/other-model"
    with pytest.raises(EmbedderMismatch) as exc:
        Library(make_settings(built_store), embedder=other)  # type: ignore[arg-type]
    assert "built with embedder" in str(exc.value)


def test_topic_rules_change_updates_metadata_only(
    built_library: Library, embedder: CountingEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topics = tmp_path / "topics.toml"
    topics.write_text('[[topic]]\nslug = "transformers"\nname = "T"\ndescription = "d"\nany = ["transformer*"]\n')
    settings = built_library.settings.model_copy(update={"topics_file": topics})
    rag_before = sorted(built_library.store.ids_in_topic("rag"))
    built_library.close()
    lib = Library(settings, embedder=embedder)
    # opening writes nothing: one line says the membership is out of date and what syncs it
    assert lib.topics_out_of_date() and sorted(lib.store.ids_in_topic("rag")) == rag_before
    told = [r.getMessage() for r in caplog.records if "out of date" in r.getMessage()]
    assert len(told) == 1 and "paperchat doctor --repair" in told[0]
    assert "topic membership is out of date" in " ".join(doctor.check(settings, embedder).problems)  # type: ignore[arg-type]
    synced = lib.sync_topics()
    assert synced.synced and synced.papers == lib.catalog.count() and synced.chunks == lib.store.count()
    assert synced.counts["rag"][1] == 0 and synced.counts["transformers"][0] == 0
    assert not lib.topics_out_of_date() and not lib.sync_topics().synced
    assert embedder.embedded == 0
    members = set(lib.catalog.topic_papers("transformers"))
    assert "1706.03762" in members and lib.catalog.topic_papers("rag") == []
    flagged = lib.store.get_chunks(lib.store.ids_in_topic("transformers"))
    assert {c.paper_id for c in flagged.values()} == members
    assert not lib.store.ids_in_topic("rag")
    lib.close()


def _cli(args: list[str], data_dir: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "paperchat.cli", *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def test_cli_exit_codes_and_json(tmp_path: Path, shared: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text("".join(read_sample(5)))
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(read_sample(5)) + "{not json\n")
    allbad = tmp_path / "bad.jsonl"
    allbad.write_text("{not json\n")
    d = tmp_path / "store"
    r = _cli(["ingest", "abstracts", str(good), "--json"], d)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert set(summary) >= {"papers", "chunks_added", "chunks_skipped", "failed", "seconds"}
    assert summary["papers"] == 5 and summary["chunks_added"] == 5
    r = _cli(["ingest", "abstracts", str(mixed), "--json"], d)
    assert r.returncode == 1 and json.loads(r.stdout)["chunks_skipped"] == 5
    assert json.loads(r.stdout)["failed"][0]["source"].endswith("mixed.jsonl:6")
    r = _cli(["ingest", "abstracts", str(allbad)], d)
    assert r.returncode == 2
    r = _cli(["topics", "--json"], d)
    assert r.returncode == 0 and json.loads(r.stdout)["papers"] == 5
    r = _cli(["remove", "--paper", "nope"], d)
    assert r.returncode == 2 and "not in the store" in r.stderr and "Traceback" not in r.stderr
