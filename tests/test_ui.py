"""The app: handlers on the demo corpus (hashing embedder, fast), and the launched app over the MiniLM store
driven through gradio_client (slow)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from paperchat.library import Library
from paperchat.qa import QA
from paperchat.topics import momentum
from paperchat.ui import handlers as h

from .conftest import served_app
from .corpus import PAPER_ID, PAPER_TITLE, write_paper


@pytest.fixture
def core(demo_library: Library) -> h.Core:
    """The app's core over the demo corpus and the four-page paper (hashing embedder)."""
    return h.Core(demo_library.settings, demo_library, QA(demo_library))


def test_topics_overview_and_momentum(core: h.Core) -> None:
    html = h.topics_overview(core)
    for t in core.library.topics.topics:
        assert t.name.replace("&", "&amp;") in html
    head = h.topic_header(core, "rag")
    m = head["momentum"]
    dates = core.library.catalog.topic_dates("rag")
    assert m.recent + m.previous <= len(dates) and head["total"] == len(dates)
    assert "papers in the last four weeks" in head["html"] or "paper in the last four weeks" in head["html"]
    assert "<svg" in head["html"]


def test_momentum_hand_computed() -> None:
    now = dt.date(2026, 6, 28)  # a Sunday; the recent window is the four weeks from Mon 2026-06-01
    topic = [dt.date(2026, 6, 2)] * 7 + [dt.date(2026, 5, 20)] * 5 + [dt.date(2026, 4, 1)] * 3
    weekly = {dt.date(2026, 6, 1) + dt.timedelta(weeks=i): 250 for i in range(4)} | {dt.date(2026, 5, 4): 100}
    m = momentum(topic, weekly, now=now)
    assert (m.recent, m.previous) == (7, 5)
    assert m.change_pct == pytest.approx(40.0)
    assert m.share_pct == pytest.approx(0.7)
    assert m.sentence().startswith("7 papers in the last four weeks, up 40% on the four weeks before, 0.7% of all new papers")
    assert "too few papers to call a trend" in m.sentence()


