"""The module map of docs/architecture.md, generated from the code (between `<!-- modules:start -->` and
`<!-- modules:end -->`): every package and module under src/paperchat with the first sentence of its docstring and
its layer from tests/test_layers.py.

    python scripts/module_map.py --write   # rewrite the map from the code
    python scripts/module_map.py --check   # exit 1 when the map is stale, a module has no docstring, or the
                                           # prose around the map names a module that is gone

Docstrings are read with `ast` (nothing of paperchat is imported); the layers come from `LAYERS` and `_layer` in
tests/test_layers.py, named by `LAYER_NAMES` below. A module moved, added or removed needs only `--write`.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = SRC / "paperchat"
DOC = ROOT / "docs" / "architecture.md"
LAYERS_FILE = ROOT / "tests" / "test_layers.py"
START, END = "<!-- modules:start -->", "<!-- modules:end -->"
WRITE_HINT = "run `python scripts/module_map.py --write`"
SKIP_DIRS = {"__pycache__"}
SKIP_FILES = {"__main__.py"}
MAX_CHARS = 160  # the longest summary shown, the ellipsis included

# the names of tests/test_layers.py's LAYERS, lowest first (a layer added there needs its name here)
LAYER_NAMES = [
    "vocabulary",
    "text and backends",
    "storage",
    "library",
    "library work",
    "answers and tables",
    "facade",
    "edges over the facade",
    "app",
    "command line",
    "entry points",
]
# a '.' followed by a space after these does not end a sentence
ABBREVIATIONS = {"e.g", "i.e", "etc", "cf", "vs", "approx", "incl"}


@dataclass(frozen=True)
class Module:
    """One package or module of src/paperchat, as the map shows it."""

    name: str  # dotted, as imported: paperchat.store, paperchat.answering (a package)
    path: str  # relative to src/paperchat: "store.py", "answering/", "answering/text.py"; the root is ""
    depth: int  # 0 for the root package
    package: bool
    docstring: str | None  # None: no docstring (or no __init__.py, or the file does not parse)
    problem: str | None = None  # why there is no docstring, when it is not simply missing

    @property
    def shown(self) -> str:
        """The path as the map shows it (the root as `src/paperchat/`)."""
        return self.path or "src/paperchat/"

    @property
    def source(self) -> str:
        """The file that holds the docstring, relative to the project."""
        rel = PKG.relative_to(ROOT).as_posix() + "/" + self.path
        return rel + "__init__.py" if self.package else rel


def _docstring(path: Path) -> tuple[str | None, str | None]:
    """(docstring, problem) of a Python file, read with `ast`."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
        return None, f"does not parse ({exc.__class__.__name__}: {exc})"
    doc = ast.get_docstring(tree, clean=True)
    return (doc if doc and doc.strip() else None), None


def _holds_python(folder: Path) -> bool:
    return any(p.suffix == ".py" and not SKIP_DIRS & set(p.relative_to(folder).parts) for p in folder.rglob("*.py"))


def modules(pkg: Path = PKG) -> list[Module]:
    """Every package and module under `pkg`, depth first, each folder's entries sorted by name (a package before
    its contents). Skips `__pycache__`, `__main__.py` and folders without Python files (templates)."""
    out: list[Module] = []

    def walk(folder: Path, depth: int) -> None:
        rel = folder.relative_to(pkg).as_posix()
        path = "" if rel == "." else rel + "/"
        name = ".".join([pkg.name, *([] if rel == "." else rel.split("/"))])
        init = folder / "__init__.py"
        doc, problem = _docstring(init) if init.is_file() else (None, "has no __init__.py")
        out.append(Module(name, path, depth, True, doc, problem))
        entries = []
        for child in folder.iterdir():
            if child.name.startswith("."):
                continue
            if child.is_dir() and child.name not in SKIP_DIRS and _holds_python(child):
                entries.append((child.name, child))
            elif child.is_file() and child.suffix == ".py" and child.name != "__init__.py" and child.name not in SKIP_FILES:
                entries.append((child.stem, child))
        for _, child in sorted(entries):
            if child.is_dir():
                walk(child, depth + 1)
            else:
                doc, problem = _docstring(child)
                out.append(Module(f"{name}.{child.stem}", path + child.name, depth + 1, False, doc, problem))

    walk(pkg, 0)
    return out


