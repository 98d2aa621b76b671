from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paperchat.errors import ConfigError
from paperchat.evaluation import metrics as M
from paperchat.evaluation.questions import load_judgments, load_set
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


def test_judged_precision_hand_computed(tmp_path: Path) -> None:
    """Gold lists of many-paper questions are a few of the right papers: judged precision reads the graded
    judgments of the list itself, leaving unjudged papers out and saying how many were judged."""
    ranked = ["a", "b", "a", "c", "d", "e"]  # distinct: a b c d e
    judged = {"a": 2, "b": 1, "c": 0, "e": 2, "z": 2}
    assert M.judged_precision(ranked, judged, 10) == (0.5, "2 of the 4 judged papers in the top 10 relevant")
    assert M.judged_share(ranked, judged, 10)[0] == pytest.approx(4 / 5)
    assert M.judged_precision(ranked, judged, 2)[0] == 0.5 and M.judged_share(ranked, judged, 2)[0] == 1.0
    assert M.judged_precision(["x"], judged, 10)[0] == 0.0 and M.judged_share([], judged, 10)[0] == 0.0
    good = tmp_path / "j.jsonl"
    good.write_text(
        '{"id": "q1", "paper": "a", "rel": 2, "why": "proposes it"}\n\n{"id": "q1", "paper": "b", "rel": 0}\n{"id": "q2", "paper": "a", "rel": 1}\n'
    )
    assert load_judgments([good]) == {"q1": {"a": 2, "b": 0}, "q2": {"a": 1}}
    for bad, said in (
        ('{"id": "q1", "paper": "a"}', "not a judgment"),
        ('{"id": "q1", "paper": "b", "rel": 3}', "rel must be 0, 1 or 2"),
        ('{"id": "q1", "paper": "b", "rel": true}', "rel must be 0, 1 or 2"),
        ('{"id": "q1", "paper": "b", "rel": 1.5}', "rel must be 0, 1 or 2"),
        ('{"id": null, "paper": "b", "rel": 1}', "non-empty strings"),
        ('{"id": "q1", "paper": "a", "rel": 0}', "judged for q1 already at .*bad.jsonl:1"),
        ("{broken", "not a judgment"),
    ):
        f = tmp_path / "bad.jsonl"
        f.write_text('{"id": "q1", "paper": "a", "rel": 2}\n' + bad + "\n")
        with pytest.raises(ConfigError, match=said) as err:
            load_judgments([f])
        assert "bad.jsonl:2" in str(err.value)
    with pytest.raises(ConfigError, match="not found"):
        load_judgments([tmp_path / "missing.jsonl"])
    shipped = load_judgments([ROOT / "eval" / "topic_judged.jsonl"])  # the project's own judgments load
    assert len(shipped) == 30 and sum(len(v) for v in shipped.values()) == 676


def test_holds_reads_the_words_not_the_string() -> None:
    golds = ["Only 14.9 F1 on SQuAD and 66.3 accuracy on MNLI after 500,000 iterations", "14.9 F1 and 66.3 accuracy"]
    answer = 'The paper says (p. 6): "This model can only achieve 14.9 F1 score on SQuAD and 66.3 accuracy on MNLI." [1]'
    assert M.contains(answer, golds)[0] == 0.0  # a substring test misses the stated fact
    assert M.holds(answer, golds)[0] == 1.0 and M.holds_first(answer, golds)[0] == 1.0
    assert M.holds("14.9 F1 on SQuAD", golds)[0] == 0.0  # half the fact is not the fact
    assert M.holds("66.3 accuracy and 14.9 F1", golds)[0] == 1.0  # any order
    assert M.holds("uses \ufb01ve heads", ["five heads"])[0] == 1.0  # ligatures folded
    later = 'The paper says (p. 2): "We study transfer." [1] It also notes (p. 6): "14.9 F1 and 66.3 accuracy." [2]'
    assert M.holds(later, golds)[0] == 1.0 and M.holds_first(later, golds)[0] == 0.0


