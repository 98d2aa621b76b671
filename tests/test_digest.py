"""`paperchat digest`: papers first ingested since the last visit, per followed topic (hand-written by rules,
discovered by tags); the last visit moves unless peeking; --since looks at another window; the app's
Following tab shows the same (peeking)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from paperchat import doctor
from paperchat.assistant import Assistant
from paperchat.catalog import DiscoveredTopic
from paperchat.cli import main
from paperchat.settings import Settings

FIX = Path(__file__).parent / "fixtures" / "arxiv"
SEED_RAG = "2606.23695"  # seed.jsonl's paper in the hand-written topic 'rag'
PAGE1_MT = "2606.30790"  # page1.xml's paper in 'multilingual-mt'


@pytest.fixture
def assistant(fast_settings: Settings) -> Iterator[Assistant]:
    a = Assistant(fast_settings)
    assert a.ingest_record_files([FIX / "seed.jsonl"], show_progress=False).papers == 3
    a.follow("rag")
    a.follow("multilingual-mt")
    yield a
    a.close()


def new_ids(d: object) -> dict[str, list[str]]:
    return {t.slug: [p.id for p in t.papers] for t in d.topics}  # type: ignore[attr-defined]


def test_digest_lists_what_was_ingested_since_the_last_visit_and_advances_it(assistant: Assistant) -> None:
    first = assistant.digest()
    assert first.basis == "first visit: the last 7 days" and first.advanced
    assert new_ids(first) == {"rag": [SEED_RAG], "multilingual-mt": []} and first.new_in_store == 3
    assert first.headline().startswith("1 new paper in 1 of 2 followed topics since ")
    again = assistant.digest(peek=True)
    assert again.basis == "last visit" and again.total == 0 and again.since == first.until

    assistant.ingest_arxiv(file=FIX / "page1.xml")  # four papers arrive, as `paperchat update` brings them
    peek = assistant.digest(peek=True)
    assert new_ids(peek) == {"rag": [], "multilingual-mt": [PAGE1_MT]} and peek.new_in_store == 4 and not peek.advanced
    seen = assistant.digest()
    assert new_ids(seen) == new_ids(peek)
    assert assistant.digest().total == 0  # advanced past them

    assistant.ingest_record_files([FIX / "seed.jsonl"], show_progress=False)  # re-ingest: not new again
    assert assistant.digest(peek=True).new_in_store == 0

    today = dt.datetime.now(dt.UTC).date()
    window = assistant.digest(since=today)  # another window: everything ingested today; the last visit stays
    assert new_ids(window) == {"rag": [SEED_RAG], "multilingual-mt": [PAGE1_MT]} and window.basis == "given" and not window.advanced
    assert assistant.digest(peek=True).total == 0


def test_a_followed_discovered_topic_counts_by_tags(assistant: Assistant) -> None:
    cat = assistant.library.catalog
    topic = DiscoveredTopic("agent-audits", "agent audits", None, 0.0, 1, ("audit",), np.zeros(assistant.library.embedder.dim, dtype=np.float32))
    cat.replace_discovered([topic], {}, {"test": True})
    assistant.follow("agent-audits")
    assistant.digest()
    assistant.ingest_arxiv(file=FIX / "page1.xml")
    cat.set_tags({"2606.30801": [("agent-audits", 0.8)]})
    d = assistant.digest(peek=True)
    assert new_ids(d)["agent-audits"] == ["2606.30801"] and d.topics[-1].kind == "discovered"
    assert d.headline().startswith("2 new papers in 2 of 3 followed topics")


def test_the_following_tab_shows_the_digest_without_moving_the_last_visit(assistant: Assistant) -> None:
    from paperchat.ui import handlers as h

    assistant.digest()
    assistant.ingest_arxiv(file=FIX / "page1.xml")
    html = h.lists_html(assistant)  # type: ignore[arg-type]
    assert "New since your last visit" in html and "Indi-RomCoM" in html and 'href="#topic/multilingual-mt"' in html
    assert assistant.digest(peek=True).total == 1  # the tab only peeked


def test_mark_as_seen_moves_the_last_visit_like_the_command(assistant: Assistant) -> None:
    """The Following tab's "Mark as seen": the new papers leave the tab, the last visit moves to the moment it was
    pressed (what `paperchat digest` does), and a paper ingested afterwards is new again."""
    from paperchat.digest import LAST_VISIT_KEY
    from paperchat.ui import handlers as h

    assistant.digest()
    assistant.ingest_arxiv(file=FIX / "page1.xml")
    before = assistant.library.catalog.get_meta(LAST_VISIT_KEY)
    html = h.lists_html(assistant)  # type: ignore[arg-type]
    assert f'data-paper="{PAGE1_MT}"' in html and "1 new paper in 1 of 2 followed topics" in html
    assert h.lists_html(assistant) == html  # type: ignore[arg-type]  # showing the tab peeks
    after = h.mark_seen(assistant)  # type: ignore[arg-type]
    moved = assistant.library.catalog.get_meta(LAST_VISIT_KEY)
    assert before and moved and moved > before
    assert f'data-paper="{PAGE1_MT}"' not in after and "0 new papers in 0 of 2 followed topics" in after
    d = assistant.digest(peek=True)
    assert d.total == 0 and d.since.isoformat() == moved and d.basis == "last visit"
    assistant.ingest_record_files([FIX / "seed.jsonl"], show_progress=False)  # known papers: still nothing new
    assert "0 new papers" in h.lists_html(assistant)  # type: ignore[arg-type]


def test_a_lost_catalogue_gives_back_the_digest_from_the_mirror(assistant: Assistant) -> None:
    """The last visit and the ingest times since it are mirrored (ingest times when the catalogue closes, or
    30 s later): a catalogue lost and made again lists the same new papers since the same last visit."""
    from paperchat.catalog.feed import LAST_VISIT_KEY

    assistant.digest()
    assistant.ingest_arxiv(file=FIX / "page1.xml")
    want = (new_ids(assistant.digest(peek=True)), assistant.library.catalog.get_meta(LAST_VISIT_KEY))
    settings = assistant.settings
    assistant.close()
    mirror = json.loads((settings.data_dir / "user_lists.json").read_text())
    assert mirror["last_visit"] == want[1] and len(mirror["arrivals"]) == 4
    for name in ("catalog.sqlite", "catalog.sqlite-wal", "catalog.sqlite-shm"):
        (settings.data_dir / name).unlink(missing_ok=True)
    report = doctor.repair(settings)  # a new catalogue took the mirror back on open; rows refilled from the store
    assert "refilled 7 paper rows" in " | ".join(report.actions), report.actions
    again = Assistant(settings)
    again.ingest_record_files([FIX / "seed.jsonl"], show_progress=False)  # as the report asks: authors back,
    again.ingest_arxiv(file=FIX / "page1.xml")  # and the rebuilt rows do not turn new
    assert (new_ids(again.digest(peek=True)), again.library.catalog.get_meta(LAST_VISIT_KEY)) == want
    again.close()


def test_digest_and_follow_commands(assistant: Assistant, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = assistant.settings.data_dir
    assistant.close()
    monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(data))
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "hashing")
    assert main(["digest"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 new paper in 1 of 2 followed topics") and f"{SEED_RAG}" in out and "## Retrieval" in out, out
    assert main(["digest", "--json", "--peek"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["total"] == 0 and got["basis"] == "last visit" and not got["advanced"]
    assert main(["follow", "no-such-topic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["paperchat: error: no topic 'no-such-topic' (list them with `paperchat topics`, `paperchat topics --trending` or `paperchat import --list`)"]
    assert main(["follow", "rag", "--off"]) == 0 and "unfollowed rag" in capsys.readouterr().out
    assert main(["digest", "--since", "yesterday"]) == 2
    assert "'yesterday' is not a date (use YYYY-MM-DD)" in capsys.readouterr().err