def _outside_code(text: str, pos: int) -> bool:
    """Whether `pos` lies outside `code spans` (an even number of backticks before it)."""
    return text.count("`", 0, pos) % 2 == 0


def first_sentence(doc: str, limit: int = MAX_CHARS) -> str:
    """The first sentence of a docstring: up to the first '. ' (not inside a code span, after an abbreviation such
    as e.g., or in an ellipsis) or the end of the first paragraph, whitespace collapsed, cut at a word with '…' when
    longer than `limit` characters."""
    paragraph = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0]
    text = " ".join(paragraph.split())
    for match in re.finditer(r"(?<!\.)\.(?=\s)", text):
        end = match.start()
        word = re.search(r"[\w.]*$", text[:end])
        if word and word.group().lower() in ABBREVIATIONS:
            continue
        if _outside_code(text, end):
            text = text[: end + 1]
            break
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    if not _outside_code(cut, len(cut)):  # never leave a code span open: end before it, or close it when it is most of the line
        before = cut[: cut.rfind("`")].rstrip(" ,;:-([")
        return before + "…" if len(before) >= limit // 2 else cut.rstrip() + "`…"
    return cut.rstrip(" ,;:-([") + "…"


def markdown(text: str) -> str:
    """Docstring text for a Markdown line: outside code spans, `\\ * < $` and a `_` not inside a word are escaped
    so they show as written (`<model>` is not an HTML tag, `$^2$` not math, `__` not bold)."""
    if text.count("`") % 2:  # an unclosed backtick: show it as a character
        head, _, tail = text.rpartition("`")
        return markdown(head) + "\\`" + markdown(tail)
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"[\\*<$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", lambda m: "\\" + m.group(), parts[i])
    return "`".join(parts)


def load_layers(path: Path = LAYERS_FILE) -> tuple[list[tuple[str, ...]], Callable[[str], int]]:
    """`LAYERS` and `_layer` of tests/test_layers.py, loaded from its path (it imports only the standard library
    and pytest, and reads src with `ast`)."""
    spec = importlib.util.spec_from_file_location("_module_map_layers", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.LAYERS), mod._layer


def layer_name(index: int) -> str:
    """The name of a layer ('unnamed' for one that LAYER_NAMES lacks)."""
    return LAYER_NAMES[index] if 0 <= index < len(LAYER_NAMES) else "unnamed"


def layer_label(module: str, layers: Sequence[tuple[str, ...]], layer_of: Callable[[str], int]) -> str:
    """How the map names a module's layer: its index and name, and a warning when no entry of LAYERS places it (a
    submodule falls into the root package's layer only by its name: test_layers counts it as placed)."""
    index = layer_of(module)
    if index < 0:
        return "no layer: add it to LAYERS in tests/test_layers.py"
    label = f"layer {index}: {layer_name(index)}"
    root = PKG.name
    placed = any(p != root and (module == p or module.startswith(p + ".")) for layer in layers for p in layer)
    if module != root and not placed:
        label += f", only as part of `{root}`: not named in LAYERS"
    return label


def render(
    mods: Sequence[Module] | None = None, layers: Sequence[tuple[str, ...]] | None = None, layer_of: Callable[[str], int] | None = None
) -> str:
    """The generated block between the markers (Markdown, ending in a newline)."""
    if mods is None:
        mods = modules()
    if layers is None or layer_of is None:
        layers, layer_of = load_layers()
    legend = ", ".join(f"{i} {layer_name(i)}" for i in range(len(layers)))
    lines = [
        "<!-- generated from the docstrings and tests/test_layers.py by `python scripts/module_map.py --write`: do not edit by hand -->",
        "",
        f"Layers, lowest first: {legend}.",
        "",
    ]
    for m in mods:
        summary = markdown(first_sentence(m.docstring)) if m.docstring else f"**no docstring** ({m.problem or 'add one'})"
        lines.append(f"{'  ' * m.depth}- `{m.shown}` - {summary} *({layer_label(m.name, layers, layer_of)})*")
    return "\n".join(lines) + "\n"


