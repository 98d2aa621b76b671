"""The `paperchat` command for real (a subprocess, as a user runs it; `main()` in this process where the
process adds nothing) on a copy of the demo store built with the hashing embedder: `ask` (text and --json),
`topics` and `topics --check`, and `bench query` (slow: its naive LangChain baseline loads MiniLM)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from paperchat.cli import main
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.topics import TopicSet
from paperchat.types import Paper

from .conftest import ROOT
from .corpus import PAPER_DATE, PAPER_ID, PAPER_TITLE, demo_lines


@pytest.fixture(autouse=True)
def hashing_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() in this process reads the embedder from the environment, as the command does."""
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "hashing")


def paperchat(args: list[str], data_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `python -m paperchat.cli ARGS` over `data_dir` with the hashing embedder."""
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data_dir), "PAPERCHAT_EMBEDDER": "hashing"}
    return subprocess.run([sys.executable, "-m", "paperchat.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)


def test_ask_prints_a_cited_answer(demo_library: Library) -> None:
    data = demo_library.settings.data_dir
    demo_library.close()
    r = paperchat(["ask", "--paper", PAPER_ID, "How are negative passages chosen when training the encoders?"], data)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    body, refs = r.stdout.split("\nReferences\n")
    assert "the top passages returned by BM25" in body
    cited = set(re.findall(r"\[(\d+)\]", body))
    # [n] title. authors. date. url, p. N (support s): the page for a PDF chunk, none for the abstract
    listed = re.findall(
        rf"^\[(\d+)\] {re.escape(PAPER_TITLE)}\. Ada Lovelace, Charles Babbage\. {PAPER_DATE}\. "
        rf"https://arxiv\.org/abs/{PAPER_ID}(?:, p\. (\d))? \(support (\S+)\)$",
        refs, re.M,
    )
    assert cited and cited == {n for n, _page, _support in listed}, (cited, refs)
    assert any(page == "2" for _n, page, _s in listed) and all(float(s) > 0.9 for _n, _p, s in listed)
    quotes = re.findall(r'^    "(.+)"$', refs, re.M)
    assert len(quotes) == len(listed) and all(q in body for q in quotes)  # each reference quotes what the answer says


def test_ask_json_in_a_topic_and_an_unknown_paper(demo_library: Library) -> None:
    data = demo_library.settings.data_dir
    members = set(demo_library.catalog.topic_papers("rag"))
    demo_library.close()
    r = paperchat(["ask", "--topic", "rag", "--json", "How do retrieval-augmented models handle knowledge conflicts?"], data)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["scope"]["kind"] == "topic" and rec["scope"]["topic"] == "rag" and rec["answerer"] == "extractive"
    assert rec["citations"] and not rec["abstained"] and not rec["dropped_citations"]
    assert {c["paper_id"] for c in rec["citations"]} <= {s["paper_id"] for s in rec["sources"]}
    assert {c["paper_id"] for c in rec["citations"]} & members  # the topic is a prior: other papers may rank too
    assert all(f"[{c['n']}]" in rec["answer"] for c in rec["citations"])
    assert rec["coverage"].startswith("drew on ")


def test_ask_about_an_unknown_paper_is_one_line(demo_library: Library, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(demo_library.settings.data_dir), "ask", "--paper", "0000.00000", "anything?"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["paperchat: error: paper '0000.00000' is not in the library (ingest it first (paperchat ingest pdf FILE))"]


def test_topics_table(demo_library: Library, capsys: pytest.CaptureFixture[str]) -> None:
    counts = demo_library.catalog.topic_counts()
    names = {t.slug: t.name for t in demo_library.topics.topics}
    total, chunks = demo_library.catalog.count(), demo_library.store.count()
    assert main(["--data-dir", str(demo_library.settings.data_dir), "topics"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert len(rows) == len(names) + 1 and rows[-1] == ["all", str(total), str(chunks)]
    for row in rows[:-1]:
        slug = row[-3]
        assert " ".join(row[:-3]) == names[slug] and int(row[-2]) == counts.get(slug, 0) and int(row[-1]) >= int(row[-2])


def test_topics_check_applies_the_rules_without_ingesting(tmp_path: Path) -> None:
    src = tmp_path / "listing.jsonl"
    src.write_text("".join(demo_lines(80)), encoding="utf-8")
    data = tmp_path / "store"
    r = paperchat(["topics", "--check", str(src), "--sample", "2"], data)
    assert r.returncode == 0, r.stderr
    papers = [p for p in read_records(src) if isinstance(p, Paper)]
    rules = TopicSet.load(ROOT / "ingest" / "topics.toml")
    members = {p.id: rules.match(p) for p in papers}
    counts = Counter(t for v in members.values() for t in v)
    lines = r.stdout.splitlines()
    assert lines[0] == f"80 papers, {sum(1 for v in members.values() if v)} in at least one topic"
    for t in rules.topics:
        assert f"## {t.slug}: {counts.get(t.slug, 0)} papers" in lines
    sampled = re.findall(r"^- (\S+) \| ", r.stdout, re.M)
    assert sampled and all(t_count <= 2 for t_count in Counter(sampled).values())
    by_topic = r.stdout.split("\n## ")[1:]
    for block in by_topic:
        slug = block.split(":", 1)[0]
        ids = re.findall(r"^- (\S+) \| ", block, re.M)
        assert len(ids) == min(2, counts.get(slug, 0)) and all(slug in members[i] for i in ids), block
    assert not data.exists()  # nothing opened, nothing ingested


@pytest.mark.slow  # the naive LangChain baseline embeds with MiniLM
def test_bench_query_runs_and_prints_numbers(demo_library: Library, tmp_path: Path) -> None:
    data = demo_library.settings.data_dir
    demo_library.close()
    out = tmp_path / "bench.json"
    args = ["bench", "query", str(ROOT / "eval" / "demo_questions.jsonl"), "--sizes", "300,all", "--papers", "1", "--out", str(out)]
    r = paperchat([*args, "--json"], data, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)["query"]
    assert set(res) == {"300", "all"} and 300 <= res["300"]["chunks"] < res["all"]["chunks"]
    for v in res.values():
        assert v["topic_retrieve_p50_ms"] > 0 and v["paper_retrieve_p50_ms"] > 0 and v["naive_topic_p50_ms"] > 0
    assert json.loads(out.read_text())["query"] == res and "<svg" in out.with_suffix(".svg").read_text()
