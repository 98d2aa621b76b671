"""The settings' docs are generated from `Settings` and stay so: `.env.example` and the README's table are what
`scripts/settings_docs.py` writes, every setting is in `.env.example` with its real default, and every description
is one short line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import BaseModel

from paperchat.settings import PROJECT_ROOT, Settings, setting_names

from .conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
FIX = "run `python scripts/settings_docs.py --write` and commit the result"


docs = load_script("settings_docs")


def _models(model: type[BaseModel] = Settings) -> list[type[BaseModel]]:
    out = [model]
    for info in model.model_fields.values():
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            out += _models(sub)
    return out


def test_env_example_is_generated_from_settings() -> None:
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert text == docs.env_example(), f".env.example differs from src/paperchat/settings.py: {FIX}"


def test_readme_settings_table_is_generated_from_settings() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert docs.START in readme and docs.END in readme, f"README.md lost the table's markers {docs.START}, {docs.END}"
    assert docs.readme_with_table(readme) == readme, f"the settings table in README.md differs from Settings: {FIX}"


def test_every_setting_is_in_env_example() -> None:
    lines = [ln.removeprefix("# ") for ln in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()]
    missing = [n for n in setting_names() if not any(ln.startswith((n + "=", n + "__")) for ln in lines)]
    assert not missing, f".env.example misses {', '.join(missing)}: {FIX}"


def test_env_example_reads_back_as_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Copied to .env, the example changes nothing: each value it sets is the setting's default."""
    for name in list(os.environ):
        if name.upper().startswith("PAPERCHAT_"):
            monkeypatch.delenv(name)
    loaded = Settings(_env_file=ROOT / ".env.example")
    default = Settings(_env_file=None)
    assert not loaded.topics_file.is_absolute()  # shown relative to the project, as the docs must
    loaded.topics_file = PROJECT_ROOT / loaded.topics_file
    assert loaded.model_dump() == default.model_dump()


def test_docs_hold_no_path_of_this_machine() -> None:
    assert str(PROJECT_ROOT) not in docs.env_example()
    assert str(PROJECT_ROOT) not in docs.settings_table()


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_each_description_is_one_short_line(model: type[BaseModel]) -> None:
    for name, info in model.model_fields.items():
        text = info.description or ""
        assert text.strip(), f"{model.__name__}.{name} has no description"
        assert "\n" not in text, f"{model.__name__}.{name}: the description is more than one line"
        assert len(text) <= 100, (
            f"{model.__name__}.{name}: the description is {len(text)} characters (at most 100; a default's history "
            "goes to docs/measured.md, Where the settings' defaults come from)"
        )
