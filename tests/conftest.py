"""Shared fixtures: real Chroma in tmp folders; the hashing embedder on the bundled demo corpus (fast layer);
real MiniLM and real data from ../shared/data (slow layer).

Two layers. The fast one (`pytest -m "not slow"`, or `pytest --fast`) runs in seconds: store, ingestion,
retrieval, citations, topics and UI handlers over the hashing embedder (`hashing_library`, `demo_library`).
Everything else is marked `slow`: any test that uses the `minilm` or `reader` fixture (a model) or the `shared`
fixture (../shared/data) is marked here, and tests that start MiniLM in a subprocess, a browser, llama.cpp or a
Chroma server carry the mark themselves. Tests that
read ../shared/data are marked `shared_data` (any test using the `shared` fixture is marked here); they fail
(not skip) in CI when it is missing. `pytest` with no option runs everything.

A network guard fails any connection to a non-loopback address, so nothing in the suite phones home.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from paperchat.library import Library
from paperchat.ports import free_port
from paperchat.providers.hashing import HashingEmbedder
from paperchat.providers.minilm import MiniLMEmbedder
from paperchat.providers.onnx_minilm import OnnxMiniLMEmbedder
from paperchat.settings import Settings
from paperchat.types import Embedder

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PAPERCHAT_TEST_DATA", ROOT.parent / "shared" / "data"))
ABSTRACTS = SHARED / "abstracts" / "arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl"
PDFS = SHARED / "pdfs"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# one export of the ONNX model (the default embedder) for every test's fresh data dir and every `paperchat`
# a test starts, instead of one per data dir (about 10 s each); the files are hash-checked on every load
os.environ.setdefault("PAPERCHAT_MODELS_DIR", str(Path(tempfile.gettempdir()) / f"paperchat-test-models-{os.getuid()}"))

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


# -- layers ----------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fast", action="store_true", help="run only the fast layer: deselect tests marked slow (as -m 'not slow')")


def load_script(name: str) -> ModuleType:
    """A script of scripts/ loaded as a module (they are not a package): the generators the drift tests compare."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark by what a test uses (fixtures are resolved transitively): MiniLM -> slow, ../shared/data -> shared_data."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & {"minilm", "reader", "shared"}:  # a model, or the real PDFs and data sets: not the fast layer
            item.add_marker(pytest.mark.slow)
        if "shared" in used:
            item.add_marker(pytest.mark.shared_data)
    if config.getoption("--fast"):
        slow = [i for i in items if i.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [i for i in items if not i.get_closest_marker("slow")]


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
    """A real embedder (MiniLM or hashing), counting how many texts it embeds (to prove that re-ingest
    embeds nothing)."""

    def __init__(self, inner: Embedder) -> None:
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


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder with both ONNX exports (fp32, which OpenVINO also compiles, and int8), made once for the session."""
    folder = tmp_path_factory.mktemp("onnx") / "models"
    OnnxMiniLMEmbedder(folder, quantized=True).embed(["export both"])
    return folder


@pytest.fixture(scope="session")
def onnx_fp32(models_dir: Path) -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(models_dir)


@pytest.fixture
def embedder(minilm: MiniLMEmbedder) -> CountingEmbedder:
    return CountingEmbedder(minilm)


def make_settings(data_dir: Path, **kw: object) -> Settings:
    return Settings(data_dir=data_dir, **kw)  # type: ignore[arg-type]


# -- the fast layer: hashing embedder, demo corpus, a four-page paper -------------------------------


@pytest.fixture(scope="session")
def hashing() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def counted(hashing: HashingEmbedder) -> CountingEmbedder:
    """The hashing embedder, counting what it embeds."""
    return CountingEmbedder(hashing)


def hashing_settings(data_dir: Path, **kw: object) -> Settings:
    """Settings for a store in `data_dir` built with the hashing embedder."""
    return make_settings(data_dir, embedder="hashing", **kw)


@pytest.fixture
def fast_settings(tmp_path: Path) -> Settings:
    """Hashing-embedder Settings for an empty store in tmp_path."""
    return hashing_settings(tmp_path / "store")


@pytest.fixture
def hashing_library(fast_settings: Settings, counted: CountingEmbedder) -> Iterator[Library]:
    """An empty library in tmp_path over the (counting) hashing embedder."""
    lib = Library(fast_settings, embedder=counted)  # type: ignore[arg-type]
    yield lib
    lib.close()


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory, hashing: HashingEmbedder) -> Path:
    """A data dir with the bundled demo corpus (1,548 real abstracts) and the four-page paper of
    tests/corpus.py (with its metadata sidecar: a "rag" paper), embedded by the hashing embedder; built once
    per session (copy before writing)."""
    from paperchat.demo import ensure_demo
    from paperchat.ingestion.pipeline import Ingester

    from .corpus import write_paper_folder

    root = tmp_path_factory.mktemp("demo")
    lib = Library(hashing_settings(root / "store"), embedder=hashing)
    rep = ensure_demo(lib, show_progress=False)
    assert rep is not None and not rep.failed, rep
    rep = Ingester(lib).ingest_pdfs([write_paper_folder(root / "paper")])
    assert not rep.failed, rep.failed
    lib.close()
    return root / "store"


@pytest.fixture
def demo_library(demo_store: Path, tmp_path: Path, counted: CountingEmbedder) -> Iterator[Library]:
    """A copy of `demo_store` in tmp_path, opened over the counting hashing embedder."""
    copy = tmp_path / "demo"
    shutil.copytree(demo_store, copy)
    lib = Library(hashing_settings(copy), embedder=counted)  # type: ignore[arg-type]
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
