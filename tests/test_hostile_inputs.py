"""Hostile and careless inputs, round two (RELIABILITY.md, "Round two"): terminal escapes, a lone
surrogate, implausible dates, inputs without bounds (huge lines, sparse files, blank gigabytes),
arguments out of range, `--pdf FOLDER`, JSON arrays and numeric ids, files with no pages, and parser
workers that outlive a killed ingest. The full-size inputs run in `scripts/hostile_round.py`.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from paperchat.cli import main
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.store import StoredChunk
from paperchat.text import printable, strip_control
from paperchat.topics import momentum
from paperchat.types import Paper
from tests.conftest import ROOT, read_sample
from tests.pdfmaker import blank_pdf, make_pdf


@pytest.fixture
def library(hashing_library: Library) -> Library:
    """An empty store over the hashing embedder: nothing here depends on what the vectors mean."""
    return hashing_library


def _records(n: int) -> list[dict[str, object]]:
    return [json.loads(line) for line in read_sample(n)]


def _write(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# -- 3. terminal escapes -------------------------------------------------------------------------


def test_control_characters_are_stripped_at_ingest_and_print(library: Library, tmp_path: Path, shared: Path) -> None:
    rec = _records(1)[0]
    rec["title"] = "\x1b[31mRed\x1b[0m title\x07 with\x00 a bell \x1b]0;pwned\x07and \u202eRTL"
    rec["authors"] = ["\x1b[2JAda Lovelace", "Bob\x08\x08\x08Eve"]
    rep = Ingester(library).ingest_records(read_records(_write(tmp_path / "esc.jsonl", [rec])))
    assert rep.papers == 1 and not rep.failed
    p = library.catalog.get(str(rec["id"]))
    assert p is not None and p.title == "Red title with a bell and RTL", p.title
    assert p.authors == ["Ada Lovelace", "BobEve"]
    hostile = "a\x1b[31mb\x9b2Jc\x07d\x00e\x7ff\ud800g\n\th"
    assert printable(hostile) == "abcdef\ufffdg\n\th"
    assert strip_control("plain text, unchanged") == "plain text, unchanged"


# -- 6. one bad record of many ---------------------------------------------------------------------


def test_a_lone_surrogate_does_not_lose_the_batch(library: Library, tmp_path: Path, shared: Path) -> None:
    recs = _records(40)
    src = tmp_path / "surrogate.jsonl"
    lines = [json.dumps(r) for r in recs]
    lines[17] = lines[17].replace('"title": "', '"title": "\\ud800 ', 1)  # a valid JSON escape, not valid UTF-8
    src.write_text("\n".join(lines) + "\n")
    rep = Ingester(library).ingest_records(read_records(src))
    assert rep.papers == 40 and rep.exit_code == 0, rep.failed
    assert library.catalog.count() == 40
    assert library.catalog.get(str(recs[17]["id"])).title.startswith("\ufffd ")  # type: ignore[union-attr]


def test_a_record_the_store_refuses_fails_alone(library: Library, tmp_path: Path, shared: Path) -> None:
    # Chroma and SQLite refusing one record is hard to provoke for real: a store that refuses one id
    recs = _records(20)
    bad_id = str(recs[5]["id"])
    real_upsert = library.store.upsert

    def refusing(chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        if any(c.paper_id == bad_id for c in chunks):
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        real_upsert(chunks, vectors)

    library.store.upsert = refusing  # type: ignore[method-assign]
    rep = Ingester(library).ingest_records(read_records(_write(tmp_path / "r.jsonl", recs)))
    assert rep.papers == 19 and library.catalog.count() == 19
    (fail,) = rep.failures
    assert fail.source == bad_id and "UnicodeEncodeError" in fail.reason and rep.exit_code == 1


# -- 7. implausible dates ------------------------------------------------------------------------------


def test_implausible_dates_are_reported_and_ignored(library: Library, tmp_path: Path, shared: Path) -> None:
    recs = _records(6)
    recs[0]["listing_date"] = "9999-12-31"
    recs[1]["listing_date"] = "1970-01-01"
    rep = Ingester(library).ingest_records(read_records(_write(tmp_path / "dates.jsonl", recs)))
    assert rep.papers == 6 and rep.exit_code == 0
    notes = [f for f in rep.failed if f.kept]
    assert len(notes) == 2 and all("not plausible" in f.reason for f in notes)
    assert library.catalog.get(str(recs[0]["id"])).date is None  # type: ignore[union-attr]
    real = max(library.catalog.topic_dates(None))
    assert real < dt.date.today()
    # a store written before this check still holds the outlier: it never becomes "now"
    m = momentum([dt.date(9999, 12, 31), dt.date(1970, 1, 1), real], {})
    assert m.now == real and m.recent == 1


# -- 10. bounded reading ---------------------------------------------------------------------------------


def _peak_mb(fn) -> tuple[object, float]:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


@pytest.mark.slow  # 64 MB inputs
def test_reading_records_is_bounded(tmp_path: Path, shared: Path) -> None:
    good = json.dumps(_records(1)[0])
    # a gzip file that expands to a 64 MB line with no newline, then one good record
    gz = tmp_path / "bomb.jsonl.gz"
    with gzip.open(gz, "wb") as fh:
        for _ in range(64):
            fh.write(b"x" * (1 << 20))
        fh.write(b"\n" + good.encode() + b"\n")
    items, peak = _peak_mb(lambda: list(read_records(gz, max_line_bytes=8 << 20)))
    fails = [i for i in items if not isinstance(i, Paper)]
    assert [type(i).__name__ for i in items] == ["Failure", "Paper"], items
    assert "line 1 is longer than 8 MB" in fails[0].reason and "JSONL" in fails[0].reason  # type: ignore[union-attr]
    assert peak < 40, f"peak {peak:.0f} MB"
    # a sparse file of NULs: refused from its first block
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(2 << 30)
    t0 = time.perf_counter()
    (fail,) = list(read_records(sparse))
    assert "binary" in fail.reason and time.perf_counter() - t0 < 2  # type: ignore[union-attr]
    # 64 MB of blank lines: read at block speed, then said to hold no records
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n" * (64 << 20))
    items, peak = _peak_mb(lambda: list(read_records(blank)))
    assert len(items) == 1 and "no records" in items[0].reason and peak < 40  # type: ignore[union-attr]
    # the limit holds for a whole line inside one block too, not only at block edges
    inner = tmp_path / "inner.jsonl"
    inner.write_bytes(good.encode() + b"\n" + b"y" * 600_000 + b"\n" + good.encode().replace(b"25", b"26", 1) + b"\n")
    kinds = [type(i).__name__ for i in read_records(inner, max_line_bytes=500_000)]
    assert kinds == ["Paper", "Failure", "Paper"], kinds
    # a truncated gzip of a JSON array is a damaged file, not a traceback
    arr = tmp_path / "array.json.gz"
    arr.write_bytes(gzip.compress(json.dumps(_records(3), indent=2).encode())[:-40])
    (fail,) = list(read_records(arr))
    assert "damaged" in fail.reason  # type: ignore[union-attr]
    # line numbers survive blocks: a bad line after 3 MB of good ones names its own line
    many = tmp_path / "many.jsonl"
    n = (3 << 20) // len(good) + 1
    many.write_text((good + "\n") + "\n\n".join(json.dumps({**json.loads(good), "id": f"9999.{i:05d}"}) for i in range(n)) + "\n{oops\n")
    items = list(read_records(many))
    assert sum(isinstance(i, Paper) for i in items) == n + 1
    (bad,) = [i for i in items if not isinstance(i, Paper)]
    assert bad.source.endswith(f":{1 + 2 * n}") and "malformed JSON" in bad.reason  # type: ignore[union-attr]


# -- 12, 13. arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--weeks", "999999999"], "--weeks must be between 1 and 5,200"),
        (["--weeks", "-5"], "--weeks must be between"),
        (["-k", "0"], "-k must be between 1 and 50"),
        (["-k", "-3"], "-k must be between"),
        (["--weeks", "four"], "whole number"),
    ],
)
def test_out_of_range_arguments_say_what_is_wrong(argv: list[str], words: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--data-dir", str(tmp_path / "d"), "ask", "a question", "--topic", "rag", *argv])
    assert exc.value.code == 2 and words in capsys.readouterr().err


def test_inverted_dates_and_pdf_folder_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert main(["--data-dir", str(data), "ask", "q", "--topic", "rag", "--since", "2026-05-01", "--until", "2026-01-01"]) == 2
    assert "is after --until" in capsys.readouterr().err
    folder = tmp_path / "someone-elses-temp"
    folder.mkdir()
    make_pdf(folder / "unrelated.pdf", ["A PDF that another program left here. " * 20])
    assert main(["--data-dir", str(data), "ask", "q", "--pdf", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "paperchat ingest pdf" in err and "Traceback" not in err
    assert not data.exists()  # refused before anything was opened or ingested


# -- 14. JSON arrays and ids ---------------------------------------------------------------------------


def test_json_array_files_and_id_rules(tmp_path: Path, shared: Path) -> None:
    recs = _records(3)
    arr = tmp_path / "records.json"
    arr.write_text(json.dumps(recs, indent=2))
    items = list(read_records(arr))
    assert [p.id for p in items if isinstance(p, Paper)] == [r["id"] for r in recs]
    base = dict(recs[0])
    cases = {
        "number": {**base, "id": 2503.10},
        "slash": {**base, "id": "../../etc/passwd"},
        "nul": {**base, "id": "2503.1\x000"},
        "long": {**base, "id": "9" * 65},
        "old-style": {**base, "id": "hep-th/9901001"},
        "js-url": {**base, "id": "my-notes-1", "abs_url": "javascript:alert(1)"},
    }
    got = list(read_records(_write(tmp_path / "ids.jsonl", list(cases.values()))))
    reasons = [i.reason for i in got if not isinstance(i, Paper)]  # type: ignore[union-attr]
    assert any("JSON number" in r and "2503.1" in r for r in reasons), reasons
    assert sum("characters an id may not have" in r for r in reasons) == 2 and any("65 characters" in r for r in reasons)
    papers = {p.id: p for p in got if isinstance(p, Paper)}
    assert set(papers) == {"hep-th/9901001", "my-notes-1"}
    assert papers["my-notes-1"].url == "" and papers["my-notes-1"].abs_url == ""
    assert papers["hep-th/9901001"].abs_url == "https://arxiv.org/abs/hep-th/9901001"


# -- 16. every named input is in the summary --------------------------------------------------------


@pytest.mark.slow  # parses a real 19-page paper twice
def test_every_named_pdf_is_in_the_summary(library: Library, tmp_path: Path, five_pdfs: list[Path]) -> None:
    no_pages = blank_pdf(tmp_path / "no-pages.pdf", 0)
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    twin = tmp_path / "twin-of-no-pages.pdf"
    twin.write_bytes(no_pages.read_bytes())
    named = [five_pdfs[0], no_pages, empty, twin, tmp_path / "missing.pdf"]
    rep = Ingester(library).ingest_pdfs(named)
    failed = {Path(f.source).name for f in rep.failures}
    assert rep.papers == 1 and failed == {"no-pages.pdf", "empty.pdf", "twin-of-no-pages.pdf", "missing.pdf"}, rep.failed
    assert [Path(src).name for src, _ in rep.stored] == [five_pdfs[0].name]
    again = Ingester(library).ingest_pdfs([five_pdfs[0]])
    assert "unchanged" in again.stored[0][1] and not again.failed


# -- 9. parser workers die with their parent ------------------------------------------------------------

PARSE_CHILD = """
import sys
from pathlib import Path
from paperchat.ingestion.pdf import parse_many
print("start", flush=True)
for r in parse_many([Path(p) for p in sys.argv[1:]], 50.0, 600.0, workers=2, max_pages=20000):
    print("parsed", r.path, flush=True)
"""


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.slow  # integration: seconds, not the fast layer's unit checks
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_parser_workers_die_with_a_killed_ingest(tmp_path: Path) -> None:
    slow = [make_pdf(tmp_path / f"slow{i}.pdf", [f"Page {j}: " + "words of a long book " * 30 for j in range(3000)]) for i in range(2)]
    proc = subprocess.Popen([sys.executable, "-c", PARSE_CHILD, *map(str, slow)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "start"
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.1)
    assert len(workers) >= 2, "the parser workers did not start"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    alive = workers
    while alive and time.monotonic() < deadline:
        alive = [w for w in workers if Path(f"/proc/{w}").exists() and "Z" not in Path(f"/proc/{w}/stat").read_text().rsplit(")", 1)[1].split()[0]]
        time.sleep(0.1)
    assert not alive, f"workers {alive} outlived their parent"
