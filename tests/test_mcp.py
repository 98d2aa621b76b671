"""`paperchat mcp` (issue 37) driven by the official SDK's own client, over stdio (a `paperchat mcp` subprocess) and
over streamable HTTP (`paperchat mcp --http`, a subprocess on a free loopback port): every tool called on the demo
store, every citation checked against the store, bad arguments and refused paths as one-line tool errors, and the
HTTP server's token rule."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from paperchat.library import Library
from paperchat.ports import free_port
from tests.conftest import ROOT, hashing_settings
from tests.corpus import PAPER_ID
from tests.pdfmaker import make_pdf


@pytest.fixture
def store(demo_store: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(demo_store, copy)
    return copy


def _env(data: Path, allowed: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data), "PAPERCHAT_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT / "src")}
    if allowed is not None:
        env["PAPERCHAT_MCP_ALLOWED_FOLDERS"] = f'["{allowed}"]'
    return env


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _check_citations(result: dict[str, Any], data: Path) -> None:
    """Every citation names a paper of the store and quotes its text (its abstract, or the cited page's chunks)."""
    lib = Library(hashing_settings(data))
    try:
        for c in result["citations"]:
            paper = lib.catalog.get(c["paper_id"])
            assert paper is not None, c
            if c["page"]:
                chunks = lib.store.page_chunks({(c["paper_id"], c["page"])}).get((c["paper_id"], c["page"]), [])
                text = " ".join(ch.text for ch in chunks)
            else:
                text = f"{paper.title} {paper.abstract}"
            assert _norm(c["quote"])[:120] in _norm(text), (c["quote"][:80], c["paper_id"], c["page"])
    finally:
        lib.close()


async def _exercise(client: Any, data: Path, pdf_ok: Path | None, pdf_outside: Path | None) -> dict[str, Any]:
    """Call every tool once (and the error paths); returns what came back, by tool."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= {"search_papers", "ask_topic", "ask_paper", "get_paper", "list_topics", "topic_page", "digest", "follow", "add_pdf"}
    assert all(t.description for t in tools.values()) and "query" in tools["search_papers"].input_schema["properties"]

    async def call(name: str, args: dict[str, Any]) -> Any:
        r = await client.call_tool(name, args)
        assert not r.is_error, (name, r.content[0].text if r.content else "")
        return r.structured_content

    async def error(name: str, args: dict[str, Any]) -> str:
        r = await client.call_tool(name, args)
        assert r.is_error, (name, args)
        text: str = r.content[0].text
        assert "\n" not in text and "Traceback" not in text, text
        return text

    got: dict[str, Any] = {}
    got["list_topics"] = await call("list_topics", {})
    assert any(t["slug"] == "rag" and "papers in the last" in t["momentum"] for t in got["list_topics"]["topics"])
    got["search"] = await call("search_papers", {"query": "dense passage retrieval hard negatives", "k": 5})
    assert got["search"]["papers"] and len(got["search"]["papers"]) <= 5 and all(p["date"] for p in got["search"]["papers"][:3])
    got["ask_topic"] = await call("ask_topic", {"question": "How are retrieved documents used by RAG systems?", "topic": "rag"})
    assert got["ask_topic"]["citations"] and not got["ask_topic"]["abstained"]
    _check_citations(got["ask_topic"], data)
    got["ask_paper"] = await call("ask_paper", {"question": "How are the negative passages chosen?", "paper_id": PAPER_ID})
    assert got["ask_paper"]["citations"] and all(c["paper_id"] == PAPER_ID and c["page"] for c in got["ask_paper"]["citations"])
    assert any(c["highlight"] and c["highlight"]["boxes"] for c in got["ask_paper"]["citations"])  # placed on the stored PDF
    _check_citations(got["ask_paper"], data)
    got["get_paper"] = await call("get_paper", {"paper_id": PAPER_ID})
    assert got["get_paper"]["has_pdf"] and got["get_paper"]["pages"] == 4 and got["get_paper"]["abstract"]
    got["topic_page"] = await call("topic_page", {"slug": "rag", "k": 3})
    assert len(got["topic_page"]["latest"]) == 3 and got["topic_page"]["weekly"]
    got["follow"] = await call("follow", {"topic": "rag"})
    assert got["follow"]["following"] is True
    got["digest"] = await call("digest", {"peek": True})
    assert "followed topic" in got["digest"]["headline"]
    rr = await client.read_resource(f"paper://{PAPER_ID}")
    assert PAPER_ID in rr.contents[0].text
    # bad arguments, unknown ids and refused paths: one line each
    assert "no paper" in await error("ask_paper", {"question": "What?", "paper_id": "0000.00000"})
    assert "no topic" in await error("ask_topic", {"question": "What?", "topic": "no-such-topic"})
    assert "k must be between" in await error("search_papers", {"query": "x", "k": 500})
    assert "not a date" in await error("search_papers", {"query": "x", "since": "last week"})
    assert "query is empty" in await error("search_papers", {"query": "  "})
    if pdf_outside is not None:
        assert "not a file under the folders" in await error("add_pdf", {"path": str(pdf_outside)})
        assert "not a file under the folders" in await error("add_pdf", {"path": str(pdf_outside.parent / "missing.pdf")})  # the same line: no probing
    if pdf_ok is not None:
        got["add_pdf"] = await call("add_pdf", {"path": str(pdf_ok)})
        assert got["add_pdf"]["outcome"] == "added" and got["add_pdf"]["chunks_added"] >= 1
    return got


def _pdfs(tmp_path: Path) -> tuple[Path, Path, Path]:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    inside = make_pdf(allowed / "routing.pdf", ["Sparse expert routing answers questions over long documents better than dense retrieval. " * 8])
    outside = make_pdf(tmp_path / "secret.pdf", ["Not for the assistant. " * 20])
    return allowed, inside, outside


@pytest.mark.slow  # a subprocess opens the store and serves MCP over its stdin/stdout
def test_every_tool_over_stdio(store: Path, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    allowed, inside, outside = _pdfs(tmp_path)
    params = StdioServerParameters(command=sys.executable, args=["-m", "paperchat.cli", "mcp"], env=_env(store, allowed), cwd=str(ROOT))

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await _exercise(client, store, inside, outside)

    got = anyio.run(main)
    assert got["add_pdf"]["paper"]["title"]


@pytest.fixture
def http_server(store: Path) -> Iterator[tuple[str, str]]:
    """`paperchat mcp --http` on a free loopback port with a token; (url, token)."""
    port, token = free_port(), "t0k3n-for-tests"
    proc = subprocess.Popen([sys.executable, "-m", "paperchat.cli", "mcp", "--http", "--port", str(port), "--token", token],
                            env=_env(store), cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    import http.client

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/mcp")
            conn.getresponse()
            conn.close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.3)
    yield url, token
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.slow
def test_every_tool_over_http_with_a_token(http_server: tuple[str, str], store: Path) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    url, token = http_server

    async def main() -> dict[str, Any]:
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await _exercise(client, store, None, None)

    got = anyio.run(main)
    assert got["ask_topic"]["citations"]
    # without the token: 401 before any tool runs
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("POST", "/mcp", body=b"{}", headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert conn.getresponse().status == 401


def test_http_beyond_loopback_needs_a_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from paperchat.cli import main

    assert main(["--data-dir", str(tmp_path / "d"), "mcp", "--http", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "--token" in err and "Traceback" not in err and not (tmp_path / "d").exists()
