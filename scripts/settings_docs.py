"""The settings' documentation, generated from `paperchat.settings.Settings`: the whole `.env.example` and the
README's settings table (between `<!-- settings:start -->` and `<!-- settings:end -->`).

    python scripts/settings_docs.py --write   # rewrite both from the model
    python scripts/settings_docs.py --check   # exit 1 when either differs (tests/test_settings_docs.py checks the same)

Every setting is listed with its real default (a path under the project is shown relative to it) and its
one-line description. Top-level settings are grouped by `GROUPS` below; a nested model (RetrievalSettings ...)
is a group of its own, named as `PAPERCHAT_RETRIEVAL__K`. A new top-level setting missing from `GROUPS` still
appears, under "Other settings".
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from paperchat.settings import PROJECT_ROOT, Settings

ROOT = Path(__file__).resolve().parents[1]
ENV_EXAMPLE = ROOT / ".env.example"
README = ROOT / "README.md"
START, END = "<!-- settings:start -->", "<!-- settings:end -->"
WRITE_HINT = "run `python scripts/settings_docs.py --write`"

# (title, top-level fields), in the order they are shown; a field holding a nested model is expanded to its fields
GROUPS: list[tuple[str, list[str]]] = [
    (
        "Storage and ingest",
        ["data_dir", "embedder", "device", "models_dir", "batch_size", "chunk_size", "chunk_overlap", "pdf_extractor",
         "pdf_timeout_s", "max_pdf_mb", "max_pdf_pages", "max_record_line_mb", "topics_file", "chroma_url"],
    ),
    (
        "Answerers and LLMs",
        ["answerer", "reader", "llm_base_url", "llm_timeout_s", "llm_max_retries", "judge", "max_question_chars"],
    ),
    ("Retrieval", ["retrieval"]),
    ("Answers and refusals", ["answers"]),
    ("The local model (`local` answerer)", ["local"]),
    (
        "The app, the paper viewer and MCP",
        ["host", "port", "auth", "viewer_scale", "viewer_cache_mb", "mcp_allowed_folders", "mcp_token"],
    ),
    (
        "The live arXiv feed (`paperchat update`)",
        ["arxiv_categories", "arxiv_api_url", "arxiv_delay_s", "arxiv_page_size", "arxiv_max_papers", "arxiv_retries",
         "arxiv_timeout_s", "arxiv_run_timeout_s"],
    ),
]
OTHER = "Other settings"
# lines of .env.example that are not paperchat settings, written after the entry of the named field
EXTRA_ENV_LINES: dict[str, list[str]] = {
    "llm_base_url": [
        "# the key of an OpenAI(-compatible) endpoint, read by the OpenAI SDK itself",
        "# OPENAI_API_KEY=sk-...",
    ],
}
ENV_HEADER = [
    "# Every paperchat setting with its default, generated from src/paperchat/settings.py by",
    "# `python scripts/settings_docs.py --write` (do not edit by hand). Copy to .env and edit: the environment wins",
    "# over .env, and a line left commented out is unset.",
]


@dataclass
class Entry:
    """One setting: its environment name, its default as written in .env (None: unset) and what it does."""

    env: str
    default: str | None
    description: str
    field: str  # the field of Settings it is, or belongs to (a nested model's)
    nested: bool = False


@dataclass
class Group:
    """Settings shown together under one title."""

    title: str
    entries: list[Entry] = field(default_factory=list)


def _prefix_and_delimiter() -> tuple[str, str]:
    conf = Settings.model_config
    return str(conf.get("env_prefix") or ""), str(conf.get("env_nested_delimiter") or "__")


def _nested(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def show_path(path: Path) -> str:
    """A path as the docs show it: relative to the project when it lies inside it (no machine's own folders)."""
    if path.is_absolute():
        try:
            return path.relative_to(PROJECT_ROOT).as_posix()
        except ValueError:
            return path.as_posix()
    return path.as_posix()


def env_value(value: Any) -> str | None:
    """A default as written in .env (what pydantic-settings reads back to the same value); None when unset."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return show_path(value)
    if isinstance(value, (list, tuple, set, dict)):  # complex values are JSON in the environment
        items = [show_path(v) if isinstance(v, Path) else v for v in value] if not isinstance(value, dict) else value
        return json.dumps(items)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _entries(
    model: type[BaseModel], names: list[str], env_prefix: str, delimiter: str, top: str | None = None
) -> list[Entry]:
    out = []
    for name in names:
        info = model.model_fields[name]
        env = env_prefix + name.upper()
        sub = _nested(info.annotation)
        if sub is not None:
            out += _entries(sub, list(sub.model_fields), env + delimiter, delimiter, top or name)
            continue
        default = info.get_default(call_default_factory=True)
        out.append(Entry(env, env_value(default), info.description or "", top or name, nested=top is not None))
    return out


def groups() -> list[Group]:
    """Every setting of `Settings`, grouped as the docs show them.

    Raises:
        KeyError: `GROUPS` names a field that `Settings` does not have (renamed or removed: update `GROUPS`).
    """
    prefix, delimiter = _prefix_and_delimiter()
    fields = Settings.model_fields
    unknown = [n for _, names in GROUPS for n in names if n not in fields]
    if unknown:
        raise KeyError(f"scripts/settings_docs.py GROUPS names fields Settings does not have: {', '.join(unknown)}")
    out = [Group(title, _entries(Settings, names, prefix, delimiter)) for title, names in GROUPS]
    placed = {n for _, names in GROUPS for n in names}
    rest = [n for n in fields if n not in placed]
    if rest:
        out.append(Group(OTHER, _entries(Settings, rest, prefix, delimiter)))
    return out


def env_example() -> str:
    """The whole text of `.env.example`."""
    lines = list(ENV_HEADER)
    for group in groups():
        lines += ["", f"# == {group.title} =="]
        for e in group.entries:
            lines.append(f"# {e.description}")
            lines.append(f"{e.env}={e.default}" if e.default is not None else f"# {e.env}=")
            if not e.nested:
                lines += EXTRA_ENV_LINES.get(e.field, [])
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: `|` escaped everywhere, and `<`, `*` outside code spans (so `<model>` shows
    as written instead of as an HTML tag)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # the even parts lie outside code spans
        parts[i] = parts[i].replace("<", "\\<").replace("*", "\\*")
    return "`".join(parts).replace("|", "\\|")


def settings_table() -> str:
    """The README's settings table (Markdown), one row per setting under a row per group."""
    lines = ["| variable | default | what it does |", "|---|---|---|"]
    for group in groups():
        lines.append(f"| **{_cell(group.title)}** | | |")
        for e in group.entries:
            default = f"`{e.default}`" if e.default is not None else "unset"
            lines.append(f"| `{e.env}` | {_cell(default)} | {_cell(e.description)} |")
    return "\n".join(lines) + "\n"


def readme_with_table(readme: str) -> str:
    """The README text with the generated table between the markers.

    Raises:
        ValueError: the README lacks the markers (or has them out of order).
    """
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md needs the lines {START} and {END} around the settings table")
    return readme[: start + len(START)] + "\n" + settings_table() + readme[end:]


def problems(env_path: Path = ENV_EXAMPLE, readme_path: Path = README) -> list[str]:
    """What differs from the generated docs, one line each (empty: both are current)."""
    out = []
    if not env_path.is_file() or env_path.read_text(encoding="utf-8") != env_example():
        out.append(f"{env_path.name} differs from the settings in src/paperchat/settings.py; {WRITE_HINT}")
    readme = readme_path.read_text(encoding="utf-8") if readme_path.is_file() else ""
    try:
        current = readme_with_table(readme) == readme
    except ValueError as exc:
        out.append(f"{exc}; then {WRITE_HINT}")
    else:
        if not current:
            out.append(f"the settings table in {readme_path.name} differs from src/paperchat/settings.py; {WRITE_HINT}")
    return out


def write(env_path: Path = ENV_EXAMPLE, readme_path: Path = README) -> list[Path]:
    """Rewrite `.env.example` and the README's table; returns the files that changed."""
    changed = []
    text = env_example()
    if not env_path.is_file() or env_path.read_text(encoding="utf-8") != text:
        env_path.write_text(text, encoding="utf-8")
        changed.append(env_path)
    readme = readme_path.read_text(encoding="utf-8")
    new = readme_with_table(readme)
    if new != readme:
        readme_path.write_text(new, encoding="utf-8")
        changed.append(readme_path)
    return changed


def main(argv: list[str] | None = None) -> int:
    """`--write` or `--check`; exit 1 when `--check` finds a difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite .env.example and the README's settings table")
    mode.add_argument("--check", action="store_true", help="exit 1 when either differs from what --write would write")
    args = parser.parse_args(argv)
    if args.write:
        changed = write()
        print("\n".join(f"wrote {p.relative_to(ROOT)}" for p in changed) or "up to date")
        return 0
    found = problems()
    print("\n".join(found) or "up to date", file=sys.stderr if found else sys.stdout)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
