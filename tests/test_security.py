"""Security of the app (issue 12): which files it serves, stored text and URLs on the page, question size,
the launcher's refusal to serve in the open, and uploads that fail.

The served-file and question-size tests launch the real app with the options `serve()` uses
(`launch_options`); the browser half of the stored-XSS case is in tests/test_browser.py.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from paperchat.errors import InputError
from paperchat.ingestion.pdf import sha256_file
from paperchat.ingestion.pdfstore import adopt_legacy_pdfs, stored_copy
from paperchat.ingestion.pipeline import Ingester
from paperchat.library import Library
from paperchat.ports import free_port
from paperchat.qa import QA
from paperchat.types import Answer, Citation, Paper, Scope, Source
from paperchat.ui import handlers as h
from paperchat.ui.render import answer_markdown, md_plain, md_text, safe_url, sources_panel

from .conftest import ROOT
from .pdfmaker import blank_pdf, make_pdf


@pytest.fixture
def library(hashing_library: Library) -> Library:
    """An empty store over the hashing embedder: nothing here depends on what the vectors mean."""
    return hashing_library


IFRAME = "<iframe src=javascript:alert(1)></iframe>"
IMG = "<img src=x onerror=alert(1)>"
LINK = "[click me](javascript:alert(1))"
HOSTILE_ID = "hostile-1"


def hostile_paper() -> Paper:
    """A record as a hostile feed could deliver it: javascript: URL, HTML and a Markdown link in the abstract."""
    return Paper(
        id=HOSTILE_ID,
        title=f"Sparse expert routing {IMG}",
        authors=["Mallory <script>alert(1)</script>"],
        abstract=(
            f"Sparse expert routing reduces the compute of transformer language models {IFRAME} by sending each token "
            f"to two of sixty-four experts {IMG}. The router is trained with a load-balancing loss {LINK}."
        ),
        date=dt.date(2026, 3, 2),
        url="javascript:alert(1)",
    )


@contextmanager
def launched(lib: Library) -> Iterator[tuple[str, h.Core]]:
    """The real app over `lib`, launched with the same file and size options as `serve()`."""
    from paperchat.ui.app import build_app
    from paperchat.ui.serving import launch_options

    core = h.Core(lib.settings, lib, QA(lib))
    demo = build_app(lib.settings, core)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(lib.settings))
    try:
        yield f"http://127.0.0.1:{port}", core
    finally:
        demo.close()


def fetch(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET (or POST with data); HTTP errors are answers, not exceptions."""
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get("content-type", ""), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), exc.read()


def file_url(base: str, path: Path | str) -> str:
    return f"{base}/gradio_api/file={urllib.request.pathname2url(str(path))}"


# -- 1. the app serves exactly its own PDF copies ---------------------------------------------------


@pytest.mark.slow  # a launched Gradio server
def test_app_serves_only_its_own_pdf_copies(library: Library, tmp_path: Path) -> None:
    papers = tmp_path / "papers"
    papers.mkdir()
    pdf = make_pdf(papers / "x.pdf", ["Sparse attention routes tokens to experts in a mixture of experts layer. " * 6])
    secret = papers / "secret.txt"
    secret.write_text("the secret notes")
    dotenv = papers / ".env"
    dotenv.write_text("OPENAI_API_KEY=sk-not-for-the-browser")
    evil = papers / "evil.html"
    evil.write_text("<script>alert(document.cookie)</script>")
    sha = sha256_file(pdf)

    rep = Ingester(library).ingest_pdfs([pdf])
    assert not rep.failed, rep.failed
    paper = library.catalog.get(rep.paper_ids[0])
    assert paper is not None and paper.pdf_path
    stored = Path(paper.pdf_path)
    store = library.settings.uploads_dir.resolve()
    assert stored == store / f"{sha}.pdf" and stored.read_bytes() == pdf.read_bytes()
    assert sorted(p.name for p in store.iterdir()) == [f"{sha}.pdf"]  # one folder of <sha256>.pdf, nothing else
    assert not list(store.parent.glob(".pdf-*.part"))  # no partial copy left beside it

    with launched(library) as (base, core):
        for path in (secret, dotenv, evil, pdf, library.settings.catalog_path.resolve(), Path("/etc/passwd")):
            status, ctype, body = fetch(file_url(base, path))
            assert status in (403, 404), (path, status)
            assert b"the secret notes" not in body and b"sk-not" not in body and b"<script>" not in body
        status, ctype, body = fetch(file_url(base, stored))
        assert status == 200 and ctype.startswith("application/pdf") and body == pdf.read_bytes()
        # the paper view links the stored copy, never the source folder
        view = h.paper_view(core, paper.id)
        assert f"/gradio_api/file={stored}" in view and str(papers) not in view


