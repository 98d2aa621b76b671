"""Retrieval quality as a regression gate: the topic question sets over a small real store.

The store is `eval/quality/`: every gold paper of topic_dev, topic_tune and topic_heldout plus 2,500 seeded
distractors from the shared listing, with the vectors our ingester made for them (so it builds in seconds;
the questions are embedded by the real MiniLM). Thresholds are what the shipped settings measured on this
store (2026-12-03) minus a small margin; the full-store numbers live in `paperchat eval run` and the README.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperchat.assistant import Assistant
from paperchat.demo import load_vectors
from paperchat.evaluation.questions import Question, load_set
from paperchat.evaluation.sweep import retrieval_metrics
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.providers.minilm import MiniLMEmbedder

from .conftest import ROOT, make_settings

QUALITY = ROOT / "eval" / "quality"


@pytest.fixture(scope="module")
def quality_library(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> Iterator[Library]:
    lib = Library(make_settings(tmp_path_factory.mktemp("quality") / "store"), embedder=minilm)
    cache = load_vectors(QUALITY / "vectors.npz", minilm.id)
    assert len(cache) > 2500, "eval/quality/vectors.npz is missing or made by another model"
    rep = Ingester(lib, vector_cache=cache).ingest_records(read_records(QUALITY / "abstracts.jsonl.gz"))
    assert not rep.failed and rep.papers > 2500
    yield lib
    lib.close()


def _questions(shared: Path, name: str) -> list[Question]:
    path = shared / "eval" / f"{name}.jsonl" if name == "topic_dev" else ROOT / "eval" / f"{name}.jsonl"
    return load_set(path)[0]


def _mean(rows: dict[str, dict[str, float]], qs: list[Question], kind: str, metric: str) -> float:
    return statistics.fmean(rows[q.id][metric] for q in qs if q.kind == kind)


@pytest.mark.parametrize(
    ("name", "known_recall", "known_mrr", "multi_recall"),
    [("topic_dev", 0.97, 0.93, 0.60), ("topic_tune", 0.97, 0.80, 0.75)],
)
def test_topic_recall(quality_library: Library, shared: Path, name: str, known_recall: float, known_mrr: float, multi_recall: float) -> None:
    qs = _questions(shared, name)
    rows = retrieval_metrics(Assistant(quality_library.settings, quality_library), quality_library.settings.retrieval, qs, None)
    got = (_mean(rows, qs, "known-item", "recall@10"), _mean(rows, qs, "known-item", "mrr"), _mean(rows, qs, "multi-paper", "recall@10"))
    assert got[0] >= known_recall and got[1] >= known_mrr and got[2] >= multi_recall, f"{name}: known-item recall@10, MRR, multi-paper recall@10 = {got}"


def test_soft_topic_prior_finds_papers_the_rules_miss(quality_library: Library, shared: Path) -> None:
    """The tune set's known-item questions whose paper the topic rules leave out: a hard topic filter can
    never find them; the soft prior (the default) ranks them in the top 10."""
    qs = [q for q in _questions(shared, "topic_tune") if q.kind == "known-item" and not all(getattr(q, "rule_member", [True]))]
    assert len(qs) >= 3
    soft = retrieval_metrics(Assistant(quality_library.settings, quality_library), quality_library.settings.retrieval, qs, None)
    hard = retrieval_metrics(
        Assistant(quality_library.settings, quality_library), quality_library.settings.retrieval.model_copy(update={"topic_outside_weight": 0.0}), qs, None
    )
    assert all(soft[q.id]["recall@10"] == 1.0 for q in qs), {q.id: soft[q.id] for q in qs}
    assert all(hard[q.id]["recall@10"] == 0.0 for q in qs)
