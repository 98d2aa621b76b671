"""For you (issue 38): ratings stored and mirrored, the model fitted on them, the feed's order and reasons, the
CLI, and the evaluation against simulated researchers. On the demo corpus over the hashing embedder (fast)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from paperchat.assistant import Assistant
from paperchat.catalog import Catalog
from paperchat.cli import main
from paperchat.evaluation.feed_eval import evaluate_feed
from paperchat.foryou import FEW_RATINGS, for_you, signals
from paperchat.library import Library

RAG, CODE = "rag", "code-generation"


def _window(lib: Library) -> dt.date:
    """The first day of the last 120 days of the demo's listings: a feed with a few hundred papers."""
    return max(lib.catalog.date_counts()) - dt.timedelta(days=120)


def _older(lib: Library, slug: str, since: dt.date, n: int, skip: set[str] = set()) -> list[str]:  # noqa: B006 - read only
    """n papers of a topic listed before `since` (what the researcher rated earlier), not in `skip`."""
    return [p for p in lib.catalog.topic_papers(slug, until=since - dt.timedelta(days=1)) if p not in skip][:n]


def test_ratings_are_stored_mirrored_and_restored(demo_library: Library) -> None:
    cat = demo_library.catalog
    a, b = _older(demo_library, RAG, _window(demo_library), 2)
    cat.rate(a, 1)
    cat.rate(b, -1)
    assert cat.ratings() == {a: 1, b: -1}
    cat.rate(b, 1)  # a new rating replaces the old one
    cat.rate(a, 0)  # 0 clears
    assert cat.ratings() == {b: 1}
    with pytest.raises(ValueError, match="rating is"):
        cat.rate(a, 5)
    mirror = json.loads(cat.mirror.read_text())
    assert [r[:2] for r in mirror["ratings"]] == [[b, 1]]
    # a lost catalogue takes the ratings back from user_lists.json
    path = cat.path
    demo_library.close()
    moved = path.with_name("lost.sqlite")
    shutil.move(path, moved)
    fresh = Catalog(path)
    assert fresh.ratings() == {b: 1} and fresh.restored["ratings"] == 1
    fresh.close()