def test_legacy_store_paths_are_copied_or_not_linked(library: Library, tmp_path: Path) -> None:
    """A store made before the app kept its own copies: its outside paths never become served folders."""
    from paperchat.ui.serving import allowed_paths

    papers = tmp_path / "papers"
    papers.mkdir()
    kept = make_pdf(papers / "kept.pdf", ["Dense passage retrieval with dual encoders and in-batch negatives. " * 5])
    gone = make_pdf(papers / "gone.pdf", ["Preference optimisation without a reward model, directly on pairs. " * 5])
    rep = Ingester(library).ingest_pdfs([kept, gone])
    assert not rep.failed, rep.failed
    cat = library.catalog
    by_sha = {sha256_file(p): p for p in (kept, gone)}
    for pid in rep.paper_ids:  # rewrite the catalogue as older code left it: paths into ~/papers
        p = cat.get(pid)
        assert p is not None and p.pdf_path
        sha = Path(p.pdf_path).stem
        cat.set_pdf(p, str(by_sha[sha]), sha, cat.hashes([pid])[pid][1] or "", ["rag"])  # a member of a topic
        Path(p.pdf_path).unlink()
    gone.unlink()
    settings = library.settings
    assert allowed_paths(settings) == [str(settings.uploads_dir.resolve())]
    assert adopt_legacy_pdfs(library) == (1, 1)
    after = {Path(cat.get(pid).pdf_path or "").parent.name: cat.get(pid) for pid in rep.paper_ids}  # type: ignore[union-attr]
    adopted = after["uploads"]
    assert adopted.topics == ["rag"]  # adopting the copy keeps the paper's topics (it once cleared them)
    assert stored_copy(adopted.pdf_path, settings) is not None
    assert Path(adopted.pdf_path or "").read_bytes() == kept.read_bytes()
    left = after["papers"]  # its file is gone: it keeps the old path, which is neither served nor linked
    assert stored_copy(left.pdf_path, settings) is None
    core = h.Core(settings, library, QA(library))
    assert "/gradio_api/file=" not in h.paper_view(core, left.id) and str(papers) not in h.paper_view(core, left.id)
    assert adopt_legacy_pdfs(library) == (0, 1)  # idempotent


# -- 2. stored text and URLs on the page ---------------------------------------------------------------


def test_only_http_urls_become_links() -> None:
    for bad in (
        "javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,<b>x</b>", "vbscript:x", "/gradio_api/file=/etc/passwd", "//evil.example", "http://a b"
    ):
        assert safe_url(bad) == "", bad
    for good in ("https://arxiv.org/abs/2004.04906", "http://example.org/paper?id=1"):
        assert safe_url(good) == good


def _hostile_answer() -> Answer:
    src = Source(n=1, paper_id=HOSTILE_ID, title=f"T {IMG}", url="javascript:alert(1)", page=None, text=hostile_paper().abstract, score=0.9)
    cite = Citation(n=1, paper_id=HOSTILE_ID, title=src.title, quote=f"sixty-four experts {IMG} {IFRAME}", support=0.8)
    return Answer(
        question="q", query=f"routing {IMG}", rewritten=True, answer=f"Routing sends tokens {IFRAME} to experts {IMG} {LINK} [1].",
        sources=[src], citations=[cite], fallback=f"endpoint said {IMG}",
    )


