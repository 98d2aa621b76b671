"""The write unit (paperchat.writer): every store change goes through it, and its finish patches the search
index with the unit's changes instead of reading the store back, with the same result as a full rebuild."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from paperchat.ingestion.pipeline import Ingester
from paperchat.library import Library
from paperchat.search_index import SearchSnapshot
from paperchat.store import StoredChunk
from paperchat.types import Chunk, Paper

from .conftest import hashing_settings

QUERIES = ["retrieval augmented generation", "reward model for agents", "machine translation of low-resource languages", "benchmark"]


def _same(a: SearchSnapshot, b: SearchSnapshot) -> None:
    """Two snapshots hold the same rows, vectors, papers, dates, topics and BM25 scores."""
    assert a.ids == b.ids
    assert a.vectors is not None and b.vectors is not None and np.array_equal(a.vectors, b.vectors)
    assert list(a.paper_ids) == list(b.paper_ids) and np.array_equal(a.dates, b.dates)
    assert {k: v.tolist() for k, v in a.topic_masks.items() if v.any()} == {k: v.tolist() for k, v in b.topic_masks.items() if v.any()}
    for q in QUERIES:
        sa, sb = a.scores(q), b.scores(q)
        assert (sa is None) == (sb is None)
        if sa is not None and sb is not None:
            assert np.array_equal(sa, sb)


@pytest.fixture
def lib(demo_store: Path, tmp_path: Path) -> Library:
    shutil.copytree(demo_store, tmp_path / "store")
    from paperchat.providers.hashing import HashingEmbedder

    return Library(hashing_settings(tmp_path / "store"), embedder=HashingEmbedder())


def _paper(i: int) -> Paper:
    return Paper(id=f"2601.{i:05d}", title=f"Retrieval agents number {i}", authors=["A. Author"],
                 abstract=f"We study retrieval augmented generation with reward models for agents, variant {i}.",
                 categories=["cs.CL"], date="2026-01-05")


def test_an_ingest_patches_the_index_without_reading_the_store(lib: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    lib.ready_index()  # the snapshot the next unit patches
    calls = []
    real = lib.store.iter_all
    monkeypatch.setattr(lib.store, "iter_all", lambda *a, **k: calls.append(1) or real(*a, **k))
    rep = Ingester(lib).ingest_records([_paper(1), _paper(2)])
    assert rep.chunks_added == 2 and not rep.failed
    assert calls == [], "the index was rebuilt from the store instead of patched"
    patched = lib.ready_index()
    assert "2601.00001" in set(patched.paper_ids) and not lib.search_index.is_dirty()
    monkeypatch.undo()
    _same(patched, lib.search_index.rebuild(lib.store))


def test_removal_and_replacement_match_a_rebuild(lib: Library) -> None:
    lib.ready_index()
    ing = Ingester(lib)
    ing.ingest_records([_paper(3)])
    changed = _paper(3).model_copy(update={"abstract": "A different abstract about machine translation benchmarks."})
    ing.ingest_records([changed])  # its old chunk is removed, the new one added
    victim = next(p for p in lib.catalog.topic_papers("rag"))
    assert ing.remove_paper(victim) > 0
    patched = lib.ready_index()
    assert victim not in set(patched.paper_ids) and len(patched.ids) == lib.store.count()
    _same(patched, lib.search_index.rebuild(lib.store))


def test_a_unit_it_cannot_describe_rebuilds_in_full(lib: Library) -> None:
    lib.ready_index()
    with lib.writing() as writer:
        writer.mark_dirty()
        assert lib.search_index.is_dirty()
        chunk = Chunk(id="x" * 32, paper_id="2601.99999", text="an orphan chunk about agents", kind="abstract")
        writer.upsert([StoredChunk.of(chunk, None, ())], lib.embedder.embed([chunk.text]))
    assert not lib.search_index.is_dirty()
    assert "x" * 32 in lib.ready_index().ids


def test_a_failed_unit_leaves_the_index_dirty_and_the_next_reader_rebuilds(lib: Library) -> None:
    lib.ready_index()
    with pytest.raises(RuntimeError), lib.writing() as writer:
        chunk = Chunk(id="y" * 32, paper_id="2601.99998", text="a chunk written before a crash", kind="abstract")
        writer.upsert([StoredChunk.of(chunk, None, ())], lib.embedder.embed([chunk.text]))
        raise RuntimeError("killed")
    assert lib.search_index.is_dirty()
    lib.close()
    again = Library(lib.settings, embedder=lib.embedder)
    try:
        assert "y" * 32 in again.ready_index().ids and not again.search_index.is_dirty()
    finally:
        again.close()


def test_a_fresh_process_patches_the_build_on_disk(lib: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    """`paperchat ingest` of one record in a new process: no snapshot is loaded yet, the one on disk is patched."""
    lib.ready_index()
    lib.close()
    fresh = Library(lib.settings, embedder=lib.embedder)
    try:
        assert fresh.search_index._snap is None
        monkeypatch.setattr(fresh.store, "iter_all", lambda *a, **k: pytest.fail("the store was read back"))
        assert Ingester(fresh).ingest_records([_paper(7)]).chunks_added == 1
        monkeypatch.undo()
        _same(fresh.ready_index(), fresh.search_index.rebuild(fresh.store))
    finally:
        fresh.close()


def test_posting_lists_are_bm25s_bit_for_bit(lib: Library) -> None:
    """Our array build of the BM25 matrix gives bm25s's own scores exactly (the Lucene variant, float32)."""
    import bm25s

    from paperchat.search_index.bm25 import posting_lists

    tok = lib.search_index.tokenizer
    docs = [tok(c.text) for b in lib.store.iter_all() for c in b.chunks]
    ref = bm25s.BM25(k1=0.9, b=0.6)
    ref.index(docs, show_progress=False)
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in d] for d in docs]
    flat = np.asarray([t for d in ids for t in d], dtype=np.int32)
    offsets = np.cumsum([0, *map(len, ids)], dtype=np.int64)
    data, indices, indptr = posting_lists(flat, offsets, len(vocab), 0.9, 0.6)
    sc = ref.scores
    for w, i in vocab.items():
        j = ref.vocab_dict[w]
        assert np.array_equal(indices[indptr[i] : indptr[i + 1]], sc["indices"][sc["indptr"][j] : sc["indptr"][j + 1]]), w
        assert np.array_equal(data[indptr[i] : indptr[i + 1]], sc["data"][sc["indptr"][j] : sc["indptr"][j + 1]]), w