def test_a_mirror_with_a_bad_rating_keeps_the_good_ones(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    (tmp_path / "user_lists.json").write_text(json.dumps({"ratings": [["2501.00001", 1, "2026-01-01"], ["2501.00002", 7, "2026-01-01"]]}))
    cat = Catalog(path)
    assert cat.ratings() == {"2501.00001": 1}
    cat.close()


def test_ratings_rank_the_rated_kind_first_and_say_why(demo_library: Library) -> None:
    lib = demo_library
    since = _window(lib)
    base = for_you(lib, since=since, k=10)
    assert base.positives == 0 and "newest first" in base.headline()
    dates = [it.paper.date for it in base.items]
    assert dates == sorted(dates, reverse=True)  # nothing learned: newest first
    ups = _older(lib, RAG, since, 5)
    downs = _older(lib, CODE, since, 5, set(ups))
    for p in ups:
        lib.catalog.rate(p, 1)
    for p in downs:
        lib.catalog.rate(p, -1)
    got = for_you(lib, since=since, k=10)
    window = set(lib.catalog.papers_between(since))
    rag = window & set(lib.catalog.topic_papers(RAG))
    code = window & set(lib.catalog.topic_papers(CODE)) - rag
    top = [it.paper.id for it in got.items]
    share = len(rag) / len(window)
    assert len(rag) >= 10 and share < 0.3
    assert sum(p in rag for p in top) >= 6, (top, share)  # against a base rate under 0.3
    assert not any(p in code for p in top[:5])
    assert all(it.reasons for it in got.items[:5])
    assert any(r.startswith("close to ") and r.endswith("which you rated up") for it in got.items for r in it.reasons)
    assert got.positives == 5 and got.negatives == 5 and not got.hint()
    assert not set(top) & set(ups + downs)  # rated papers are not offered again


def test_one_rating_is_enough_and_the_feed_asks_for_more(demo_library: Library) -> None:
    lib = demo_library
    since = _window(lib)
    [p] = _older(lib, RAG, since, 1)
    lib.catalog.rate(p, 1)
    got = for_you(lib, since=since, k=10)
    assert got.positives == 1 and got.items and "five or more" in got.hint() and FEW_RATINGS == 5


def test_follows_are_the_cold_start_and_saves_collections_count(demo_library: Library) -> None:
    lib = demo_library
    since = _window(lib)
    lib.catalog.follow(CODE)
    got = for_you(lib, since=since, k=10)
    code = set(lib.catalog.topic_papers(CODE))
    top = [it.paper.id for it in got.items]
    assert sum(p in code for p in top) >= 7, top
    assert any("which you follow" in r for it in got.items for r in it.reasons)
    saved = _older(lib, RAG, since, 1)[0]
    lib.catalog.save(saved, True)
    assert [(s.paper_id, s.label, s.why) for s in signals(lib)] == [(saved, 1, "saved")]
    lib.catalog.rate(saved, -1)  # an explicit rating wins over the save
    assert [(s.label, s.why) for s in signals(lib)] == [(0, "marked not interested")]


def test_digest_for_you_orders_each_topic_by_the_model(demo_library: Library) -> None:
    core = Assistant(demo_library.settings, demo_library)
    core.follow(RAG)
    plain = core.digest(peek=True)
    ids = [p.id for p in plain.topics[0].papers]
    assert len(ids) > 20
    for p in _older(demo_library, CODE, _window(demo_library), 5):
        core.rate(p, 1)
    ranked = core.digest(peek=True, for_you=True)
    got = [p.id for p in ranked.topics[0].papers]
    assert sorted(got) == sorted(ids) and got != ids


def test_cli_rate_and_feed(demo_library: Library, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "hashing")
    data = ["--data-dir", str(demo_library.settings.data_dir)]
    since = _window(demo_library)
    [p] = _older(demo_library, RAG, since, 1)
    demo_library.close()
    assert main([*data, "rate", p, "up"]) == 0
    assert "more like this (1 rated up, 0 down" in capsys.readouterr().out
    assert main([*data, "feed", "--since", since.isoformat(), "--k", "5", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["positives"] == 1 and len(got["papers"]) == 5 and got["papers"][0]["reasons"]
    assert main([*data, "rate", "9999.99999", "up"]) != 0
    assert "not in the library" in capsys.readouterr().err
    assert main([*data, "rate", p, "clear"]) == 0 and "rating cleared" in capsys.readouterr().out


@pytest.mark.slow  # integration: seconds, not the fast layer's unit checks
def test_evaluation_beats_both_baselines_on_the_demo(demo_library: Library) -> None:
    """The demo's 1,548 papers over 28-day feeds (the full corpus uses weekly feeds: `paperchat eval feed`)."""
    ev = evaluate_feed(demo_library, weeks=6, feed_days=28, seeds=2, ks=(1, 10), min_train=15, min_test=5)
    assert len(ev.researchers) >= 4
    for half in ("A", "B"):
        newest = ev.mean("newest first", 0, half)[1]
        model = ev.mean("for you", 10, half)[1]
        assert model > 2 * newest, ev.table()
    assert 0 < ev.fit_ms_1000 and "| for you | 10 |" in ev.table()


def test_the_feature_space_is_kept_until_the_features_change(demo_library: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rating click refits on the kept features; a change of the papers' topics or tags builds them again."""
    from paperchat import foryou

    built: list[int] = []
    real = foryou._build_space
    monkeypatch.setattr(foryou, "_build_space", lambda lib: built.append(1) or real(lib))
    lib = demo_library
    pid = next(iter(lib.catalog.iter_papers())).id
    foryou.for_you(lib)
    lib.catalog.rate(pid, 1)
    got = foryou.for_you(lib)
    assert built == [1] and got.positives >= 1
    lib.catalog.replace_all_topics({pid: ["rag"]})  # the rules' members change: the features do
    foryou.for_you(lib)
    assert built == [1, 1]
