"""`import paperchat` stays light: torch, gradio and chromadb load only when used (checked in a fresh
process, where nothing else has imported them yet)."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import ROOT

HEAVY = ("torch", "gradio", "chromadb", "sentence_transformers", "transformers", "onnxruntime", "tokenizers", "ray")

# the core a CLI command or a library user imports before doing anything: none of it may load a model
# runtime or the web UI (the vector store's chromadb is imported by the store when it opens)
CORE = [
    "paperchat.settings",
    "paperchat.types",
    "paperchat.errors",
    "paperchat.text",
    "paperchat.citations",
    "paperchat.providers.embedders",
    "paperchat.providers.answerers",
    "paperchat.store",
    "paperchat.search_index",
    "paperchat.library",
    "paperchat.retrieval",
    "paperchat.qa",
    "paperchat.cli",
]

PROBE = """
import importlib, json, sys
heavy, seen = {heavy!r}, {{}}
for name in {modules!r}:
    importlib.import_module(name)
    seen[name] = sorted(m for m in heavy if m in sys.modules)
print(json.dumps(seen))
"""


def _loaded(modules: list[str]) -> dict[str, list[str]]:
    """Module -> the heavy packages in sys.modules after importing it (and those before it), in a new process."""
    code = PROBE.format(heavy=HEAVY, modules=modules)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_import_paperchat_loads_no_torch_gradio_or_chromadb() -> None:
    assert _loaded(["paperchat"]) == {"paperchat": []}


def test_the_core_loads_no_model_runtime_and_no_ui() -> None:
    seen = _loaded(["paperchat", *CORE])
    first = {name: got for name, got in seen.items() if set(got) - {"chromadb"}}
    assert not first, f"first module that loads a heavy package: {next(iter(first.items()))}"
