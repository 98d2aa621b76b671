"""Topic discovery on the bundled demo corpus (real vectors, real k-means, no MiniLM), tags, the ingest hook,
trending with its small-count guard, and an older catalogue opening with the new tables."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from paperchat.assistant import Assistant
from paperchat.catalog import Catalog
from paperchat.cli import main
from paperchat.demo import DEMO_DIR, ensure_demo, load_vectors
from paperchat.discovery.clusters import (
    DiscoverySettings,
    choose_tags,
    discover,
    last_run,
    match_slugs,
    tag_ingested,
    tag_papers,
)
from paperchat.discovery.labels import LabelSettings, _overlaps, holds_label, label_clusters, label_words, phrases
from paperchat.discovery.trending import rise_z, trending
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.types import Paper

from .conftest import make_settings

K = 12


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus ingested once from its shipped vectors (no model is loaded)."""
    path = tmp_path_factory.mktemp("demo") / "store"
    lib = Library(make_settings(path))
    rep = ensure_demo(lib, show_progress=False)
    assert rep is not None and rep.papers > 1000
    lib.close()
    return path


@pytest.fixture(scope="module")
def discovered_dir(demo_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store after one discovery run with K topics (seed 0)."""
    path = tmp_path_factory.mktemp("discovered") / "store"
    shutil.copytree(demo_dir, path)
    lib = Library(make_settings(path))
    discover(lib, DiscoverySettings(n_topics=K))
    lib.close()
    return path


def _copy(src: Path, tmp_path: Path) -> Iterator[Library]:
    path = tmp_path / "store"
    shutil.copytree(src, path)
    lib = Library(make_settings(path))
    yield lib
    lib.close()


@pytest.fixture
def lib(demo_dir: Path, tmp_path: Path) -> Iterator[Library]:
    """A private copy of the demo store, so each test's discovery starts from the same state."""
    yield from _copy(demo_dir, tmp_path)


@pytest.fixture
def dlib(discovered_dir: Path, tmp_path: Path) -> Iterator[Library]:
    """A private copy of the discovered demo store."""
    yield from _copy(discovered_dir, tmp_path)


@pytest.mark.slow  # a discovery run of its own (the fast tests share the module's one run)
def test_discover_labels_nesting_and_run_record(lib: Library) -> None:
    rep = discover(lib, DiscoverySettings(n_topics=K))
    topics = lib.catalog.discovered()
    assert 8 <= len(topics) <= K and len(topics) == len(rep.topics)
    labels = [t.label for t in topics]
    assert all(label.strip() for label in labels) and len({label.lower() for label in labels}) == len(labels)
    # a topic's size is its core (papers near its centroid); the periphery is no topic's member
    primary = lib.catalog.primary_members()
    core = sum(len(v) for v in primary.values())
    assert sum(t.size for t in topics) == core and core < rep.papers == lib.catalog.count()
    assert all(t.size == len(primary.get(t.slug, ())) for t in topics)  # a size counts the papers it tags first
    assert all(np.isclose(np.linalg.norm(t.centroid), 1.0, atol=1e-4) for t in topics)
    hand = {t.slug for t in lib.topics.topics}
    assert not hand & {t.slug for t in topics}  # discovered slugs never shadow hand-written ones
    nested = [t for t in topics if t.parent]
    assert len(nested) >= len(topics) // 2 and all(t.parent in hand for t in nested)
    run = last_run(lib)
    assert run is not None and run["papers"] == rep.papers and run["settings"]["n_topics"] == K
    assert len(run["corpus_hash"]) == 16 and run["date"][:2] == "20"


@pytest.mark.slow  # three discovery runs
def test_rerun_keeps_slugs(lib: Library) -> None:
    first = {t.slug: t.label for t in discover(lib, DiscoverySettings(n_topics=K)).topics}
    again = discover(lib, DiscoverySettings(n_topics=K))
    assert {t.slug: t.label for t in again.topics} == first and again.kept_slugs == len(first)
    other = discover(lib, DiscoverySettings(n_topics=K, seed=7))  # another seed: most topics survive, by shared papers
    assert len(set(first) & {t.slug for t in other.topics}) >= len(first) // 2


def test_tags_per_paper(dlib: Library) -> None:
    lib = dlib
    ids = [p.id for p in lib.catalog.iter_papers()]
    tags = lib.catalog.tags_of(ids)
    counts = [len(tags.get(i, [])) for i in ids]
    assert all(0 <= c <= 4 for c in counts)
    # a paper far from every centroid (min_similarity) has none: the periphery is untagged
    tagged = [c for c in counts if c]
    assert 0.5 <= len(tagged) / len(counts) < 1.0 and np.mean(tagged) >= 1.5
    primary = lib.catalog.primary_members()
    assert sum(len(v) for v in primary.values()) == sum(1 for c in counts if c)
    for pid in ids[:50]:
        scores = [s for _, s in tags.get(pid, [])]
        assert scores[1:] == sorted(scores[1:], reverse=True)  # after the own topic, closest first
    # every tag is said by its paper (a word of the label in its title or abstract) or is very close
    label = {t.slug: t.label for t in lib.catalog.discovered()}
    papers = lib.catalog.get_many(ids)
    s = DiscoverySettings()
    unsaid = 0
    for pid, ts in tags.items():
        text = f"{papers[pid].title}\n{papers[pid].abstract}"
        for slug, score in ts:
            if not holds_label(label_words(label[slug]), text):
                assert score >= s.evidence_above, (pid, label[slug], score)
                unsaid += 1
    assert unsaid < sum(len(ts) for ts in tags.values()) * 0.2


def test_label_words_and_evidence() -> None:
    assert label_words("Speech Recognition") == ("speech", "recognition")
    assert label_words("Search and Evolution") == ("search", "evolution")
    assert holds_label(label_words("Failures"), "Agents fail silently: a failure taxonomy")
    assert holds_label(label_words("Speech Recognition"), "recognizing spoken words")
    assert not holds_label(label_words("Speech Recognition"), "Automated speaking assessment")
    assert holds_label(label_words("RAG"), "a RAG pipeline") and not holds_label(label_words("RAG"), "ragged")
    assert holds_label((), "anything") and not holds_label(label_words("Failures"), "Why agents failed")  # "failur": five letters "failu"
    sims = np.array([[0.75, 0.74], [0.85, 0.74]])
    says = lambda r, c: c == 1  # noqa: E731 - only topic b is said by either paper
    out = choose_tags(sims, ["a", "b"], DiscoverySettings(min_similarity=0.7, evidence_above=0.8), says=says)
    assert [t for t, _ in out[0]] == ["b"] and [t for t, _ in out[1]] == ["a", "b"]  # 0.85 >= 0.8: a stays


def test_choose_tags_thresholds() -> None:
    s = DiscoverySettings(min_similarity=0.5, tag_margin=0.1)
    sims = np.array([[0.9, 0.85, 0.82, 0.6, 0.1], [0.4, 0.3, 0.2, 0.1, 0.0], [0.7, 0.55, 0.52, 0.51, 0.0]])
    out = choose_tags(sims, list("abcde"), s)
    assert [t for t, _ in out[0]] == ["a", "b", "c"]  # d is far below the best: not padded in
    assert out[1] == []  # nothing close enough: zero tags
    assert [t for t, _ in out[2]] == ["a", "b"]
    own = choose_tags(sims, list("abcde"), s, own=np.array([3, 0, 0]))
    assert own[0][0][0] == "d"
    # a topic skipped for not being said does not count toward the 3rd-tag margin rule
    said = choose_tags(np.array([[0.79, 0.76, 0.72]]), list("abc"), DiscoverySettings(min_similarity=0.7, tag_margin=0.05), says=lambda r, c: c != 1)
    assert [t for t, _ in said[0]] == ["a", "c"]


def test_match_slugs_by_shared_papers() -> None:
    old = {"kv-cache": {"1", "2", "3", "4"}, "gone": {"9"}}
    slugs, kept = match_slugs([{"1", "2", "3", "5"}, {"7", "8"}], ["KV Cache Eviction", "Gone"], old, {"rag"}, 0.3)
    assert slugs == ["kv-cache", "gone-2"] and kept == 1  # a retired slug is not given to another topic


def test_ingest_hook_tags_new_papers(dlib: Library) -> None:
    lib = dlib
    pid = next(iter(lib.catalog.iter_papers())).id
    before = lib.catalog.tags_of([pid])[pid]
    core = Assistant(lib.settings, library=lib)  # tagging is the facade's step after any ingest
    assert core.remove_paper(pid) > 0 and lib.catalog.tags_of([pid]) == {}
    record = next(r for r in read_records(DEMO_DIR / "abstracts.jsonl.gz") if isinstance(r, Paper) and r.id == pid)
    core.ingest_papers([record])
    after = lib.catalog.tags_of([pid])[pid]
    assert 1 <= len(after) <= 4 and {s for s, _ in after} & {s for s, _ in before}
    assert tag_papers(lib, ["no-such-paper"]) == 0


def test_labels_from_phrases() -> None:
    keys = [k for k, _ in phrases("We propose a novel method for speculative decoding of large language models.")]
    assert "speculative decoding" in keys and not any(k.startswith(("we ", "novel", "method")) for k in keys)
    titles = ["Speculative Decoding with Drafts", "Faster Speculative Decoding", "KV Cache Eviction", "KV Cache Quantization"]
    out = label_clusters(titles, [""] * 4, np.array([0, 0, 1, 1]), 2, LabelSettings(min_df=1))
    assert out[0][0] == "Speculative Decoding" and out[1][0] == "KV Cache"
    # a label's two phrases never say one thing twice: a shared word, or a phrase and its acronym
    assert _overlaps("QA", "Question Answering") and _overlaps("Aspect Sentiment", "Sentiment Classification")
    assert _overlaps("LLMs", "Large Language Models") and not _overlaps("Speech", "GPU")


def test_trending_ranks_with_small_count_guard(dlib: Library) -> None:
    lib = dlib
    trends = trending(lib, weeks=4, min_count=40)
    assert len(trends) == K + len(lib.topics.topics)
    ranked = [t for t in trends if t.ranked]
    assert ranked and len(ranked) < len(trends)  # some topics are too small to rank at this bar
    assert trends[: len(ranked)] == ranked and [t.z for t in ranked] == sorted((t.z for t in ranked), reverse=True)
    assert all(t.momentum.recent + t.momentum.previous < 40 and t.z == 0 for t in trends[len(ranked) :])
    assert {t.membership for t in trends} == {"rules", "tags"}
    assert rise_z(10, 10, 100, 100) == 0 and rise_z(40, 10, 100, 100) > 3
    assert abs(rise_z(20, 10, 200, 100)) < 1e-9  # the corpus doubled too: no rise


def test_cli_discover_trending_show(lib: Library, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(lib.settings.data_dir)
    lib.close()
    assert main(["--data-dir", d, "topics", "discover", "--topics", str(K)]) == 0
    out = capsys.readouterr().out
    assert "topics over 1548 papers" in out.splitlines()[0]
    assert main(["--data-dir", d, "topics", "--trending", "--weeks", "4"]) == 0
    assert capsys.readouterr().out.startswith("momentum: last 4 weeks")
    slug = Library(make_settings(Path(d))).catalog.discovered()[0].slug
    assert main(["--data-dir", d, "topics", "show", slug]) == 0
    assert "counted by tags" in capsys.readouterr().out
    assert main(["--data-dir", d, "topics", "show", "no-such-topic"]) != 0


def test_old_catalogue_gains_tables(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """CREATE TABLE papers (id TEXT PRIMARY KEY, title TEXT NOT NULL, authors TEXT NOT NULL, abstract TEXT NOT NULL,
           date TEXT, categories TEXT NOT NULL, url TEXT NOT NULL, pdf_path TEXT, pdf_sha256 TEXT, abstract_hash TEXT, pdf_hash TEXT);
           INSERT INTO papers VALUES ('1', 't', '[]', 'a', '2026-01-01', '[]', '', NULL, NULL, 'h', NULL);"""
    )
    conn.commit()
    conn.close()
    cat = Catalog(path)
    assert cat.count() == 1 and not cat.has_discovered() and cat.tags_of(["1"]) == {}
    cat.set_tags({"1": [("x", 0.5)]})
    assert cat.tags_of(["1"]) == {"1": [("x", 0.5)]}
    cat.close()


def test_learned_membership_from_neighbours(lib: Library, capsys: pytest.CaptureFixture[str]) -> None:
    """Rules are seeds; a paper outside them joins a topic when most of its nearest papers are rule members.
    Checked against a direct count over the demo vectors; `learn = false` topics gain nothing; momentum and
    the topic page say which membership they count."""
    from paperchat.discovery.clusters import abstract_vectors
    from paperchat.discovery.membership import MembershipSettings, learn_membership, neighbour_shares

    ids, vectors = abstract_vectors(lib)
    rules = lib.catalog.rule_members()
    slug = max(rules, key=lambda s: len(rules[s]))
    member = np.array([[pid in rules[slug]] for pid in ids], dtype=np.float32)
    shares = neighbour_shares(vectors, member, MembershipSettings(neighbours=5, batch=300))
    x = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for i in (0, 17, len(ids) - 1):  # the batched product and a plain one agree
        sims = x @ x[i]
        sims[i] = -2
        near = np.argsort(-sims, kind="stable")[:5]
        assert abs(shares[i, 0] - member[near, 0].mean()) < 1e-6
    rep = learn_membership(lib, MembershipSettings(neighbours=10, min_share=0.7))
    learned = lib.catalog.learned_members()
    assert rep.rules[slug] == len(rules[slug]) and sum(rep.gained.values()) == sum(len(v) for v in learned.values()) > 0
    assert all(not (papers & rules.get(s, set())) for s, papers in learned.items())  # only papers the rules miss
    off = [t.slug for t in lib.topics.topics if not t.learn]
    assert off and not any(learned.get(s) for s in off)
    on = max(learned, key=lambda s: len(learned[s]))
    trends = {t.slug: t for t in trending(lib)}
    assert trends[on].membership == "rules+neighbours" and {trends[s].membership for s in off} == {"rules"}
    d = str(lib.settings.data_dir)
    lib.close()
    assert main(["--data-dir", d, "topics", "show", on]) == 0
    assert f"and {len(learned[on])} papers whose nearest neighbours" in capsys.readouterr().out


@pytest.mark.slow  # integration: seconds, not the fast layer's unit checks
def test_repair_restores_discovered_topics_tags_and_learned_members(dlib: Library) -> None:
    """A damaged catalogue loses nothing discovery or `topics learn` made: `doctor --repair` puts the topics,
    every paper's tags (own cluster first, as discovery chose them) and the learned members back from
    discovered_topics.json, and ingesting the source again keeps those tags."""
    from paperchat import doctor
    from paperchat.discovery.membership import MembershipSettings, learn_membership

    lib = dlib
    learn_membership(lib, MembershipSettings(neighbours=10, min_share=0.7))
    ids = [p.id for p in lib.catalog.iter_papers()]
    topics = [(t.slug, t.label, t.parent, t.size, t.terms) for t in lib.catalog.discovered()]
    tags, learned, run = lib.catalog.tags_of(ids), lib.catalog.learned_members(), last_run(lib)
    assert topics and len(tags) > len(ids) // 2 and sum(len(v) for v in learned.values()) > 0
    data = lib.settings.data_dir
    lib.close()
    body = (data / "catalog.sqlite").read_bytes()
    for side in ("catalog.sqlite-wal", "catalog.sqlite-shm"):
        (data / side).unlink(missing_ok=True)
    (data / "catalog.sqlite").write_bytes(b"\x00garbage\xff" * 64 + body[len(body) // 2 :])
    rep = doctor.repair(make_settings(data))
    text = " | ".join(rep.actions)
    assert f"restored {len(topics)} discovered topics, the tags of {len(tags)} papers" in text, text
    assert not any("topics discover" in t for t in rep.todo), rep.todo
    lib = Library(make_settings(data))
    try:
        assert [(t.slug, t.label, t.parent, t.size, t.terms) for t in lib.catalog.discovered()] == topics
        got = lib.catalog.tags_of(ids)
        assert {p: [s for s, _ in ts] for p, ts in got.items()} == {p: [s for s, _ in ts] for p, ts in tags.items()}
        assert lib.catalog.learned_members() == learned and last_run(lib) == run
        # ingesting the demo records again (rows rebuilt from the store lack authors) keeps every tag
        Ingester(lib, vector_cache=load_vectors(DEMO_DIR / "vectors.npz", lib.embedder.id)).ingest_records(
            read_records(DEMO_DIR / "abstracts.jsonl.gz")
        )
        assert lib.catalog.tags_of(ids) == got
    finally:
        lib.close()


def test_changed_abstract_is_tagged_again_and_old_topics_get_a_mirror(dlib: Library) -> None:
    """Ingesting a paper again unchanged keeps its tags; a changed abstract is tagged again from its new vector.
    A catalogue whose topics were discovered before the mirror existed gets one when it is opened."""
    from paperchat.catalog.topics import DISCOVERY_MIRROR

    lib = dlib
    topics = {t.slug: t for t in lib.catalog.discovered()}
    pid, tags = next((p, ts) for p, ts in lib.catalog.tags_of([p.id for p in lib.catalog.iter_papers()]).items() if len(ts) >= 2)
    other = next(t for s, t in topics.items() if s not in {x for x, _ in tags})
    paper = lib.catalog.get(pid)
    assert paper is not None
    ing = Ingester(lib, vector_cache=load_vectors(DEMO_DIR / "vectors.npz", lib.embedder.id))

    def ingest(p: Paper) -> None:  # as the facade does: the ingest, then its tagging step
        rep = ing.ingest_records([p])
        tag_ingested(lib, rep.paper_ids, rep.changed)

    ingest(paper)
    assert lib.catalog.tags_of([pid])[pid] == tags
    # the new abstract is the other topic's own label text, embedded by the store's embedder (not in the cache)
    changed = Paper(id=pid, title=other.label, abstract=f"{other.label}. " + "; ".join(other.terms), date=paper.date, url=paper.url)
    ingest(changed)
    after = lib.catalog.tags_of([pid]).get(pid, [])
    assert [s for s, _ in after] != [s for s, _ in tags]
    data = lib.settings.data_dir
    lib.close()
    (data / DISCOVERY_MIRROR).unlink()
    Library(make_settings(data)).close()
    assert (data / DISCOVERY_MIRROR).exists()


def test_topic_page_counts_in_sql_and_discovered_cache_follows_other_writers(dlib: Library) -> None:
    """A discovered topic's page counts dates and related topics in SQL: the same as loading its papers. The
    catalogue keeps its discovered topics between calls, and sees another process's rewrite at once."""
    from collections import Counter

    cat = dlib.catalog
    for t in cat.discovered():
        ids = cat.tagged_papers(t.slug)
        papers = cat.get_many(ids)
        shared = Counter(s for p in papers.values() for s in p.topics)
        shared.update(s for tags in cat.tags_of(ids).values() for s, _ in tags if s != t.slug)
        dates, got = cat.tagged_overview(t.slug)
        assert sorted(dates) == sorted(p.date for p in papers.values() if p.date) and got == dict(shared)
    assert cat.discovered() and cat.discovered() == cat.discovered()
    other = Catalog(cat.path)  # another connection, as another process would hold
    other.replace_discovered([], {}, {"settings": {}})
    other.close()
    assert cat.discovered() == []


@pytest.mark.slow  # integration: seconds, not the fast layer's unit checks
def test_first_start_loads_the_demo_and_discovers_topics(tmp_path: Path) -> None:
    """Round three: README command 1 on an empty folder showed only the hand-written topics; the first start
    now discovers the fine-grained ones (over the shipped MiniLM vectors), and a second start neither re-ingests nor re-discovers."""
    from paperchat.assistant import Assistant
    from paperchat.ui.serving import first_start

    core = Assistant(make_settings(tmp_path / "store"))  # the demo's shipped vectors: no model is loaded
    said: list[str] = []
    first_start(core, said.append)
    assert any(s.startswith("demo corpus:") for s in said) and any(s.startswith("topics discovered:") for s in said), said
    found = core.discovered_topics()
    assert len(found) >= 5
    said.clear()
    first_start(core, said.append)
    assert said == [] and core.discovered_topics() == found
