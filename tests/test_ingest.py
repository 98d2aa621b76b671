"""Ingestion into the store: counts, scopes, idempotence, replacement, removal, the embedder guard and
topic-rule changes, on the demo corpus with the hashing embedder (fast); the CLI's exit codes and JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paperchat.cli import main
from paperchat.errors import EmbedderMismatch
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.providers.hashing import HashingEmbedder

from .conftest import ROOT, CountingEmbedder, hashing_settings, jsonl, make_settings
from .corpus import PAPER_ID, PAPER_PAGES, demo_lines, write_paper, write_paper_folder

DEMO_PAPERS = 1548


def _ids(lib: Library) -> list[str]:
    return lib.store.all_ids()


def _papers_in_topic_scope(lib: Library, slug: str) -> set[str]:
    """The papers of the chunks the store flags as members of `slug`."""
    return {c.paper_id for c in lib.store.get_chunks(lib.store.ids_in_topic(slug)).values()}


def test_store_counts_and_scopes(demo_library: Library) -> None:
    lib = demo_library
    ids = _ids(lib)
    assert len(ids) == len(set(ids)) == lib.store.count() == DEMO_PAPERS + len(PAPER_PAGES) + 1  # + the paper's abstract
    assert lib.catalog.count() == DEMO_PAPERS + 1 and not lib.check()
    # PDF chunks are linked to their paper and carry pages; the sidecar's abstract puts the paper in "rag"
    paper = lib.catalog.get(PAPER_ID)
    assert paper is not None and paper.pdf_path and "rag" in paper.topics and paper.authors == ["Ada Lovelace", "Charles Babbage"]
    chunks = lib.store.get_chunks(lib.store.ids_of_paper(PAPER_ID)).values()
    assert sorted(c.page for c in chunks if c.kind == "pdf") == [1, 2, 3, 4]  # type: ignore[type-var]
    assert PAPER_PAGES[1][:40] in next(c.text for c in chunks if c.page == 2)
    # topic scope = exactly the chunks of the topic's papers, for every topic
    for t in lib.topics.topics:
        assert _papers_in_topic_scope(lib, t.slug) == set(lib.catalog.topic_papers(t.slug)), t.slug
    # the lexical index agrees with the store
    assert sorted(lib.ready_index().ids) == sorted(ids)


def test_reingest_embeds_nothing(demo_library: Library, counted: CountingEmbedder, tmp_path: Path) -> None:
    from paperchat.demo import DEMO_DIR

    ing = Ingester(demo_library)
    before = demo_library.store.count()
    rep = ing.ingest_records(read_records(DEMO_DIR / "abstracts.jsonl.gz"))
    rep2 = ing.ingest_pdfs([write_paper_folder(tmp_path / "again")])
    assert counted.embedded == 0
    assert rep.chunks_added == rep2.chunks_added == 0
    assert rep.chunks_skipped == DEMO_PAPERS and rep2.papers == 1 and "unchanged" in rep2.stored[0][1]
    assert demo_library.store.count() == before


def test_other_extractor_rechunks_and_says_so(demo_library: Library, counted: CountingEmbedder, tmp_path: Path) -> None:
    """A PDF stored with pypdf and ingested again with PDFium is parsed again, its chunks replaced by the new
    extractor's, and the summary says so; ingested once more it is unchanged. Nothing else moves."""
    from paperchat.ingestion.chunking import PageChunker
    from paperchat.ingestion.pdf import read_pdf

    lib = demo_library
    folder = write_paper_folder(tmp_path / "again")
    others = sorted(set(_ids(lib)) - set(lib.store.ids_of_paper(PAPER_ID, "pdf")))
    lib.settings.pdf_extractor = "pdfium"
    rep = Ingester(lib).ingest_pdfs([folder])
    assert rep.exit_code == 0 and "re-chunked: extractor pypdf -> pdfium" in rep.stored[0][1], rep.stored
    parsed = read_pdf(next(folder.glob("*.pdf")), extractor="pdfium")
    want = {c.id for c in PageChunker(lib.settings.chunk_size, lib.settings.chunk_overlap).chunk_pages(PAPER_ID, parsed.pages)}
    assert set(lib.store.ids_of_paper(PAPER_ID, "pdf")) == want
    assert sorted(c.page for c in lib.store.get_chunks(sorted(want)).values()) == [1, 2, 3, 4]  # type: ignore[type-var]
    assert sorted(set(_ids(lib)) - want) == others
    again = Ingester(lib).ingest_pdfs([folder])
    assert "unchanged" in again.stored[0][1] and again.chunks_added == 0


def test_changed_text_replaces_old_chunk(demo_library: Library, counted: CountingEmbedder, tmp_path: Path) -> None:
    rec = json.loads(demo_lines(1, start=7)[0])
    rec["abstract"] += " We also release code."
    path = tmp_path / "changed.jsonl"
    path.write_text(jsonl([rec]))
    before = demo_library.store.count()
    rep = Ingester(demo_library).ingest_records(read_records(path))
    assert rep.chunks_added == 1 and rep.chunks_removed == 1 and counted.embedded == 1
    assert demo_library.store.count() == before
    (chunk,) = demo_library.store.get_chunks(demo_library.store.ids_of_paper(rec["id"])).values()
    assert chunk.text.endswith("We also release code.")
    assert chunk.id in set(demo_library.ready_index().ids)


def test_remove_paper(demo_library: Library) -> None:
    n = Ingester(demo_library).remove_paper(PAPER_ID)
    assert n == len(PAPER_PAGES) + 1
    assert demo_library.catalog.get(PAPER_ID) is None
    assert not demo_library.store.ids_of_paper(PAPER_ID)
    assert PAPER_ID not in set(demo_library.ready_index().paper_ids)
    assert Ingester(demo_library).remove_paper(PAPER_ID) == -1  # unknown now


