"""The real `paperchat` command, run as a subprocess: a user error is one line that says what to do, and a
non-zero exit; never a traceback. No model and no store are needed: every case fails before one opens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def paperchat(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m paperchat.cli` in tmp_path (no .env of the repo) with extra environment variables."""
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("PAPERCHAT_") or k in ("PAPERCHAT_TEST_DATA", "PAPERCHAT_TEST_CHROMA_URL")}
    full = {**base, "PAPERCHAT_DATA_DIR": str(tmp_path / "store"), **env}
    return subprocess.run([sys.executable, "-m", "paperchat.cli", *args], capture_output=True, text=True, cwd=tmp_path, env=full, timeout=120)


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == "", r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_a_bad_setting_value_is_one_line(tmp_path: Path) -> None:
    line = one_line_error(paperchat(tmp_path, "topics", PAPERCHAT_CHUNK_SIZE="abc"))
    assert line.startswith("paperchat: error: bad setting PAPERCHAT_CHUNK_SIZE='abc': Input should be a valid integer"), line
    assert "fix the value or unset it" in line
    line = one_line_error(paperchat(tmp_path, "topics", PAPERCHAT_RETRIEVAL__K="0"))
    assert "PAPERCHAT_RETRIEVAL__K='0': Input should be greater than or equal to 1" in line


@pytest.mark.parametrize(("name", "closest"), [("PAPERCHAT_RETRIEVAL__KK", "PAPERCHAT_RETRIEVAL__K"), ("PAPERCHAT_CHUNKSIZE", "PAPERCHAT_CHUNK_SIZE")])
def test_an_unknown_setting_is_refused_with_the_closest_name(tmp_path: Path, name: str, closest: str) -> None:
    line = one_line_error(paperchat(tmp_path, "topics", **{name: "3"}))
    assert line.startswith(f"paperchat: error: unknown setting {name} in the environment (did you mean {closest}?"), line


def test_an_unknown_setting_in_dotenv_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PAPERCHAT_ANSWERRER=extractive\n")
    line = one_line_error(paperchat(tmp_path, "topics"))
    assert "unknown setting PAPERCHAT_ANSWERRER in .env (did you mean PAPERCHAT_ANSWERER?" in line


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    line = one_line_error(paperchat(tmp_path, "ask"))
    assert line == "paperchat ask: error: the following arguments are required: question (run `paperchat ask --help` for the usage)"
    line = one_line_error(paperchat(tmp_path, "ask", "why?", "-k", "99"))
    assert "-k must be between 1 and 50, not 99" in line
    line = one_line_error(paperchat(tmp_path, "ingest", "pdf", "a.pdf", "b.pdf", "--paper-id", "2005.11401"))
    assert line == "paperchat: error: --paper-id needs exactly one PDF (give one file, or leave --paper-id out)"


def test_the_test_suites_own_variables_are_allowed(tmp_path: Path) -> None:
    records = tmp_path / "one.jsonl"
    records.write_text(json.dumps({"id": "2005.11401", "title": "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
                                   "abstract": "We explore retrieval-augmented generation.", "update_date": "2020-05-22"}) + "\n")
    env = {"PAPERCHAT_TEST_DATA": str(tmp_path), "PAPERCHAT_TEST_CHROMA_URL": "http://127.0.0.1:1", "PAPERCHAT_LOAD_SECONDS": "1"}
    r = paperchat(tmp_path, "topics", "--check", str(records), **env)
    assert r.returncode == 0 and "1 papers" in r.stdout, r.stderr


def test_every_variable_the_test_command_exports_is_accepted() -> None:
    """scripts/test.sh exports PAPERCHAT_TEST_* names to every command the tests start: the settings check
    must know them, or every CLI call in the suite fails with 'unknown setting' (it did, once)."""
    import re

    from paperchat.settings import check_environment

    root = Path(__file__).resolve().parents[1]
    exported = set(re.findall(r"export (PAPERCHAT_\w+)=", (root / "scripts" / "test.sh").read_text()))
    assert {"PAPERCHAT_TEST_DATA", "PAPERCHAT_TEST_CHROMA_URL", "PAPERCHAT_TEST_RAY_ADDRESS"} <= exported
    check_environment({name: "x" for name in exported}, env_file=None)
