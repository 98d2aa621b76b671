"""The layering stays true: the edges (ui/, cli/, evaluation/, bench.py) import from paperchat only the facade
(`paperchat.assistant`), our types, settings and errors, their own package and the edges above them; they
never reach through the facade into the library, store or catalogue; and the core never imports an edge.

Read from the source with `ast` (nothing is imported), so it is fast and holds for imports inside functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "paperchat"

CORE_SURFACE = ("paperchat", "paperchat.assistant", "paperchat.types", "paperchat.settings", "paperchat.errors")
# edge -> the edges it may call (higher or peer layers: the CLI starts the app, runs evaluations and benchmarks)
EDGES: dict[str, tuple[str, ...]] = {
    "paperchat.cli": ("paperchat.ui", "paperchat.evaluation", "paperchat.bench", "paperchat.mcp", "paperchat.launch"),  # launch: the entry point guarding the CLI's import
    "paperchat.mcp": (),
    "paperchat.launch": ("paperchat.cli",),
    "paperchat.ui": ("paperchat.evaluation",),  # the app's Evaluation tab shows the latest report
    "paperchat.evaluation": (),
    "paperchat.bench": (),
}
# modules that measure the parts below the facade themselves, and why
BELOW_THE_FACADE = {
    "paperchat.evaluation.beir": "SciFact benchmark of the retrieval parts: its own BM25 and dense index over SciFact, no library",
    "paperchat.evaluation.corpus": "builds the suite's quality corpus from a full store's search snapshot (its vectors), as demo.build_demo does",
    "paperchat.evaluation.feed_eval": "fits the For you model on simulated researchers' ratings in memory (never written to the catalogue) over the library's feature space",
    "paperchat.evaluation.table_eval": "measures the table builder itself (cells of the gold set) and checks each quote against the PDF's own page text",
}
REACH_THROUGH = {"library", "store", "catalog", "lexical", "collection", "embedder"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _modules() -> list[tuple[str, Path]]:
    return sorted((_module_name(p), p) for p in PKG.rglob("*.py"))


def _edge_of(module: str) -> str | None:
    return next((e for e in EDGES if module == e or module.startswith(e + ".")), None)


def _imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import of a paperchat module, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "paperchat":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "paperchat":
                continue
            if name in ("paperchat", "paperchat.evaluation") or not node.module:
                # `from paperchat import bench` / `from paperchat.evaluation import report` name modules too
                for alias in node.names:
                    sub = f"{name}.{alias.name}"
                    yield node.lineno, sub if (PKG.parent / (sub.replace(".", "/") + ".py")).exists() or (PKG.parent / sub.replace(".", "/")).is_dir() else name
            else:
                yield node.lineno, name


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _allowed(edge: str, name: str) -> bool:
    return name in CORE_SURFACE or _within(name, ("paperchat.assistant", edge, *EDGES[edge]))


EDGE_MODULES = [(m, p) for m, p in _modules() if _edge_of(m) and m not in BELOW_THE_FACADE]


@pytest.mark.parametrize(("module", "path"), EDGE_MODULES, ids=[m for m, _ in EDGE_MODULES])
def test_edges_import_only_the_facade_types_settings_and_errors(module: str, path: Path) -> None:
    edge = _edge_of(module)
    assert edge is not None
    bad = [f"{path.relative_to(SRC)}:{line} imports {name}" for line, name in _imports(module, path) if not _allowed(edge, name)]
    assert not bad, "an edge reaches below the facade (use paperchat.assistant):\n" + "\n".join(bad)


@pytest.mark.parametrize(("module", "path"), EDGE_MODULES, ids=[m for m, _ in EDGE_MODULES])
def test_edges_do_not_reach_through_the_facade(module: str, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [
        f"{path.relative_to(SRC)}:{node.lineno} uses .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in REACH_THROUGH
    ]
    assert not bad, "an edge reaches into the library through the facade (add an Assistant method):\n" + "\n".join(bad)


def test_the_core_never_imports_an_edge() -> None:
    bad = []
    for module, path in _modules():
        if _edge_of(module) or module in BELOW_THE_FACADE:
            continue
        bad += [f"{path.relative_to(SRC)}:{line} imports {name}" for line, name in _imports(module, path) if _within(name, tuple(EDGES))]
    assert not bad, "\n".join(bad)


def test_the_exceptions_still_exist() -> None:
    """An exception for a module that is gone (or renamed) would silently stop checking anything."""
    names = {m for m, _ in _modules()}
    assert set(BELOW_THE_FACADE) <= names
    assert {m for m, _ in EDGE_MODULES} >= {"paperchat.cli", "paperchat.ui.handlers", "paperchat.evaluation.runner", "paperchat.bench"}
