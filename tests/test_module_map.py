"""The module map in docs/architecture.md is generated from the code and stays so: it is what
`scripts/module_map.py` writes (every package and module under src/paperchat, the first sentence of its docstring,
its layer), every module has a docstring, and the prose around the map names no module that is gone.

Read with `ast` (nothing of paperchat is imported), so it is fast."""

from __future__ import annotations

from pathlib import Path

from .conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
FIX = "run `python scripts/module_map.py --write` and commit the result"


gen = load_script("module_map")


def test_architecture_module_map_is_generated_from_the_code() -> None:
    text = gen.DOC.read_text(encoding="utf-8")
    assert gen.START in text and gen.END in text, f"docs/architecture.md lost the module map's markers {gen.START}, {gen.END}"
    assert gen.doc_with_map(text) == text, f"the module map in docs/architecture.md differs from src/paperchat: {FIX}"


def test_every_module_has_a_docstring() -> None:
    missing = gen.undocumented()
    assert not missing, "add a docstring (its first sentence is the module's line in docs/architecture.md):\n" + "\n".join(missing)


def test_every_layer_has_a_name() -> None:
    layers, _ = gen.load_layers()
    assert len(layers) == len(gen.LAYER_NAMES), "tests/test_layers.py's LAYERS and LAYER_NAMES in scripts/module_map.py differ in length"


def test_the_prose_names_no_module_that_is_gone() -> None:
    text = gen.DOC.read_text(encoding="utf-8")
    prose = text[: text.find(gen.START)] + text[text.find(gen.END) :]
    stale = gen.stale_names(prose)
    assert not stale, "docs/architecture.md names modules that are not under src/paperchat: " + ", ".join(stale)


def test_the_map_lists_every_module() -> None:
    files = sorted(p for p in gen.PKG.rglob("*.py") if "__pycache__" not in p.parts and p.name != "__main__.py")
    listed = {m.source for m in gen.modules()}
    missing = [p.relative_to(ROOT).as_posix() for p in files if p.relative_to(ROOT).as_posix() not in listed]
    assert not missing, missing
    block = gen.render()
    assert all(f"`{m.shown}`" in block for m in gen.modules())


def test_first_sentence() -> None:
    fs = gen.first_sentence
    assert fs("One root. Every error says what to do.") == "One root."
    assert fs("First paragraph,\n  wrapped.\n\nSecond paragraph.") == "First paragraph, wrapped."
    assert fs("Exports ids (e.g. an answer's citations) as entries. More.") == "Exports ids (e.g. an answer's citations) as entries."
    assert fs("Runs `python -m x. y` here. More.") == "Runs `python -m x. y` here."
    assert fs("Is it there? Yes") == "Is it there? Yes"
    long = fs("word " * 60)
    assert len(long) <= gen.MAX_CHARS and long.endswith("…")
    code = fs("`" + "--flag " * 40 + "`: what it does.")
    assert code.count("`") % 2 == 0 and len(code) <= gen.MAX_CHARS + 1


def test_markdown_escapes_outside_code_only() -> None:
    assert gen.markdown("'openai:<model>' with `a_b <c>`") == "'openai:\\<model>' with `a_b <c>`"
    assert gen.markdown("nested with __ and table_gold") == "nested with \\_\\_ and table_gold"


def test_a_module_without_a_docstring_is_reported(tmp_path: Path) -> None:
    pkg = tmp_path / "paperchat"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The root."""\n', encoding="utf-8")
    (pkg / "sub" / "__init__.py").write_text('"""A package."""\n', encoding="utf-8")
    (pkg / "sub" / "bare.py").write_text("x = 1\n", encoding="utf-8")
    (pkg / "sub" / "__main__.py").write_text("x = 1\n", encoding="utf-8")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.py").write_text("", encoding="utf-8")
    mods = gen.modules(pkg)
    assert [m.path for m in mods] == ["", "sub/", "sub/bare.py"]
    assert [m.name for m in mods] == ["paperchat", "paperchat.sub", "paperchat.sub.bare"]
    assert [m.docstring is None for m in mods] == [False, False, True]
    assert len(gen.undocumented(mods)) == 1
