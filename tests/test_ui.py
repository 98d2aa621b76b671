"""The app: handlers on a real small store, and the launched app driven through gradio_client."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from paperchat.library import Library
from paperchat.qa import QA
from paperchat.topics import momentum
from paperchat.ui import handlers as h

from .conftest import served_app


@pytest.fixture
def core(built_library: Library) -> h.Core:
    return h.Core(built_library.settings, built_library, QA(built_library))


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
    html, total, pages = h.topic_papers(core, "rag", 1, "")
    assert total == len(core.library.catalog.topic_papers("rag")) and html.count('class="pc-row"') == min(total, h.PAGE_SIZE)
    html, n, _ = h.topic_papers(core, "rag", 1, "Retrieval-Augmented Generation for Knowledge-Intensive")
    assert 1 <= n < total and "2005.11401" in html


def test_follow_save_persist(core: h.Core) -> None:
    assert h.toggle_follow(core, "rag") is True
    assert h.toggle_save(core, "2005.11401") is True
    lib2 = Library(core.settings, embedder=core.library.embedder)  # a restart reads the same SQLite
    assert lib2.catalog.followed() == ["rag"] and lib2.catalog.saved() == ["2005.11401"]
    assert "2005.11401" in h.lists_html(core)
    assert h.toggle_save(core, "2005.11401") is False


def test_paper_view_escapes_content(core: h.Core) -> None:
    core.library.catalog._conn.execute("UPDATE papers SET title='<img src=x onerror=alert(1)>' WHERE id='2004.04906'")
    html = h.paper_view(core, "2004.04906")
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "arxiv.org/abs/2004.04906" in html


def test_chat_stream_and_errors_in_words(core: h.Core) -> None:
    out = list(h.chat_stream(core, "How are negative passages chosen?", "paper", "2004.04906", []))
    msgs, sources = out[-1]
    assert msgs[-1]["role"] == "assistant" and "](#paper/2004.04906" in msgs[-1]["content"]
    assert "Sources" in sources and "support" in sources
    msgs, _ = list(h.chat_stream(core, "x", "paper", "9999.99999", []))[-1]
    assert "not in the library" in msgs[-1]["content"] and "Traceback" not in msgs[-1]["content"]


def test_upload_by_hash_and_type_check(core: h.Core, five_pdfs: list[Path], tmp_path: Path) -> None:
    pid, msg = h.upload_pdf(core, str(five_pdfs[2]))
    assert pid == "2302.07302" and "Already in the library" in msg  # same bytes: instant
    fake = tmp_path / "evil.pdf"
    fake.write_text("<html>not a pdf</html>")
    pid, msg = h.upload_pdf(core, str(fake))
    assert pid is None and "not a PDF" in msg or "HTML" in msg




def test_launched_app_through_gradio_client(built_library: Library, five_pdfs: list[Path]) -> None:
    from gradio_client import Client, handle_file

    with served_app(built_library) as (url, _core):
        client = Client(url, verbose=False)
        t = client.predict("How do retrieval-augmented models use retrieved documents?", "rag", api_name="/ask_topic")
        assert t["citations"] and all(c["paper_id"] in set(built_library.catalog.topic_papers("rag")) for c in t["citations"])
        p = client.predict("What is the retrieval granularity?", "2005.11401", api_name="/ask_paper")
        assert p["citations"] and {c["paper_id"] for c in p["citations"]} == {"2005.11401"}
        up = client.predict(handle_file(str(five_pdfs[3])), api_name="/upload_pdf")
        assert up["paper_id"] == "2305.18290"


def test_latest_report(tmp_path: Path) -> None:
    assert "No evaluation run yet" in h.latest_report(tmp_path)


def test_arxiv_download_offline_says_so(core: h.Core) -> None:
    pid = next(p for p in core.library.catalog.topic_papers("rag") if not core.library.catalog.get(p).pdf_path)
    got, msg = h.download_arxiv_pdf(core, pid)
    assert got is None and "offline" in msg and "upload" in msg  # the network guard refuses arxiv.org
    assert core.library.catalog.get(pid).pdf_path is None
    got, msg = h.download_arxiv_pdf(core, "2005.11401")  # PDF already ingested
    assert got == "2005.11401" and "already" in msg
