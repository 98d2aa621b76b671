"""The benchmark commands run end to end on small real inputs (numbers themselves are not asserted:
targets live in the benchmarks, not in timed tests)."""

from __future__ import annotations

from pathlib import Path

from paperchat import bench
from paperchat.assistant import Assistant
from paperchat.library import Library


def test_bench_ingest_small(sample_jsonl: Path, tmp_path: Path, built_library: Library) -> None:
    settings = built_library.settings.model_copy(update={"data_dir": tmp_path / "unused"})
    res = bench.bench_ingest(sample_jsonl, 20, settings)
    assert res["abstracts"] == 20 and res["first_added"] == 20 and res["reingest_chunks_embedded"] == 0
    assert res["ours_s"] > 0 and res["limit_s"] > 0 and res["naive_s"] > 0 and res["ours/naive"] > 0


def test_bench_query_subset_and_naive(built_library: Library, tmp_path: Path) -> None:
    full = Assistant(built_library.settings, built_library)
    sub = bench.subset_store(full, built_library.settings.model_copy(update={"data_dir": tmp_path / "sub"}), 50).library
    abstracts = len(sub.store.ids_of_kind("abstract"))
    pdf_chunks = len(built_library.store.ids_of_kind("pdf"))
    assert abstracts == 50 and sub.store.count() == 50 + pdf_chunks
    assert sorted(sub.ready_index().ids) == sorted(sub.store.all_ids())
    assert len(sub.store.ids_in_topic("rag")) > 0
    sub.close()
    built_library.close()
    res = bench.bench_query_sizes(built_library.settings, [("How do retrieval-augmented models use documents?", "rag")], ["2005.11401"], [50, None], repeat=1)
    assert set(res) == {"50", "all"}
    for v in res.values():
        assert v["topic_retrieve_p50_ms"] > 0 and v["naive_topic_p50_ms"] > 0 and v["paper_retrieve_p50_ms"] > 0
    assert "<svg" in bench.chart_svg({"query": res})


def test_bench_viewer_and_placement_small(shared: Path, tmp_path: Path) -> None:
    """`bench viewer` on the shared four-page PDF, and its placement part over that PDF's dev questions."""
    import json

    from .conftest import hashing_settings

    settings = hashing_settings(tmp_path / "unused")
    pdf = shared / "pdfs" / "scholarly_nlp" / "2304.02623v1.pdf"
    res = bench.bench_viewer(pdf, settings, ["How do the authors use the model to write papers?", "What are the limitations?"], rounds=1)
    assert res["pages"] == 4 and res["citations_clicked"] > 0 and res["citations_placed_share"] == 1.0
    assert res["click_cold_p95_ms"] > 0 and res["click_warm_p95_ms"] > 0 and res["first_paint_ms"] > 0
    rows = [json.loads(line) for line in (shared / "eval" / "askpdf_dev.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    mine = [r for r in rows if r["pdf"] == "scholarly_nlp/2304.02623v1.pdf"]
    placed = bench.bench_placement(mine, shared / "pdfs", settings)
    assert placed["questions"] == 3 and placed["evidence_placed_share"] == 1.0 and placed["evidence_missed"] == "none"
