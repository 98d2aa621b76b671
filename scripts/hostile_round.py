"""The second round of hostile and careless inputs at full size (RELIABILITY.md, "Round two").

Runs each case as the real CLI in a subprocess against one data folder and prints a Markdown table:
exit code, seconds, the child's peak memory (ru_maxrss), whether stderr held a traceback, the first
line it printed, and whether any process it started was left behind. Ends non-zero when a case shows a
traceback, a hang (over --timeout), a process left behind, or over 2 GB of memory.

    source scripts/env.sh && .venv/bin/python scripts/hostile_round.py --gb 3 --records ../shared/data/abstracts/arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIMIT_MB = 2048


def _descendants_alive(marker: str) -> list[int]:
    """Processes whose command line names this run's folder (what a case left behind)."""
    alive = []
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmd.read_bytes().decode(errors="replace") and int(cmd.parent.name) != os.getpid():
                alive.append(int(cmd.parent.name))
        except OSError:
            continue
    return alive


def run_case(name: str, argv: list[str], env: dict[str, str], timeout: float, marker: str) -> dict[str, object]:
    """Run one CLI command; its own peak memory comes from wait4's resource usage (ru_maxrss, KB on Linux)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "paperchat.cli", *argv], stdout=out, stderr=err, env=env)
        hung = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                hung = True
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text_out = out.read().decode(errors="replace")
        text_err = err.read().decode(errors="replace")
    time.sleep(0.5)
    left = _descendants_alive(marker)
    said = [ln.strip() for ln in (text_err + text_out).splitlines() if ln.strip()]
    first = next((ln for ln in said if "error:" in ln), None) or next((ln for ln in said if not ln.startswith("reading")), "")
    return {"case": name, "rc": proc.returncode, "s": seconds, "peak_mb": usage.ru_maxrss / 1024, "traceback": "Traceback" in text_err,
            "hung": hung, "left": left, "said": first[:150], "lines": said}


def build_inputs(folder: Path, gb: float, records: Path | None) -> dict[str, Path]:
    size = int(gb * (1 << 30))
    paths: dict[str, Path] = {}
    bomb = folder / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=6) as fh:
        block = b"x" * (1 << 24)
        for _ in range(size // len(block)):
            fh.write(block)
    paths["gzip bomb: one line of %.0f GB, no newline" % gb] = bomb
    sparse = folder / "sparse.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(2 << 30)
    paths["sparse 2 GB file (NULs)"] = sparse
    blank = folder / "blank.jsonl"
    with open(blank, "wb") as fh:
        block = b"\n" * (1 << 24)
        for _ in range(size // len(block)):
            fh.write(block)
    paths["%.0f GB of empty lines" % gb] = blank
    if records is not None:
        with open(records) as src:
            recs = [json.loads(next(src)) for _ in range(300)]
    else:
        recs = [{"id": f"2601.{i:05d}", "title": f"Paper {i}", "abstract": f"An abstract about topic {i}.", "listing_date": "2026-01-05"} for i in range(300)]
    mixed = folder / "mixed.jsonl"
    lines = [json.dumps(r) for r in recs]
    lines[10] = lines[10].replace('"title": "', '"title": "\\ud800', 1)
    lines[20] = json.dumps({**recs[20], "listing_date": "9999-12-31"})
    lines[30] = json.dumps({**recs[30], "title": "T" * 2_000_000})  # under the 8 MB line limit: the title limit speaks
    lines[40] = json.dumps({**recs[40], "title": "\x1b[31mred\x07 \x1b]0;pwned\x07title\x00"})
    lines[50] = json.dumps({**recs[50], "abs_url": "javascript:alert(1)", "id": "notes-50"})
    lines[60] = json.dumps({**recs[60], "id": 2503.10})
    mixed.write_text("\n".join(lines) + "\n")
    paths["300 records: surrogate, 9999-12-31, 2 MB title, escapes, javascript: URL, numeric id"] = mixed
    arr = folder / "array.json"
    arr.write_text(json.dumps(recs[:5], indent=2))
    paths["pretty-printed JSON array"] = arr
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=3.0, help="size of the bomb and of the blank-line file")
    ap.add_argument("--records", type=Path, help="a JSONL file to take 300 real records from")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="paperchat-hostile-"))
    try:
        data = folder / "data"
        env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data)}
        t0 = time.perf_counter()
        inputs = build_inputs(folder, args.gb, args.records)
        print(f"inputs built in {time.perf_counter() - t0:.0f} s in {folder}", file=sys.stderr)
        rows = []
        for name, path in inputs.items():
            rows.append(run_case(name, ["ingest", "abstracts", str(path)], env, args.timeout, str(folder)))
            print(rows[-1], file=sys.stderr)
        asks = {
            "ask --weeks 999999999": ["ask", "q", "--weeks", "999999999"],
            "ask -k 0": ["ask", "q", "-k", "0"],
            "ask --since after --until": ["ask", "q", "--since", "2026-05-01", "--until", "2026-01-01"],
            "ask --pdf FOLDER": ["ask", "q", "--pdf", str(folder)],
            "ask with a 100,000-character question": ["ask", "word " * 20_000, "--topic", "rag"],
            "ask --weeks 8 after a 9999-12-31 record": ["ask", "What is new?", "--weeks", "8", "--json"],
        }
        for name, argv in asks.items():
            rows.append(run_case(name, argv, env, args.timeout, str(folder)))
            print(rows[-1], file=sys.stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("| input | exit | seconds | peak MB | traceback | hung | left behind | first line |")
    print("|---|---|---|---|---|---|---|---|")
    bad = 0
    for r in rows:
        fail = r["traceback"] or r["hung"] or r["left"] or float(r["peak_mb"]) > LIMIT_MB  # type: ignore[arg-type]
        bad += bool(fail)
        print(f"| {r['case']} | {r['rc']} | {float(r['s']):.1f} | {float(r['peak_mb']):.0f} | {'yes' if r['traceback'] else 'no'} | "  # type: ignore[arg-type]
              f"{'yes' if r['hung'] else 'no'} | {len(r['left'])} | `{str(r['said']).replace('|', '/')}` |")  # type: ignore[arg-type]
    print(f"\n{len(rows)} cases, {bad} with a traceback, a hang, a process left behind or over {LIMIT_MB} MB")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
