"""The layering stays true.

- No import circle between our modules, counting imports inside functions and under TYPE_CHECKING: a circle
  is not dodged by moving an import into a function.
- No arrow up: every module sits in one of LAYERS and imports only its own layer and those below.
- The edges (ui/, cli/, mcp/, evaluation/, bench/) import from paperchat only the facade
  (`paperchat.assistant`), the vocabulary (our types, settings, errors and pure helpers), their own package
  and the edges above them; they never reach through the facade into the library, store or catalogue.

Read from the source with `ast` (nothing is imported), so it is fast and holds for imports inside functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "paperchat"

# the bottom layer: our types, settings, errors and pure helpers (no library, no store, nothing heavy)
VOCABULARY = (
    "paperchat", "paperchat.errors", "paperchat.settings", "paperchat.types", "paperchat.text", "paperchat.dates", "paperchat.hashing",
    "paperchat.ports", "paperchat.tex", "paperchat.workers", "paperchat.progress", "paperchat.prompts", "paperchat.passages",
    "paperchat.citations", "paperchat.query",
)
# lowest first; a module belongs to the layer of its longest listed prefix
LAYERS: list[tuple[str, ...]] = [
    VOCABULARY,
    # reading text; the backends (embedders, answerers)
    ("paperchat.answering", "paperchat.providers", "paperchat.tables.columns", "paperchat.fusion"),
    # storage
    ("paperchat.store", "paperchat.catalog", "paperchat.topics", "paperchat.reading", "paperchat.search_index", "paperchat.fields", "paperchat.writer"),
    ("paperchat.library",),  # the open stores together
    ("paperchat.retrieval", "paperchat.discovery", "paperchat.digest", "paperchat.foryou", "paperchat.importing", "paperchat.bibtex",
     "paperchat.ingestion", "paperchat.demo", "paperchat.feed", "paperchat.doctor", "paperchat.reader"),  # what is done with a library
    ("paperchat.qa", "paperchat.tables"),  # answers and tables over retrieval and the reader
    ("paperchat.assistant",),  # the facade
    ("paperchat.evaluation", "paperchat.bench", "paperchat.mcp", "paperchat.tables.train", "paperchat.reader.papers"),  # edges over the facade
    ("paperchat.ui",),
    ("paperchat.cli",),
    ("paperchat.launch", "paperchat.cli.__main__"),  # the entry points
]
CORE_SURFACE = (*VOCABULARY, "paperchat.assistant", "paperchat.tables.columns")
# edge -> the edges it may call (higher or peer layers: the CLI starts the app, runs evaluations and benchmarks)
EDGES: dict[str, tuple[str, ...]] = {
    # launch: the entry point guarding the CLI's import
    "paperchat.cli": ("paperchat.ui", "paperchat.evaluation", "paperchat.bench", "paperchat.mcp", "paperchat.launch"),
    "paperchat.mcp": (),
    "paperchat.launch": ("paperchat.cli",),
    "paperchat.ui": ("paperchat.evaluation",),  # the app's Evaluation tab shows the latest report
    "paperchat.evaluation": (),
    "paperchat.bench": ("paperchat.evaluation.lab",),  # the benchmarks' instruments
    "paperchat.tables.train": (),
    "paperchat.reader.papers": ("paperchat.evaluation",),  # SciFact's benchmark index gives its hard negatives
}
# modules that measure the parts below the facade themselves, and why
BELOW_THE_FACADE = {
    "paperchat.evaluation.beir": "SciFact benchmark of the retrieval parts: its own BM25 and dense index over SciFact, no library",
    "paperchat.evaluation.corpus": "builds the suite's quality corpus from a full store's search snapshot (its vectors), as demo.build_demo does",
    "paperchat.evaluation.feed_eval": (
        "fits the For you model on simulated researchers' ratings in memory (never written to the catalogue) over the library's feature space"
    ),
    "paperchat.evaluation.table_eval": "measures the table builder itself (cells of the gold set) and checks each quote against the PDF's own page text",
    "paperchat.evaluation.lab": "the evaluation-side facade: the instruments benchmarks and evaluations need below the app's facade",
    "paperchat.tables.train": "trains the cell picker over the table builder itself",
    "paperchat.reader.papers": "trains the paper reranker with the sentence reader's trainer, on SciFact's own benchmark index (evaluation.beir)",
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
            for alias in node.names:
                # `from paperchat import bench` / `from paperchat.ui import handlers` import the module named
                sub = f"{name}.{alias.name}"
                yield node.lineno, sub if (SRC / (sub.replace(".", "/") + ".py")).exists() or (SRC / sub.replace(".", "/")).is_dir() else name


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


def _graph() -> dict[str, set[str]]:
    """Module -> the modules it imports (a package's name stands for its __init__)."""
    mods = dict(_modules())
    graph: dict[str, set[str]] = {}
    for module, path in mods.items():
        deps = set()
        for _, name in _imports(module, path):
            while name and name not in mods:
                name = name.rpartition(".")[0]
            if name and name != module:
                deps.add(name)
        graph[module] = deps
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _layer(module: str) -> int:
    best, rank = "", -1
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            inside = module == prefix or (prefix != "paperchat" and module.startswith(prefix + "."))  # "paperchat": its __init__ only
            if inside and len(prefix) > len(best):
                best, rank = prefix, i
    return rank


def test_no_import_circles() -> None:
    circles = _circles(_graph())
    assert not circles, "import circles (an import inside a function or under TYPE_CHECKING counts):\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_every_module_has_a_layer() -> None:
    missing = [m for m, _ in _modules() if _layer(m) < 0]
    assert not missing, "add these modules to a layer in LAYERS: " + ", ".join(missing)


def test_no_arrow_up() -> None:
    """A module imports only its own layer and those below (so a new module cannot quietly invert the house)."""
    graph = _graph()
    bad = [f"{m} (layer {_layer(m)}) imports {d} (layer {_layer(d)})" for m, deps in graph.items() for d in sorted(deps) if _layer(d) > _layer(m)]
    assert not bad, "\n".join(bad)