def test_pdf_stamp_reads_what_older_stores_wrote() -> None:
    from paperchat.ingestion.stamp import PdfStamp

    old = PdfStamp.parse("ab" * 32 + ":1000/150")
    assert old == PdfStamp("ab" * 32, 1000, 150, "pypdf") and str(old) == "ab" * 32 + ":1000/150"
    new = PdfStamp("ab" * 32, 800, 100, "pdfium")
    assert PdfStamp.parse(str(new)) == new and str(new).endswith(":800/100/pdfium")
    assert new.change_from(old) == "chunks 1000/150 -> 800/100, extractor pypdf -> pdfium"
    assert PdfStamp.parse(None) is None and PdfStamp.parse("garbage") is None and PdfStamp.parse("ab:x/y") is None
    assert PdfStamp.sha_of("cd:1000/150") == "cd" and PdfStamp.sha_of(None) == ""


def test_two_libraries_on_one_folder_share_one_unit(lib: Library) -> None:
    """A nested hold from another Library on the same folder is the same write unit: its end does not clear the
    DIRTY marker while the outer unit still writes."""
    other = Library(lib.settings, embedder=lib.embedder)
    try:
        with lib.writing() as outer, other.writing() as inner:
            assert inner is outer
    finally:
        other.close()


def test_a_queries_rebuild_yields_to_a_writer_that_switched_first(lib: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query that rebuilds (no index, or a dirty one) while a writer finishes: the writer's build stays current."""
    from paperchat.search_index import SearchIndex

    reader, writer = SearchIndex(lib.settings.search_index_dir), SearchIndex(lib.settings.search_index_dir)
    real = reader._read_store

    def racing(store: object) -> object:
        parts = real(store)  # type: ignore[arg-type]
        writer.rebuild(lib.store)  # a writer switches CURRENT while the query's rebuild was reading
        return parts

    monkeypatch.setattr(reader, "_read_store", racing)
    got = reader.rebuild(lib.store, reader=True)
    assert got.name == writer._snap.name == (lib.settings.search_index_dir / "CURRENT").read_text().strip()  # type: ignore[union-attr]


def test_replacing_the_discovered_topics_changes_the_features_version(lib: Library) -> None:
    cat = lib.catalog
    before = cat.features_version()
    topics = cat.discovered()
    cat.replace_discovered(topics, cat.tags_of([p.id for p in cat.iter_papers()]), {})
    assert cat.features_version() != before