def _assert_inert(text: str, markdown: bool = False) -> None:
    """No tag from stored text, no javascript: href; in Markdown also no unescaped `](javascript:` link."""
    low = text.lower()
    assert "<iframe" not in low and "<img" not in low and "<script" not in low, text
    assert not re.search(r"href\s*=\s*[\"']?\s*javascript:", low), text
    if markdown:
        assert not re.search(r"(?<!\\)\]\(\s*javascript:", low), text


def test_render_functions_escape_stored_text() -> None:
    ans = _hostile_answer()
    md = answer_markdown(ans)
    _assert_inert(md, markdown=True)
    assert "[[1]](#paper/hostile-1 \"sixty-four experts &lt;img" in md  # our own citation link survives, its quote as the title
    assert "\\[click me\\](javascript:alert(1))" in md  # the hostile link is text
    assert "&lt;iframe" in md and "&lt;img" in md
    _assert_inert(sources_panel(ans))
    typed = f"a <b>question</b> with [x](y) and \\ {IMG}"
    assert md_plain(md_text(typed)) == typed  # the chat shows what was typed, and gives it back for follow-ups


def test_pages_never_carry_stored_html_or_javascript_urls(library: Library) -> None:
    rep = Ingester(library).ingest_records([hostile_paper()])
    assert not rep.failed
    library.catalog.save(HOSTILE_ID, True)
    core = h.Core(library.settings, library, QA(library))
    view = h.paper_view(core, HOSTILE_ID)
    _assert_inert(view)
    assert "javascript:" not in view.split('class="pc-abstract"')[0]  # no link of any kind from the stored URL
    assert "onerror=alert(1)" in view  # shown as text
    _assert_inert(h.lists_html(core))
    for slug in library.catalog.get(HOSTILE_ID).topics:  # type: ignore[union-attr]
        _assert_inert(h.topic_papers(core, slug)[0])
        _assert_inert(h.topic_header(core, slug)["html"])
    # the paper's chat: the extractive answer quotes the hostile abstract; every message is escaped
    out = list(h.chat_stream(core, f"How does sparse expert routing reduce compute? {IMG}", "paper", HOSTILE_ID, []))
    final = core.qa.ask("How does sparse expert routing reduce compute?", Scope.for_paper(HOSTILE_ID))
    assert "<iframe" in final.answer or "<img" in final.answer  # the raw answer does carry the hostile text
    for msgs, sources in out:
        for m in msgs:
            _assert_inert(m["content"], markdown=True)
        _assert_inert(sources)
    assert "](#paper/hostile-1" in out[-1][0][-1]["content"]
    assert all(s["url"] == "" for s in final.to_json()["sources"])  # API clients get no javascript: URL either


# -- 11. question size -----------------------------------------------------------------------------


def test_questions_over_the_limit_are_refused_everywhere(library: Library) -> None:
    Ingester(library).ingest_records([hostile_paper()])
    core = h.Core(library.settings, library, QA(library))
    limit = library.settings.max_question_chars
    assert limit == 4000
    long_q = "why " * 1001  # 4,004 characters
    with pytest.raises(InputError, match=r"the question is 4,004 characters, over the 4,000 limit"):
        core.qa.ask(long_q, Scope.for_paper(HOSTILE_ID))
    out = list(h.chat_stream(core, long_q, "paper", HOSTILE_ID, []))
    msgs, _ = out[-1]
    assert len(msgs) == 1 and "over the 4,000 limit" in msgs[0]["content"] and "shorten it" in msgs[0]["content"]
    assert h.ask_json(core, long_q, Scope.for_paper(HOSTILE_ID)) == {"error": "the question is 4,004 characters, over the 4,000 limit (shorten it)"}
    ok = h.ask_json(core, "why " * 999, Scope.for_paper(HOSTILE_ID))  # 3,996: answered
    assert "error" not in ok