def doc_with_map(text: str, block: str | None = None) -> str:
    """The text of docs/architecture.md with the generated map between the markers.

    Raises:
        ValueError: the markers are missing (or out of order).
    """
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"docs/architecture.md needs the lines {START} and {END} around the module map")
    return text[: start + len(START)] + "\n" + (render() if block is None else block) + text[end:]


def undocumented(mods: Sequence[Module] | None = None) -> list[str]:
    """The modules without a docstring, one line each (empty: all have one)."""
    return [f"{m.source}: {m.problem or 'no docstring'}" for m in (modules() if mods is None else mods) if m.docstring is None]


def _module_files() -> set[str]:
    return {p.relative_to(SRC).with_suffix("").as_posix() for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


def _top_level_names(path: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def stale_names(text: str) -> list[str]:
    """Names of modules in `text` that do not exist: `paperchat.x.y` (a module, or a module and one of its top-level
    names) and `x.py` / `x/y.py` paths (under src/paperchat at any depth, or from the project root)."""
    files = _module_files()
    bad = []
    for name in sorted(set(re.findall(r"\bpaperchat(?:\.\w+)+", text))):
        parts = name.split(".")
        known = False
        for n in range(len(parts), 0, -1):
            mod = "/".join(parts[:n])
            if mod in files or mod + "/__init__" in files:
                rest = parts[n:]
                file = SRC / (mod + ".py") if mod in files else SRC / mod / "__init__.py"
                known = not rest or (len(rest) == 1 and rest[0] in _top_level_names(file))
                break
        if not known:
            bad.append(name)
    paths = {f + ".py" for f in files}
    for token in sorted(set(re.findall(r"(?<![\w./-])((?:\w+/)*\w+\.py)\b", text))):
        if not ((ROOT / token).is_file() or any(p == "paperchat/" + token or p.endswith("/" + token) for p in paths)):
            bad.append(token)
    return bad


def problems(doc_path: Path = DOC) -> list[str]:
    """What is wrong, one line each (empty: the map is current and every module has a docstring)."""
    mods = modules()
    layers, layer_of = load_layers()
    out = [f"no docstring: {line} (its first sentence is its line in the module map)" for line in undocumented(mods)]
    if len(layers) != len(LAYER_NAMES):
        out.append(
            f"tests/test_layers.py has {len(layers)} layers, LAYER_NAMES in scripts/module_map.py names {len(LAYER_NAMES)}: "
            "name each layer there"
        )
    text = doc_path.read_text(encoding="utf-8") if doc_path.is_file() else ""
    try:
        current = doc_with_map(text, render(mods, layers, layer_of)) == text
    except ValueError as exc:
        out.append(f"{exc}; then {WRITE_HINT}")
    else:
        if not current:
            out.append(f"the module map in {doc_path.name} differs from src/paperchat; {WRITE_HINT}")
        start, end = text.find(START), text.find(END)
        prose = text[:start] + text[end:]
        out += [f"{doc_path.name} names {name}, which is not under src/paperchat (any more)" for name in stale_names(prose)]
    return out


def write(doc_path: Path = DOC) -> bool:
    """Rewrite the module map in docs/architecture.md; True when the file changed."""
    text = doc_path.read_text(encoding="utf-8")
    new = doc_with_map(text)
    if new == text:
        return False
    doc_path.write_text(new, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    """`--write` or `--check`; exit 1 when `--check` finds a problem."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the module map in docs/architecture.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when the map is stale or a module has no docstring")
    args = parser.parse_args(argv)
    if args.write:
        changed = write()
        print(f"wrote {DOC.relative_to(ROOT)}" if changed else "up to date")
        for line in undocumented():
            print(f"warning: no docstring: {line}", file=sys.stderr)
        return 0
    found = problems()
    print("\n".join(found) or "up to date", file=sys.stderr if found else sys.stdout)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