def test_topic_papers_paging_and_filter(core: h.Core) -> None:
    members = core.library.catalog.topic_papers("rag")
    html, total, pages = h.topic_papers(core, "rag", 1, "")
    assert total == len(members) > h.PAGE_SIZE and html.count('class="pc-row"') == h.PAGE_SIZE
    assert pages == -(-total // h.PAGE_SIZE)
    last, _, _ = h.topic_papers(core, "rag", pages, "")
    assert last.count('class="pc-row"') == total - (pages - 1) * h.PAGE_SIZE
    one = core.library.catalog.get(members[-1])
    assert one is not None
    html, n, _ = h.topic_papers(core, "rag", 1, one.title)
    assert 1 <= n < total and one.id in html


def test_follow_save_persist(core: h.Core) -> None:
    assert h.toggle_follow(core, "rag") is True
    assert h.toggle_save(core, PAPER_ID) is True
    lib2 = Library(core.settings, embedder=core.library.embedder)  # a restart reads the same SQLite
    assert lib2.catalog.followed() == ["rag"] and lib2.catalog.saved() == [PAPER_ID]
    lib2.close()
    assert PAPER_ID in h.lists_html(core)
    assert h.toggle_save(core, PAPER_ID) is False and h.toggle_follow(core, "rag") is False
    assert core.library.catalog.saved() == [] and core.library.catalog.followed() == []


def test_paper_view_escapes_content(core: h.Core) -> None:
    core.library.catalog._conn.execute("UPDATE papers SET title='<img src=x onerror=alert(1)>' WHERE id=?", (PAPER_ID,))
    html = h.paper_view(core, PAPER_ID)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert f"arxiv.org/abs/{PAPER_ID}" in html


def test_chat_stream_and_errors_in_words(core: h.Core) -> None:
    out = list(h.chat_stream(core, "How are negative passages chosen when training the encoders?", "paper", PAPER_ID, []))
    assert len(out) > 2  # streamed: pieces before the final message
    msgs, sources = out[-1]
    assert msgs[-1]["role"] == "assistant" and f"](#paper/{PAPER_ID}" in msgs[-1]["content"] and "BM25" in msgs[-1]["content"]
    assert "Sources" in sources and "support" in sources
    msgs, _ = list(h.chat_stream(core, "x", "paper", "9999.99999", []))[-1]
    assert "not in the library" in msgs[-1]["content"] and "Traceback" not in msgs[-1]["content"]
    msgs, sources = list(h.chat_stream(core, "Which papers study knowledge conflicts in retrieval-augmented generation?", "topic", "rag", []))[-1]
    topic = set(core.library.catalog.topic_papers("rag"))
    cited = {m.split(" ", 1)[0].split(")")[0] for m in msgs[-1]["content"].split("](#paper/")[1:]}  # (the link's title is its quote)
    # links to papers of the library, the topic's among them (the topic is a prior: others may rank too)
    assert cited and set(core.library.catalog.get_many(cited)) == cited and cited & topic


def test_tags_in_rows_and_paper_view_open_the_discovered_topic(core: h.Core) -> None:
    """Part 3: every row of "Latest papers" and the paper view show the paper's fine-grained tags as links to
    the discovered topic's page, which has momentum, its tagged papers and a chat scoped to them."""
    import re

    from paperchat.discovery.clusters import DiscoverySettings, discover
    from paperchat.types import Scope

    cat = core.library.catalog
    discover(core.library, DiscoverySettings(n_topics=8, min_similarity=0.3))  # hashing vectors sit far from any centroid
    html, _, _ = h.topic_papers(core, "rag")
    rows = re.findall(r'<div class="pc-row" data-paper="([^"]+)".*?</div>\n</div>', html, re.S)
    tags = core.paper_tags(rows)
    assert len(rows) == h.PAGE_SIZE and any(tags.get(r) for r in rows), tags  # (hashing vectors: few pass the tag threshold)
    labels = {t.slug: t.label for t in cat.discovered()}
    for row in rows:  # each row shows exactly its tags, best first
        block = html.split(f'data-paper="{row}"', 1)[1].split('<div class="pc-row"', 1)[0]
        shown = re.findall(r'<a class="pc-tag pc-fine" href="#topic/([^"]+)" data-topic="[^"]+">([^<]+)</a>', block)
        assert shown == [(s, labels[s].replace("&", "&amp;")) for s, _ in cat.tags_of([row]).get(row, [])], (row, shown)
    pid = next(r for r in rows if tags.get(r))
    view = h.paper_view(core, pid)
    assert all(f'href="#topic/{s}" data-topic="{s}"' in view for s, _ in tags[pid])
    # the tag's page
    slug = tags[pid][0][0]
    members = cat.tagged_papers(slug)
    head = h.topic_header(core, slug)
    assert head["total"] == len(members) and f"<h2>{labels[slug]}</h2>".replace("&", "&amp;") in head["html"]
    dates = [p.date for p in cat.get_many(members).values() if p.date]
    assert head["momentum"] == momentum(dates, core.library.weekly_counts())
    listing, total, _ = h.topic_papers(core, slug)
    assert total == len(members) and f'data-paper="{members[0]}"' in listing
    assert h.make_scope(core, "topic", slug) == Scope.for_discovered(slug)
    *_, (msgs, sources) = h.chat_stream(core, "Which methods do these papers propose?", "topic", slug, [])
    linked = set(re.findall(r'href="#paper/([^"/]+)', sources))
    assert linked and linked <= set(members), msgs[-1]["content"]


def test_upload_by_hash_and_type_check(core: h.Core, tmp_path: Path) -> None:
    pid, msg = h.upload_pdf(core, str(write_paper(tmp_path / "again.pdf")))
    assert pid == PAPER_ID and msg == f"Already in the library: {PAPER_TITLE}"  # same bytes: instant
    fake = tmp_path / "evil.pdf"
    fake.write_text("<html>not a pdf</html>")
    pid, msg = h.upload_pdf(core, str(fake))
    assert pid is None and "the file is an HTML page (no %PDF header)" in msg
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"GIF89a not a PDF at all")
    pid, msg = h.upload_pdf(core, str(junk))
    assert pid is None and "the file is not a PDF (no %PDF header)" in msg
    assert not core.settings.uploads_dir.exists() or all(p.read_bytes().startswith(b"%PDF") for p in core.settings.uploads_dir.iterdir())



def test_launched_app_through_gradio_client(built_library: Library, five_pdfs: list[Path]) -> None:
    from gradio_client import Client, handle_file

    with served_app(built_library) as (url, _core):
        client = Client(url, verbose=False)
        t = client.predict("How do retrieval-augmented models use retrieved documents?", "rag", api_name="/ask_topic")
        cited = {c["paper_id"] for c in t["citations"]}
        assert cited and cited <= {s["paper_id"] for s in t["sources"]} and cited & set(built_library.catalog.topic_papers("rag"))
        p = client.predict("What is the retrieval granularity?", "2005.11401", api_name="/ask_paper")
        assert p["citations"] and {c["paper_id"] for c in p["citations"]} == {"2005.11401"}
        # each citation of a PDF page comes with its highlight boxes (as `paperchat ask --json`)
        assert all(c["highlight"]["placed"] and c["highlight"]["boxes"] for c in p["citations"] if c["page"])
        up = client.predict(handle_file(str(five_pdfs[3])), api_name="/upload_pdf")
        assert up["paper_id"] == "2305.18290"


def test_latest_report(tmp_path: Path) -> None:
    assert "No evaluation run yet" in h.latest_report(tmp_path)


def test_arxiv_download_offline_says_so(core: h.Core) -> None:
    pid = next(p for p in core.library.catalog.topic_papers("rag") if not core.library.catalog.get(p).pdf_path)  # type: ignore[union-attr]
    got, msg = h.download_arxiv_pdf(core, pid)
    assert got is None and "offline" in msg and "upload" in msg  # the network guard refuses arxiv.org
    assert core.library.catalog.get(pid).pdf_path is None  # type: ignore[union-attr]
    got, msg = h.download_arxiv_pdf(core, PAPER_ID)  # PDF already ingested
    assert got == PAPER_ID and "already" in msg