def test_cli_refuses_long_questions_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(tmp_path / "d")}
    r = subprocess.run(
        [sys.executable, "-m", "paperchat.cli", "ask", "--paper", "2004.04906", "why " * 1001], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == "paperchat: error: the question is 4,004 characters, over the 4,000 limit (shorten it)"


@pytest.mark.slow  # a launched Gradio server
def test_launched_app_refuses_long_questions_and_huge_requests(library: Library) -> None:
    from gradio_client import Client

    Ingester(library).ingest_records([hostile_paper()])
    with launched(library) as (base, _core):
        client = Client(base + "/", verbose=False)
        got = client.predict("x" * 4001, HOSTILE_ID, api_name="/ask_paper")
        assert got == {"error": "the question is 4,001 characters, over the 4,000 limit (shorten it)"}
        # a 20 MB question never reaches the handler: the server answers 413 before reading the body
        body = json.dumps({"data": ["x" * 20_000_000, HOSTILE_ID]}).encode()
        conn = http.client.HTTPConnection(base.removeprefix("http://"), timeout=60)
        conn.putrequest("POST", "/gradio_api/call/ask_paper")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        conn.send(body[:65536])
        resp = conn.getresponse()
        assert resp.status == 413 and b"limit" in resp.read()
        conn.close()


# -- 15. the launcher and failed uploads ------------------------------------------------------------


@pytest.mark.slow  # two processes that import gradio (the fast layer has the CLI case in test_reliability)
def test_app_py_refuses_open_serving_like_the_cli(tmp_path: Path) -> None:
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(tmp_path / "d"), "PAPERCHAT_HOST": "0.0.0.0"}
    env.pop("PAPERCHAT_AUTH", None)
    runs = [
        subprocess.run([sys.executable, "app.py"], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env),
        subprocess.run([sys.executable, "-m", "paperchat.cli", "serve"], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env),
    ]
    for r in runs:
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().startswith("paperchat: error: refusing to serve on 0.0.0.0 without a password"), r.stderr
        assert "Traceback" not in r.stderr
    assert runs[0].stderr == runs[1].stderr


def test_failed_upload_leaves_no_file(library: Library, tmp_path: Path) -> None:
    core = h.Core(library.settings, library, QA(library))
    path = blank_pdf(tmp_path / "scan.pdf", 2)
    pid, msg = h.upload_pdf(core, str(path))
    assert pid is None and "no extractable text" in msg
    uploads = library.settings.uploads_dir
    assert not uploads.exists() or list(uploads.iterdir()) == []
    assert not list(library.settings.data_dir.glob(".pdf-*.part"))
    # a good upload keeps its one copy
    good = make_pdf(tmp_path / "good.pdf", ["Contrastive pretraining of sentence encoders on paired data. " * 5])
    pid, msg = h.upload_pdf(core, str(good))
    assert pid, msg
    assert [p.name for p in uploads.iterdir()] == [f"{sha256_file(good)}.pdf"]



@pytest.mark.slow  # a launched Gradio server
def test_launched_app_refuses_cross_site_uploads(library: Library) -> None:
    """Issue 33, case 12: a page on another site cannot upload into the app's temp folder (403); the app's own
    page (same Origin) and clients without an Origin still can."""
    Ingester(library).ingest_records([hostile_paper()])
    boundary = "pcboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x.pdf\"\r\nContent-Type: application/pdf\r\n\r\n"
            f"%PDF-1.4 not really\r\n--{boundary}--\r\n").encode()
    with launched(library) as (base, _core):
        host = base.removeprefix("http://")

        def upload(origin: str | None) -> int:
            conn = http.client.HTTPConnection(host, timeout=60)
            headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "Content-Length": str(len(body))}
            if origin is not None:
                headers["Origin"] = origin
            conn.request("POST", "/gradio_api/upload", body=body, headers=headers)
            status = conn.getresponse().status
            conn.close()
            return status

        assert upload("https://evil.example") == 403
        assert upload("null") == 403
        assert upload(base) == 200 and upload(None) == 200