def test_bad_pdf_leaves_store_unchanged(demo_library: Library, tmp_path: Path) -> None:
    good = write_paper(tmp_path / "good.pdf")
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(good.read_bytes()[:700])
    before = sorted(_ids(demo_library))
    rep = Ingester(demo_library).ingest_pdfs([bad, good])
    assert rep.exit_code == 1 and len(rep.failed) == 1 and rep.failed[0].source == str(bad)
    assert sorted(_ids(demo_library)) == before  # the good one is the demo's paper: unchanged


def test_other_embedder_is_refused(demo_store: Path, hashing: HashingEmbedder, tmp_path: Path) -> None:
    other = CountingEmbedder(hashing)
    other.id = "some/other-model"
    with pytest.raises(EmbedderMismatch) as exc:
        Library(hashing_settings(demo_store), embedder=other)  # type: ignore[arg-type]
    assert "built with embedder" in str(exc.value)
    # chosen by name: a hashing store opened as MiniLM (nothing is embedded, so MiniLM never loads)
    with pytest.raises(EmbedderMismatch, match="PAPERCHAT_EMBEDDER=hashing"):
        Library(make_settings(demo_store, embedder="minilm"))


def test_topic_rules_change_updates_metadata_only(
    demo_library: Library, counted: CountingEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topics = tmp_path / "topics.toml"
    topics.write_text('[[topic]]\nslug = "transformers"\nname = "T"\ndescription = "d"\nany = ["transformer*"]\n')
    settings = demo_library.settings.model_copy(update={"topics_file": topics})
    vectors = demo_library.ready_index().vectors.copy()  # type: ignore[union-attr]
    rag_before = sorted(demo_library.store.ids_in_topic("rag"))
    demo_library.close()
    lib = Library(settings, embedder=counted)  # type: ignore[arg-type]
    try:
        # opening writes nothing: one line says the membership is out of date and what syncs it
        assert lib.topics_out_of_date() and sorted(lib.store.ids_in_topic("rag")) == rag_before
        assert [r.getMessage() for r in caplog.records if "out of date" in r.getMessage()]
        synced = lib.sync_topics()
        assert synced.synced and synced.papers == DEMO_PAPERS + 1 and synced.chunks == lib.store.count()
        assert not lib.topics_out_of_date() and not lib.sync_topics().synced
        assert counted.embedded == 0
        members = set(lib.catalog.topic_papers("transformers"))
        assert 10 < len(members) < DEMO_PAPERS and lib.catalog.topic_papers("rag") == []
        assert _papers_in_topic_scope(lib, "transformers") == members
        assert not lib.store.ids_in_topic("rag")
        assert (lib.ready_index().vectors == vectors).all()  # type: ignore[union-attr]  # the same vectors
    finally:
        lib.close()


def test_cli_exit_codes_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text("".join(demo_lines(5)))
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(demo_lines(5)) + "{not json\n")
    allbad = tmp_path / "bad.jsonl"
    allbad.write_text("{not json\n")
    d = tmp_path / "store"
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(d), "PAPERCHAT_EMBEDDER": "hashing"}
    # the real command once (a subprocess: its exit status and stdout), then main() in this process
    r = subprocess.run(
        [sys.executable, "-m", "paperchat.cli", "ingest", "abstracts", str(good), "--json"], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert set(summary) >= {"papers", "chunks_added", "chunks_skipped", "failed", "seconds"}
    assert summary["papers"] == 5 and summary["chunks_added"] == 5
    monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(d))
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "hashing")

    def cli(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = cli("ingest", "abstracts", str(mixed), "--json")
    assert code == 1 and json.loads(out)["chunks_skipped"] == 5
    assert json.loads(out)["failed"][0]["source"].endswith("mixed.jsonl:6")
    code, _, _ = cli("ingest", "abstracts", str(allbad))
    assert code == 2
    code, out, _ = cli("topics", "--json")
    assert code == 0 and json.loads(out)["papers"] == 5
    code, _, err = cli("remove", "--paper", "nope")
    assert code == 2 and "not in the store" in err and "Traceback" not in err


def test_pdfs_embedded_together_are_stored_as_one_by_one(tmp_path: Path, counted: CountingEmbedder) -> None:
    # one run embeds the new chunks of several PDFs in one call; each PDF is stored as if ingested alone, and a
    # paper met twice in the run (a second file with the same arXiv stamp, one page changed) replaces the first
    from .pdfmaker import make_pdf

    other = [p.replace(PAPER_ID, "2401.08888").replace("Hard Negatives", "Soft Positives") for p in PAPER_PAGES]
    changed = [*PAPER_PAGES[:3], PAPER_PAGES[3].replace("Future work", "Later work")]
    a, b, c = (make_pdf(tmp_path / f"{n}.pdf", pages) for n, pages in (("a", PAPER_PAGES), ("b", other), ("c", changed)))

    def store(name: str, runs: list[list[Path]]) -> tuple[list[str], int]:
        lib = Library(hashing_settings(tmp_path / name), embedder=counted)  # type: ignore[arg-type]
        added = 0
        for files in runs:
            rep = Ingester(lib).ingest_pdfs(files)
            assert not rep.failures, rep.failed
            added += rep.chunks_added
        ids = sorted(lib.store.all_ids())
        assert sorted(lib.ready_index().ids) == ids and lib.catalog.count() == len({lib.store.get_chunks([i])[i].paper_id for i in ids})
        lib.close()
        return ids, added

    assert store("together", [[a, b]]) == store("alone", [[a], [b]])
    together, added = store("twice", [[a, c]])
    assert together == store("in-turn", [[a], [c]])[0] and added == len(together) + 1  # a's chunks, then only c's changed page