def test_the_quoting_ceiling_is_what_the_evidence_itself_scores() -> None:
    evidence = "Since each API has a fixed response format, we use ChatGPT to analyze one response example and remove unimportant keys."
    assert M.quoting_ceiling(evidence, ["ChatGPT analyzes one example response and removes unimportant keys"]) == (0.0, 0.0)  # other words
    assert M.quoting_ceiling(evidence, ["remove unimportant keys"]) == (1.0, 1.0)  # the paper's words
    assert M.quoting_ceiling(evidence, ["unimportant keys removed by ChatGPT"]) == (0.0, 0.0)  # "removed" is not in it
    assert M.quoting_ceiling(evidence, ["ChatGPT, unimportant keys, remove"]) == (0.0, 1.0)  # every word, another order
    from paperchat.evaluation.questions import Question
    from paperchat.evaluation.runner import ceiling

    q = Question(id="q", scope="paper", question="How are long API outputs trimmed?", gold_answer="remove unimportant keys", evidence=evidence)
    assert ceiling(q) == {"answer.ceiling_contains": 1.0, "answer.ceiling_holds": 1.0}
    assert ceiling(q.model_copy(update={"unanswerable": True})) == {} and ceiling(q.model_copy(update={"evidence": ""})) == {}


def test_recording_records_calls_and_puts_the_original_back() -> None:
    import types

    from paperchat.evaluation.lab import recording

    mod = types.SimpleNamespace(double=lambda x, k=1: 2 * x * k)
    original = mod.double
    with recording(mod, "double") as calls:
        assert mod.double(3) == 6 and mod.double(1, k=5) == 10  # the calls still answer as before
    assert calls == [((3,), {}, 6), ((1,), {"k": 5}, 10)] and mod.double is original

    class Rule:
        def refuse(self, ev: float) -> bool:
            return ev < 0.5

    refuse = Rule.refuse
    with pytest.raises(ZeroDivisionError), recording(Rule, "refuse") as got:
        r = Rule()
        assert r.refuse(0.2) is True
        _ = 1 / 0
    assert got == [((r, 0.2), {}, True)] and Rule.refuse is refuse and Rule().refuse(0.9) is False  # put back after the error too


def test_evidence_quoted_reads_the_paper_words() -> None:
    # val-2203.14465-2: the gold answer is paraphrased ("No; the hint is left out ..."), the answer quotes the paper
    evidence = (
        "When adding a rationale generated by rationalization to our dataset, we do not include the hint in its corresponding prompt, "
        "as if the model had come up with the rationales without the hint."
    )
    golds = ["No; the hint is left out, as if the model had produced the rationale without it"]
    answer = (
        'The paper says (p. 4): "When adding a rationale generated by rationalization to our dataset, we do not include the hint in its corresponding prompt, '
        'as if the model had come up with the rationales without the hint." [1]'
    )
    assert M.holds_first(answer, golds)[0] == 0.0
    assert M.evidence_first(answer, evidence)[0] == 1.0 and M.evidence_quoted(answer, evidence)[0] == 1.0
    # pypdf's line-end hyphen break and a ligature in the quote still match
    assert M.quotes_evidence("we do not include the hint in its corre- sponding prompt", evidence)
    # a sentence that shares a few words is not the evidence
    other = (
        'The paper says (p. 3): "We add a hint to the prompt." [1] It also notes (p. 4): "we do not include the hint in its corresponding prompt, as if" [1]'
    )
    assert M.evidence_first(other, evidence)[0] == 0.0 and M.evidence_quoted(other, evidence)[0] == 1.0
    assert M.evidence_first("I cannot answer this from the available sources.", evidence)[0] == 0.0
    assert not M.quotes_evidence("the hint.", evidence)  # a fragment of three words is not the evidence


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


def _results(folder: Path, summary: dict[str, object], correct: dict[str, float]) -> Path:
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "results.jsonl").write_text("".join(json.dumps({"id": q, "metrics": {"answer.correct": c}}) + "\n" for q, c in correct.items()))
    return folder


def test_compare_hand_computed(tmp_path: Path) -> None:
    base = _results(tmp_path / "a", {"retrieval": {"mrr": 0.5, "recall@10": None}, "answer": {"accuracy": 0.5}}, {"q1": 1.0, "q2": 0.0, "q3": 1.0})
    new = _results(tmp_path / "b", {"retrieval": {"mrr": 0.75, "recall@10": None}, "answer": {"accuracy": 0.25}}, {"q1": 0.0, "q2": 1.0, "q3": 1.0, "q4": 0.0})
    text, code = compare(base, new, {"retrieval.mrr": 0.7})
    assert code == 0
    assert "| retrieval.mrr | 0.5 | 0.75 | +0.2500 |" in text and "| answer.accuracy | 0.5 | 0.25 | -0.2500 |" in text
    assert "recall@10" not in text  # a metric that applies to no question is not a row
    assert "2 questions changed:\n- q1: correct 1.0 -> 0.0\n- q2: correct 0.0 -> 1.0" in text  # q4 is new, not changed
    text, code = compare(base, new, {"answer.accuracy": 0.3, "retrieval.recall@10": 0.1})
    assert code == 1
    assert "FAIL: answer.accuracy = 0.25 is under 0.3" in text and "FAIL: retrieval.recall@10 = None is under 0.1" in text


