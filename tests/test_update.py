"""`paperchat update` end to end against a local arXiv API: a threading HTTP server on 127.0.0.1 serving saved
Atom pages (tests/fixtures/arxiv: real titles, abstracts, ids and dates of the shared abstracts, arXiv's
response shape). Paging stops at an older entry; a connection cut midway stores nothing of its page and a rerun
completes; a page that is not XML, an empty feed and a closed port are one-line errors or empty reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from paperchat.assistant import Assistant
from paperchat.cli import main
from paperchat.errors import NetworkError, SourceError
from paperchat.ports import free_port
from paperchat.settings import Settings

from .conftest import ROOT, hashing_settings

FIX = Path(__file__).parent / "fixtures" / "arxiv"
PAGES = {0: "page1.xml", 4: "page2.xml", 9: "page3.xml"}


def ids_of(name: str) -> list[str]:
    import re

    return re.findall(r"<id>http://arxiv.org/abs/([^<]+?)v\d+</id>", (FIX / name).read_text())


@dataclass
class Api:
    """What the local API serves and what it was asked: `mode[start]` overrides a page ('cut', 'html',
    'empty', '503'); `fail_once` serves a 503 once per listed start."""

    url: str
    mode: dict[int, str] = field(default_factory=dict)
    fail_once: set[int] = field(default_factory=set)
    requests: list[dict[str, str]] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)


@pytest.fixture
def api() -> Iterator[Api]:
    port = free_port()
    state = Api(f"http://127.0.0.1:{port}/api/query")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            q = {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).items()}
            state.requests.append(q)
            state.agents.append(self.headers.get("User-Agent", ""))
            start = int(q.get("start", "0"))
            mode = state.mode.get(start, "")
            if start in state.fail_once:
                state.fail_once.discard(start)
                mode = "503"
            if mode == "503":
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode == "redirect":  # somewhere else entirely
                self.send_response(302)
                self.send_header("Location", "http://203.0.113.9/api/query")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode == "trickle":  # a header line every 0.5 s, never the body (each read is inside the socket timeout)
                self.send_response(200)
                try:
                    for i in range(40):
                        self.send_header(f"X-Slow-{i}", "x")
                        self.wfile.write(b"")
                        self.flush_headers()
                        time.sleep(0.5)
                except OSError:
                    pass
                return
            body = (FIX / ("empty.xml" if mode == "empty" else PAGES.get(start, "empty.xml"))).read_bytes()
            if mode == "flood":  # a server that ignores max_results: page 1 three times over (15 entries)
                text = body.decode()
                head, _, rest = text.partition("<entry>")
                entries = "<entry>" + rest.rpartition("</feed>")[0]
                body = (head + entries.replace("<entry>", "<entry>", -1) + "".join(
                    entries.replace("http://arxiv.org/abs/2", f"http://arxiv.org/abs/{k}") for k in (3, 4)) + "</feed>").encode()
            if mode == "html":
                body = b"Rate exceeded.\n"
            self.send_response(200)
            self.send_header("Content-Type", "application/atom+xml; charset=utf-8")
            if mode == "chunked-cut":  # no length: chunked transfer, one chunk of half the page, then the socket closes
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                half = body[: len(body) // 2]
                self.wfile.write(f"{len(half):x}\r\n".encode() + half + b"\r\n")
                self.wfile.flush()
                self.close_connection = True
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if mode == "cut":  # the headers promise the whole page; half of it comes, then the socket closes
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)  # shutdown waits one poll
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def feed_settings(tmp_path: Path, api: Api) -> Settings:
    return hashing_settings(tmp_path / "store", arxiv_api_url=api.url, arxiv_delay_s=0.0, arxiv_retries=1, arxiv_page_size=5)


@pytest.fixture
def seeded(tmp_path: Path, api: Api) -> Iterator[Assistant]:
    """A store holding three papers listed 2026-06-24 (one of them is on the API's second page again)."""
    a = Assistant(feed_settings(tmp_path, api))
    rep = a.ingest_record_files([FIX / "seed.jsonl"], show_progress=False)
    assert rep.papers == 3 and not rep.failed
    yield a
    a.close()


@pytest.fixture
def cli_env(seeded: Assistant, api: Api, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment `main()` reads, over the seeded store; returns its data dir."""
    data = seeded.settings.data_dir
    seeded.close()
    for k, v in {"PAPERCHAT_DATA_DIR": str(data), "PAPERCHAT_EMBEDDER": "hashing", "PAPERCHAT_ARXIV_API_URL": api.url,
                 "PAPERCHAT_ARXIV_DELAY_S": "0", "PAPERCHAT_ARXIV_RETRIES": "1", "PAPERCHAT_ARXIV_PAGE_SIZE": "5"}.items():
        monkeypatch.setenv(k, v)
    return data


def stored(data: Path, tmp_path: Path) -> set[str]:
    a = Assistant(hashing_settings(data))
    try:
        return set(a.papers(ids_of("page1.xml") + ids_of("page2.xml") + ids_of("page3.xml")))
    finally:
        a.close()


def test_two_pages_then_an_older_entry_stops_paging(seeded: Assistant, api: Api) -> None:
    rep = seeded.update()
    page1, page2 = ids_of("page1.xml"), ids_of("page2.xml")
    new = page1 + page2[:3]  # page 2: three new papers, one the store holds, one older than the newest stored date
    assert rep.new_ids == new and rep.new == 7 and rep.known == 1 and rep.older == 1, rep.summary()
    assert rep.pages == 2 and rep.entries == 9 and rep.stopped == "reached papers older than 2026-06-21", rep.summary()
    assert [r["start"] for r in api.requests] == ["0", "4"]  # page 3 is never asked for
    q = api.requests[0]
    assert q["search_query"] == "cat:cs.CL OR cat:cs.AI" and q["sortBy"] == "submittedDate" and q["sortOrder"] == "descending"
    assert q["max_results"] == "5"
    assert all(a.startswith("paperchat/") for a in api.agents)
    got = seeded.papers(new + [page2[4]])
    assert set(got) == set(new)  # the older entry is not ingested
    first = got[page1[0]]
    assert first.date is not None and first.date.isoformat() == "2026-06-30" and first.authors and first.categories[0].startswith("cs.")
    assert seeded.counts()[0] == 10
    # the hand-written topic rules ran on the new papers, as any ingest does
    assert any(p.topics for p in got.values())
    again = seeded.update()  # nothing new: the newest stored date moved to 2026-06-30
    assert again.new == 0 and again.known == 6 and again.stopped == "reached papers older than 2026-06-27", again.summary()


def test_a_cut_connection_stores_nothing_of_its_page_and_a_rerun_completes(cli_env: Path, api: Api, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    api.mode[4] = "cut"
    assert main(["update"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("paperchat: error: the arXiv API at 127.0.0.1"), err
    assert "failed 2 times" in err[0] and "after 4 new papers from 1 earlier page(s) were stored" in err[0]
    assert "run `paperchat update` again to finish" in err[0]
    have = stored(cli_env, tmp_path)
    assert set(ids_of("page1.xml")) <= have and not set(ids_of("page2.xml")[:3]) & have  # page 1 whole, page 2 not at all
    del api.mode[4]
    assert main(["update", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["new_ids"] == ids_of("page2.xml")[:3] and out["pages"] == 2, out
    assert set(ids_of("page2.xml")[:4]) <= stored(cli_env, tmp_path)


def test_a_page_that_is_not_xml_is_one_line_and_changes_nothing(
    seeded: Assistant, api: Api, cli_env: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    api.mode[0] = "html"
    assert main(["update"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the arXiv API's page 1 (start=0) is not XML" in err[0] and "b'Rate exceeded." in err[0], err
    assert not stored(cli_env, tmp_path) & set(ids_of("page1.xml"))


def test_an_empty_feed_is_an_empty_report(seeded: Assistant, api: Api) -> None:
    api.mode[0] = "empty"
    rep = seeded.update()
    assert rep.new == 0 and rep.pages == 1 and rep.stopped == "the feed is empty" and seeded.counts()[0] == 3


def test_a_503_is_retried_with_backoff(seeded: Assistant, api: Api) -> None:
    api.fail_once.add(0)
    slept: list[float] = []
    from paperchat.feed import ArxivClient, update

    s = seeded.settings.model_copy(update={"arxiv_delay_s": 0.01})
    rep = update(seeded.library, s, seeded.ingest_papers, ArxivClient(s, sleep=slept.append))
    assert rep.new == 7 and [r["start"] for r in api.requests] == ["0", "0", "4"]
    assert slept and slept[0] == pytest.approx(0.01, abs=0.005)  # backoff before the retry, then the 3 s-style pause


def test_errors_of_the_client(seeded: Assistant, api: Api) -> None:
    api.mode[0] = "cut"
    with pytest.raises(NetworkError, match="failed 2 times"):
        seeded.update()
    api.mode[0] = "chunked-cut"
    with pytest.raises(NetworkError, match="failed 2 times"):
        seeded.update()
    api.mode[0] = "html"
    with pytest.raises(SourceError, match="not XML"):
        seeded.update()
    assert seeded.counts()[0] == 3
    assert seeded.library.catalog.get_meta("update_pending_since") is None  # failed on page 1: nothing written at all
    api.mode.clear()
    seeded.update()
    assert seeded.library.catalog.get_meta("update_pending_since") is None  # a finished run clears it


def test_offline_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    """A closed port (connection refused), through the real command: one line, exit 2, no retry wait."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))  # this checkout, from any cwd
    env |= {"PAPERCHAT_DATA_DIR": str(tmp_path / "store"), "PAPERCHAT_EMBEDDER": "hashing", "PAPERCHAT_ARXIV_API_URL": f"http://127.0.0.1:{port}/api/query"}
    r = subprocess.run([sys.executable, "-m", "paperchat.cli", "update"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"paperchat: error: cannot reach the arXiv API at 127.0.0.1:{port}: this machine looks offline"), lines
    assert "nothing was changed" in lines[0]


def test_every_keeps_running_until_ctrl_c(cli_env: Path, api: Api, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import paperchat.cli.update as cli_update

    waits: list[float] = []

    def sleep(s: float) -> None:
        waits.append(s)
        if len(waits) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(cli_update.time, "sleep", sleep)
    assert main(["update", "--every", "6h"]) == 0
    out, err = capsys.readouterr()
    assert out.count("new papers") == 2 and out.startswith("7 new papers"), out
    assert waits == [21600.0, 21600.0] and "update stopped" in err
    with pytest.raises(SystemExit):  # argparse: below a minute
        main(["update", "--every", "10s"])
    assert "at least 1m" in capsys.readouterr().err


def test_bundled_weekly_counts_are_extended_with_the_new_weeks(seeded: Assistant, api: Api) -> None:
    """Momentum's denominator: a store with bundled corpus-wide counts (the demo) counts the weeks after them
    from the catalogue, so new papers have a week to be a share of."""
    import datetime as dt

    from paperchat.library import WEEKLY_COUNTS_KEY

    seeded.library.catalog.set_meta(WEEKLY_COUNTS_KEY, json.dumps({"2026-06-15": 500}))
    seeded.update()
    weekly = seeded.library.weekly_counts()
    assert weekly[dt.date(2026, 6, 15)] == 500  # bundled weeks stay as they were
    assert weekly[dt.date(2026, 6, 22)] == 4 and weekly[dt.date(2026, 6, 29)] == 6, weekly  # 3 seeds + 1 new; 6 new


def test_new_papers_are_tagged_with_discovered_topics(seeded: Assistant, api: Api) -> None:
    """With discovered topics in the store, update's ingest tags the new papers (the ingest hook)."""
    import numpy as np

    from paperchat.catalog import DiscoveredTopic
    from paperchat.ingestion.chunking import abstract_chunk
    from paperchat.ingestion.records import parse_atom
    from paperchat.types import Paper

    first = next(p for p in parse_atom((FIX / "page1.xml").read_bytes()) if isinstance(p, Paper))
    chunk = abstract_chunk(first)
    assert chunk is not None
    centre = seeded.library.embedder.embed([chunk.text])[0].astype(np.float32)
    centre /= np.linalg.norm(centre)
    topic = DiscoveredTopic("interactive-feedback", "interactive feedback", None, 0.0, 1, ("feedback",), centre)
    seeded.library.catalog.replace_discovered([topic], {}, {"settings": {}})
    rep = seeded.update()
    assert rep.tagged >= 1
    assert seeded.library.catalog.tags_of([first.id])[first.id][0][0] == "interactive-feedback"


# -- issue 33, case 9: a server that never finishes, redirects elsewhere or ignores max_results ---------------


@pytest.mark.slow  # integration: seconds, not the fast layer's unit checks
def test_a_trickling_server_meets_a_deadline(seeded: Assistant, api: Api) -> None:
    api.mode[0] = "trickle"
    seeded.settings.arxiv_timeout_s = 2.0  # a header every 0.5 s never trips a 2 s socket timeout
    t0 = time.perf_counter()
    with pytest.raises(NetworkError, match="TimeoutError"):
        seeded.update()
    assert time.perf_counter() - t0 < 2 * 2.0 + 4  # two tries of 2 s (retries=1), not the server's 20 s


def test_a_redirect_to_another_host_is_refused(seeded: Assistant, api: Api) -> None:
    api.mode[0] = "redirect"
    with pytest.raises(SourceError, match="redirected to another host"):
        seeded.update()


def test_a_page_larger_than_asked_is_cut_to_the_run_limit(seeded: Assistant, api: Api) -> None:
    api.mode[0] = "flood"
    seeded.settings.arxiv_max_papers = 7
    rep = seeded.update()
    assert rep.entries == 7 and rep.pages == 1 and "PAPERCHAT_ARXIV_MAX_PAPERS=7" in (rep.stopped or "")
