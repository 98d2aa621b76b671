"""Shared fixtures: real MiniLM, real Chroma in tmp folders, real data from ../shared/data.

Tests that need ../shared/data fail (not skip) in CI when it is missing. A network guard fails any
connection to a non-loopback address, so nothing in the suite phones home.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paperchat.library import Library
from paperchat.ports import free_port
from paperchat.providers.embedders import MiniLMEmbedder
from paperchat.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PAPERCHAT_TEST_DATA", ROOT.parent / "shared" / "data"))
ABSTRACTS = SHARED / "abstracts" / "arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl"
PDFS = SHARED / "pdfs"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# -- network guard ---------------------------------------------------------------------------------

_real_connect = socket.socket.connect


def _is_local(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return True  # unix sockets


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_local(address):
        raise ConnectionRefusedError(f"network guard: tests may not connect to {address!r}")
    _real_connect(self, address)  # type: ignore[arg-type]


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]


# -- shared data -----------------------------------------------------------------------------------


def need_shared() -> Path:
    if not ABSTRACTS.exists() or not PDFS.exists():
        msg = f"shared data not found at {SHARED} (set PAPERCHAT_TEST_DATA)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return SHARED


@pytest.fixture(scope="session")
def shared() -> Path:
    return need_shared()


def read_sample(n: int = 300, step: int = 97) -> list[str]:
    """Every `step`-th line of the shared abstracts (spread over the whole date range), n lines."""
    lines = []
    with open(ABSTRACTS, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i % step == 0:
                lines.append(line)
                if len(lines) >= n:
                    break
    return lines


@pytest.fixture(scope="session")
def sample_jsonl(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "sample.jsonl"
    path.write_text("".join(read_sample()), encoding="utf-8")
    return path


FIVE_PDFS = [
    "rag/2005.11401.pdf",
    "rag/2004.04906.pdf",
    "scholarly_nlp/2302.07302v1.pdf",
    "llm_alignment_tools/2305.18290_dpo.pdf",
    "labml/1706.03762.pdf",
]


@pytest.fixture(scope="session")
def five_pdfs(shared: Path) -> list[Path]:
    return [PDFS / p for p in FIVE_PDFS]


# -- embedder and libraries -------------------------------------------------------------------------


class CountingEmbedder:
    """The real MiniLM, counting how many texts it embeds (to prove that re-ingest embeds nothing)."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner = inner
        self.id = inner.id
        self.dim = inner.dim
        self.embedded = 0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.embedded += len(texts)
        return self.inner.embed(texts, batch_size)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def embedder(minilm: MiniLMEmbedder) -> CountingEmbedder:
    return CountingEmbedder(minilm)


def make_settings(data_dir: Path, **kw: object) -> Settings:
    return Settings(data_dir=data_dir, **kw)  # type: ignore[arg-type]


@pytest.fixture
def library(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Library]:
    lib = Library(make_settings(tmp_path / "store"), embedder=embedder)  # type: ignore[arg-type]
    yield lib
    lib.close()


@pytest.fixture(scope="session")
def built_store(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder, sample_jsonl: Path, five_pdfs: list[Path]) -> Path:
    """A data dir with 300 real abstracts and five real PDFs, built once per session (copy before writing)."""
    from paperchat.ingestion.pipeline import Ingester
    from paperchat.ingestion.records import read_records

    data_dir = tmp_path_factory.mktemp("built") / "store"
    lib = Library(make_settings(data_dir), embedder=minilm)
    ing = Ingester(lib)
    rep = ing.ingest_records(read_records(sample_jsonl))
    assert not rep.failed, rep.failed
    rep = ing.ingest_pdfs(five_pdfs)
    assert not rep.failed, rep.failed
    lib.close()
    return data_dir


@pytest.fixture
def built_library(built_store: Path, tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Library]:
    copy = tmp_path / "copy"
    shutil.copytree(built_store, copy)
    lib = Library(make_settings(copy), embedder=embedder)  # type: ignore[arg-type]
    yield lib
    lib.close()


@contextmanager
def served_app(lib: Library) -> Iterator[tuple[str, Any]]:
    """The real app (build_app) over `lib`, launched on a free loopback port: yields (url, core)."""
    from paperchat.qa import QA
    from paperchat.ui import handlers as h
    from paperchat.ui.app import build_app

    core = h.Core(lib.settings, lib, QA(lib))
    demo = build_app(lib.settings, core)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", core
    finally:
        demo.close()


def jsonl(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)
