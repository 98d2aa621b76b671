from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paperchat.evaluation import metrics as M
from paperchat.evaluation.questions import load_set
from paperchat.evaluation.report import write_report
from paperchat.evaluation.runner import compare, run
from paperchat.library import Library
from paperchat.text import percentile

from .conftest import ROOT, SHARED


def test_metrics_hand_computed() -> None:
    assert M.token_f1("About 40,000 training examples", "40,000 examples") == pytest.approx(2 * (2 / 4) * 1.0 / (2 / 4 + 1.0))
    assert M.contains("They needed approximately 40k examples.", ["40,000", "approximately 40k examples"])[0] == 1.0
    assert M.exact("The BM25.", ["bm25"])[0] == 1.0
    ranked = ["a", "b", "a", "c", "d"]
    assert M.recall_at(ranked, ["c", "z"], 5)[0] == 0.5
    assert M.mrr(ranked, ["c"])[0] == pytest.approx(1 / 3)  # distinct papers: a, b, c
    assert M.ndcg_at(ranked, ["a", "c"], 10)[0] == pytest.approx((1 + 1 / 2) / (1 + 1 / 1.5849625007))
    assert M.page_hit([3, None, 5], [5], 5)[0] == 1.0 and M.page_hit([3], [5], 5)[0] == 0.0
    assert M.evidence_hit(["the corpus is fine here"], "the cor- pus is \ufb01ne", 5)[0] == 1.0
    assert percentile([1, 2, 3, 4, 100], 50) == 3 and percentile([1, 2, 3, 4, 100], 95) == 100


def test_malformed_set_lines_are_reported(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text(
        '{"id": "a", "scope": "topic", "topic": "rag", "question": "q?", "extra_field": 1}\n'
        "{broken\n"
        '{"id": "b", "scope": "paper", "question": "no pdf"}\n'
        '{"id": "c", "scope": "weird", "question": "x"}\n'
        '{"id": "a", "scope": "topic", "topic": "rag", "question": "dup"}\n'
    )
    qs, bad, sha = load_set(p)
    assert [q.id for q in qs] == ["a"] and len(sha) == 64
    assert [b.source.rsplit(":", 1)[1] for b in bad] == ["2", "3", "4", "5"]
    assert "malformed JSON" in bad[0].reason and "needs 'pdf'" in bad[1].reason and "duplicate" in bad[3].reason


def test_run_end_to_end_and_compare(built_library: Library, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in open(SHARED / "eval" / "askpdf_dev.jsonl", encoding="utf-8")]
    mine = [r for r in rows if r["pdf"] in ("rag/2004.04906.pdf", "rag/2005.11401.pdf")]
    qset = tmp_path / "small.jsonl"
    qset.write_text("".join(json.dumps(r) + "\n" for r in mine))
    settings = built_library.settings
    built_library.close()
    out = tmp_path / "run1"
    summary = run([qset], settings, SHARED, out)
    assert summary["n"] == len(mine) >= 6
    assert summary["citations"]["validity"] == 1.0
    assert summary["retrieval"]["page_hit@5"] >= 0.5
    assert summary["answer"]["abstention_accuracy"] is not None and summary["retrieval"]["recall@10"] is None
    assert summary["run"]["sets_sha256"]["small.jsonl"] and summary["run"]["answerer"] == "extractive"
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == len(mine) and all("metrics" in json.loads(line) for line in lines)
    md, page = write_report(out)
    assert "Worst questions" in md.read_text() and "<svg" in page.read_text()
    text, code = compare(out, out, {"retrieval.page_hit@5": 0.0})
    assert code == 0 and "0 questions changed" in text
    _, code = compare(out, out, {"retrieval.page_hit@5": 1.01})
    assert code == 1
    # the CLI gates the same way
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(settings.data_dir)}
    r = subprocess.run([sys.executable, "-m", "paperchat.cli", "eval", "compare", str(out), str(out), "--fail-under", "answer.accuracy=1.01"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 1 and "FAIL: answer.accuracy" in r.stdout


def test_abstention_sweep_hand_computed() -> None:
    from paperchat.evaluation.calibrate import sweep

    rows = [{"id": str(i), "unanswerable": False, "top_dense": d} for i, d in enumerate([0.3, 0.5, 0.6])]
    rows.append({"id": "u", "unanswerable": True, "top_dense": 0.35})
    res = sweep(rows, 0.0, 0.6, 0.05)
    by_t = {r["threshold"]: r for r in res["table"]}
    assert by_t[0.3]["decision_accuracy"] == 0.75  # nothing refused: 3 of 4 decisions right
    assert by_t[0.4] == {"threshold": 0.4, "wrong_refusals": 1, "right_refusals": 1, "decision_accuracy": 0.75}
    assert by_t[0.55]["wrong_refusals"] == 2
    assert res["recommended"] == 0.3  # the highest threshold with the best accuracy and fewest wrong refusals


def test_judge_grades_through_an_openai_endpoint(built_library: Library, tmp_path: Path) -> None:
    from paperchat.errors import ConfigError
    from tests.fake_llm import FakeLLM

    rows = [json.loads(line) for line in open(SHARED / "eval" / "askpdf_dev.jsonl", encoding="utf-8")]
    mine = [r for r in rows if r["pdf"] == "rag/2004.04906.pdf"][:2]
    qset = tmp_path / "two.jsonl"
    qset.write_text("".join(json.dumps(r) + "\n" for r in mine))
    settings = built_library.settings
    built_library.close()
    with pytest.raises(ConfigError, match="PAPERCHAT_JUDGE"):
        run([qset], settings, SHARED, None, judge=True)  # extractive answerer and no judge: a clear error
    with FakeLLM('Sure: {"correct": 1, "faithful": 0.5, "why": "matches the reference"}') as llm:
        judged = settings.model_copy(update={"judge": "openai:fake-judge", "llm_base_url": llm.url, "llm_max_retries": 0})
        summary = run([qset], judged, SHARED, tmp_path / "judged", judge=True)
        assert len(llm.requests) == 2 and "Reference answer" in json.dumps(llm.requests[0])
    assert summary["judge"] == {"correct": 1.0, "faithful": 0.5} and summary["run"]["judge"] == "fake-judge"
    assert summary["answer"]["accuracy"] is not None  # the usual metrics are still there
    with FakeLLM("no json here") as llm:
        bad = settings.model_copy(update={"judge": "openai:fake-judge", "llm_base_url": llm.url, "llm_max_retries": 0})
        summary = run([qset], bad, SHARED, None, judge=True)
    assert summary["judge"] == {"correct": None, "faithful": None}