@pytest.mark.slow  # integration: seconds, not the fast layer's unit checks
def test_demo_set_run_report_and_gate(demo_library: Library, tmp_path: Path) -> None:
    """The project's demo question set over the demo corpus (hashing embedder): a run, its report, and the
    CLI's gate between it and a run that refuses every question."""
    settings = demo_library.settings
    demo_library.close()
    qset = ROOT / "eval" / "demo_questions.jsonl"
    summary = run([qset], settings, None, tmp_path / "base")
    assert summary["n"] == 8 and summary["run"]["sets_sha256"]["demo_questions.jsonl"] == load_set(qset)[2]
    # measured with the hashing embedder: every known item in the top 10, all but one first (0.9375 since
    # aspects and the title field are on; MiniLM over the same corpus: 1.0 with and without them)
    assert summary["retrieval"]["recall@10"] == 1.0 and summary["retrieval"]["mrr"] >= 0.9
    assert summary["retrieval"]["recall@20"] == 1.0  # the same retrieval twenty deep, for topic questions
    assert summary["citations"]["validity"] == 1.0 and summary["run"]["answerer"] == "extractive"
    md, page = write_report(tmp_path / "base")
    assert "Worst questions" in md.read_text() and "<svg" in page.read_text()
    # graded judgments of one question's list: its first paper relevant, its second not, the rest unjudged
    row = json.loads((tmp_path / "base" / "results.jsonl").read_text().splitlines()[0])
    papers = list(dict.fromkeys(s["paper_id"] for s in row["answer"]["sources"]))
    assert len(papers) >= 3
    judged_file = tmp_path / "judged.jsonl"
    judged_file.write_text(
        json.dumps({"id": row["id"], "paper": papers[0], "rel": 2}) + "\n" + json.dumps({"id": row["id"], "paper": papers[1], "rel": 0}) + "\n"
    )
    judged = run([qset], settings, None, tmp_path / "judged", judgments=[judged_file])
    assert judged["retrieval"]["judged_precision@10"] == 0.5 and judged["retrieval"]["judged@10"] == pytest.approx(2 / min(10, len(papers)))
    judged_rows = [json.loads(line) for line in (tmp_path / "judged" / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in judged_rows if "retrieval.judged@10" in r["metrics"]] == [row["id"]]  # unjudged questions: no measure
    # judged papers none of which was retrieved: nothing to measure, not a precision of 0
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps({"id": row["id"], "paper": "0000.00000", "rel": 2}) + "\n")
    unseen = run([qset], settings, None, None, judgments=[elsewhere])
    assert unseen["retrieval"]["judged@10"] == 0.0 and unseen["retrieval"]["judged_precision@10"] is None
    assert judged["retrieval"]["recall@10"] == summary["retrieval"]["recall@10"] and summary["retrieval"]["judged_precision@10"] is None
    assert judged["run"]["judgments_sha256"]["judged.jsonl"]
    refusing = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"abstain_below": 1.01})})
    refused = run([qset], refusing, None, tmp_path / "refused", judgments=[judged_file])
    assert refused["retrieval"] == judged["retrieval"] and refused["citations"]["validity"] is None  # a refusal keeps its sources
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(settings.data_dir), "PAPERCHAT_EMBEDDER": "hashing"}
    r = subprocess.run([sys.executable, "-m", "paperchat.cli", "eval", "compare", str(tmp_path / "base"), str(tmp_path / "refused"),
                        "--fail-under", "retrieval.mrr=0.9", "--fail-under", "citations.validity=1.0"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 1 and "FAIL: citations.validity = None is under 1.0" in r.stdout and "FAIL: retrieval.mrr" not in r.stdout, r.stdout + r.stderr


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
    # a second run that refuses every question: compare names each question whose answer changed
    refusing = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"abstain_below": 1.01})})
    out2 = tmp_path / "run2"
    summary2 = run([qset], refusing, SHARED, out2)
    assert summary2["retrieval"] == summary["retrieval"] and summary2["citations"]["validity"] is None  # same hits, no answers
    # a paper question reads as many chunks as the app would (retrieval.k), not the topic questions' ten
    few = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"k": 3})})
    summary3 = run([qset], few, SHARED, tmp_path / "run3")
    assert summary3["run"]["paper_k"] == 3 and summary["run"]["paper_k"] == settings.retrieval.k == 10
    read = [json.loads(line)["answer"]["sources"] for line in (tmp_path / "run3" / "results.jsonl").read_text().splitlines()]
    assert max(map(len, read)) <= 3 < max(len(json.loads(line)["answer"]["sources"]) for line in lines)
    before = {r["id"]: r["metrics"]["answer.correct"] for r in map(json.loads, lines)}
    after = {r["id"]: r["metrics"]["answer.correct"] for r in map(json.loads, (out2 / "results.jsonl").read_text().splitlines())}
    changed = [q for q in before if before[q] != after[q]]
    assert any(before[q] == 1.0 and after[q] == 0.0 for q in changed)  # answered right before, refused now
    text, code = compare(out, out2, {"retrieval.page_hit@5": summary["retrieval"]["page_hit@5"]})
    assert code == 0 and f"{len(changed)} questions changed" in text
    assert all(f"- {q}: correct {before[q]} -> {after[q]}" in text for q in changed)
    accuracy, accuracy2 = summary["answer"]["accuracy"], summary2["answer"]["accuracy"]
    assert accuracy2 < accuracy and f"| answer.accuracy | {accuracy} | {accuracy2} | {accuracy2 - accuracy:+.4f} |" in text
    _, code = compare(out, out2, {"answer.accuracy": accuracy})
    assert code == 1
    # the CLI gates the same way
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(settings.data_dir)}
    r = subprocess.run(
        [sys.executable, "-m", "paperchat.cli", "eval", "compare", str(out), str(out2), "--fail-under", f"answer.accuracy={accuracy}"],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )
    assert r.returncode == 1 and f"FAIL: answer.accuracy = {accuracy2} is under {accuracy}" in r.stdout


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


