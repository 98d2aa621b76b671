"""The fitted combination of the reader's logit with the rules (answering/combine.py): it learns which feature
tells the evidence sentence, is validated with whole PDFs held out, refuses weights written for other features,
and orders a paper answer's read sentences by its scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paperchat.answering import read_sources
from paperchat.answering.combine import FEATURES, Combiner, cross_validate, features, fit, load_combiner
from paperchat.text import Tokenizer
from paperchat.types import Source


def _rows(rng: np.random.Generator, gold: int, k: int = 8) -> list[dict[str, object]]:
    rows = []
    for j in range(k):
        rows.append({"reader": rng.normal() + (3.0 if j == gold else 0.0), "rules": rng.normal(), "lexical": rng.random(), "context": rng.random(),
                     "cosine": rng.random(), "fits": True, "gives": False, "n": 1 + j % 3, "fragment": False, "text": f"Sentence {j} of the page."})
    return rows


def test_it_learns_the_feature_that_tells_the_evidence_and_validates_by_pdf() -> None:
    rng = np.random.default_rng(0)
    items = []
    for q in range(120):
        gold = int(rng.integers(8))
        rows = _rows(rng, gold)
        items.append((features(rows), np.array([float(j == gold) for j in range(8)]), f"pdf{q % 12}"))
    comb = fit(items, l2=0.1)
    w = dict(zip(FEATURES, comb.weights, strict=True))
    assert w["reader"] > abs(w["rules"]) and w["reader"] > 0
    assert cross_validate(items, 0.1) >= 100  # of 120: the held-out PDFs' evidence comes first
    shuffled = [(x, y[np.random.default_rng(1).permutation(len(y))], p) for x, y, p in items]
    assert cross_validate(shuffled, 0.1) < 50  # labels unrelated to the features: nothing to learn


def test_weights_for_other_features_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "combine.json"
    assert load_combiner(path) is None
    Combiner(tuple(1.0 for _ in FEATURES)).save(path, {"note": "test"})
    assert load_combiner(path) == Combiner(tuple(1.0 for _ in FEATURES))
    spec = json.loads(path.read_text())
    spec["features"] = spec["features"][:-1]
    path.write_text(json.dumps(spec))
    assert load_combiner(path) is None


def test_the_combiner_orders_the_read_sentences() -> None:
    """A combiner that weighs only the rules' score puts the rules' best first, whatever the reader says."""
    page = ("The index answers a single lookup in about 30 milliseconds on one core. We wrote the index in Rust. "
            "Lookups are batched when many arrive together.")
    src = Source(n=1, paper_id="p1", title="", text=page, page=3, score=1.0)

    def contrary(q: str, sents: object, ctx: object = None) -> np.ndarray:
        return np.array([10.0 * i for i in range(len(list(sents)))])  # type: ignore[call-overload]  # the rules' last is its best

    only_rules = Combiner(tuple(1.0 if f == "rules" else 0.0 for f in FEATURES))
    q = "How quick is a single lookup against the index?"
    plain = read_sources(q, [src], Tokenizer(), reader=contrary, reader_mix=0.0)
    assert "30 milliseconds" not in plain.ranked[0].text  # the reader alone would lead with another sentence
    reading = read_sources(q, [src], Tokenizer(), reader=contrary, reader_mix=0.0, combine=only_rules)
    read = [s for s in reading.ranked if s.reader is not None]
    assert read and [s.score for s in read] == sorted((s.rules for s in read), reverse=True)  # type: ignore[misc]
    assert "30 milliseconds" in read[0].text


def test_the_shipped_combiner_is_the_default_only_when_the_reader_orders(tmp_path: Path) -> None:
    """models/reader-sentence/combine.json ships with the reader and is fitted for its features; it orders paper
    answers by default, not with PAPERCHAT_READER=refuse or off, nor with reader_combine off (the fixed mix)."""
    from paperchat.reader.model import SENTENCE_READER, sentence_combiner
    from tests.conftest import make_settings

    spec = json.loads((SENTENCE_READER / "combine.json").read_text())
    assert tuple(spec["features"]) == FEATURES and spec["top1_cv"] > spec["top1_mix"]
    settings = make_settings(tmp_path)
    assert sentence_combiner(settings) == load_combiner(SENTENCE_READER / "combine.json") is not None
    assert sentence_combiner(settings.model_copy(update={"reader": "refuse"})) is None
    assert sentence_combiner(settings.model_copy(update={"reader": "off"})) is None
    off = settings.model_copy(update={"answers": settings.answers.model_copy(update={"reader_combine": False})})
    assert sentence_combiner(off) is None


def test_the_page_features_vote_where_the_subject_is() -> None:
    """Stop 39: `reader_page` marks the sentences on the page of the reader's best sentence, `page_share` is the share
    of the read sentences on a sentence's page; sentences without a page (an abstract) share one."""
    rows = [{"reader": r, "rules": 0.5, "lexical": 0.1, "context": 0.1, "cosine": 0.3, "fits": True, "gives": False, "n": 1,
             "fragment": False, "text": "A sentence.", "page": pg} for r, pg in ((0.5, 3), (2.0, 5), (-1.0, 5), (0.0, 7))]
    x = features(rows)
    on_best, share = x[:, FEATURES.index("reader_page")], x[:, FEATURES.index("page_share")]
    assert list(on_best) == [0.0, 1.0, 1.0, 0.0] and list(share) == [0.25, 0.5, 0.5, 0.25]
    no_pages = features([{**r, "page": None} for r in rows])
    assert set(no_pages[:, FEATURES.index("reader_page")]) == {1.0} and set(no_pages[:, FEATURES.index("page_share")]) == {1.0}