def test_asked_words_sweep_hand_computed() -> None:
    from paperchat.evaluation.calibrate import choose_asked, sweep_asked

    def row(i: str, un: bool, asked: float | None, names: list[str] | None = None) -> dict[str, object]:
        return {"id": i, "unanswerable": un, "strength": 1.0, "missing_names": names or [], "asked": asked}

    rows = [row("a1", False, 1.0), row("a2", False, 0.5), row("a3", False, None), row("u1", True, 0.0), row("u2", True, 0.5, ["MS"]), row("u3", True, 1.0)]
    # 0.25 refuses u1 only (u2 is refused by its missing name at every threshold); 0.67 also refuses a2
    assert choose_asked(rows, strength=0.0) == 0.25
    res = sweep_asked(rows, (["a1", "a2", "u1"], ["a3", "u2", "u3"]), strength=0.0)
    by_t = {r["threshold"]: r for r in res["table"]}
    assert (by_t[0.0]["right_refusals"], by_t[0.0]["wrong_refusals"]) == (1, 0)
    assert (by_t[0.5]["right_refusals"], by_t[0.5]["wrong_refusals"]) == (2, 0)
    assert (by_t[1.0]["right_refusals"], by_t[1.0]["wrong_refusals"]) == (2, 1)
    assert res["chosen_on_a"] == 0.25 and res["measured_on_b"]["right_refusals"] == 1  # u2, by its name


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


def test_paper_retrieval_depth_counts_the_first_chunk_quoting_the_evidence() -> None:
    """scripts/paper_retrieval_depth.py (Stop 42's diagnostic): the rank is the first chunk that quotes the evidence,
    and each depth counts the questions whose evidence ranks above it (a miss counts against every depth)."""
    from .conftest import load_script

    depth = load_script("paper_retrieval_depth")
    assert depth.first_rank([False, False, True, True]) == 2
    assert depth.first_rank([False, False]) is None
    line = depth.shares([0, 7, 15, None], [True, False, False, True], 40)
    assert line == "evidence@5 0.250 evidence@10 0.500 evidence@20 0.750 evidence@40 0.750 page@5 0.500"
    assert depth.shares([3], [True], 10).startswith("evidence@5 1.000 evidence@10 1.000 page@5")
