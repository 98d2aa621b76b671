from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from paperchat.library import Library
from paperchat.prompts import CANNOT_ANSWER
from paperchat.providers.answerers import ExtractiveAnswerer, OpenAIAnswerer
from paperchat.qa import QA
from paperchat.query import rewrite_followup
from paperchat.retrieval import Retriever, as_langchain_retriever
from paperchat.text import Tokenizer
from paperchat.types import Answer, Scope, Source

from .conftest import SHARED, make_settings
from .fake_llm import FakeLLM


def _askpdf(ids: set[str]) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in open(SHARED / "eval" / "askpdf_dev.jsonl", encoding="utf-8")]
    return [r for r in rows if r["paper_id"] in ids and not r["unanswerable"]]


def test_askpdf_page_hit_at_5(built_library: Library) -> None:
    retr = Retriever.of(built_library)
    rows = _askpdf({"2005.11401", "2004.04906", "2302.07302"})
    assert len(rows) == 9
    hits = 0
    for r in rows:
        found = retr.search(str(r["question"]), Scope.for_paper(str(r["paper_id"])), k=5)
        assert all(h.chunk.paper_id == r["paper_id"] for h in found)
        hits += any(h.chunk.page in r["gold_pages"] for h in found)  # type: ignore[operator]
    assert hits / len(rows) >= 8 / 9  # measured 9/9 (7/9 before scope IDF and the paper dense weight)


def test_hyphenated_words_meet_their_joined_form() -> None:
    tok = Tokenizer()
    assert {"pretrain", "pre", "train"} <= set(tok("a pre-trained seq2seq model"))
    assert "pretrain" in tok("pretrained") and "longform" in tok("long-form video")


def test_scope_idf_weighs_words_by_their_rarity_inside_the_scope(built_library: Library) -> None:
    """With scope_idf=1 a word's BM25 weight is its IDF among the scope's chunks, not the whole store's."""
    lex = built_library.ready_index()
    mask = lex.scope_mask(paper_id="2005.11401")
    assert mask is not None
    n_all, n_scope = len(lex.ids), int(mask.sum())

    def idf(df: int, n: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    for word in ("retrieval", "BART"):
        plain = dict(lex.search(word, n_all, mask))
        local = dict(lex.search(word, n_all, mask, scope_idf=1.0))
        df_all = len(lex.search(word, n_all))
        assert plain.keys() == local.keys() and 0 < len(plain) < n_scope
        expected = idf(len(plain), n_scope) / idf(df_all, n_all)
        assert all(local[c] / plain[c] == pytest.approx(expected, rel=1e-4) for c in plain)


def test_lexical_index_built_by_an_older_tokenizer_is_rebuilt(built_store: Path, tmp_path: Path, embedder: object) -> None:
    copy = tmp_path / "old"
    shutil.copytree(built_store, copy)
    root = copy / "lexical"
    current = root / (root / "CURRENT").read_text().strip()
    (current / "tokenizer.txt").write_text("1")
    lib = Library(make_settings(copy), embedder=embedder)  # type: ignore[arg-type]
    try:
        snap = lib.ready_index()
        assert snap.name != current.name and snap.tokenizer_version == Tokenizer.VERSION
        assert dict(lib.ready_index().search("pretrained", 5))  # joined forms are in the rebuilt index
    finally:
        lib.close()


def test_extractive_sentences_reranked_by_meaning(built_library: Library) -> None:
    """MiniLM reranking of the best sentences finds answers put in other words than the question's."""
    qa = QA(built_library)
    rows = _askpdf({"2005.11401", "2004.04906", "2302.07302"})
    found = {"reranked": 0, "words only": 0}
    for r in rows:
        golds = [str(r["gold_answer"]).lower(), *(str(a).lower() for a in r["answer_aliases"])]  # type: ignore[union-attr]
        scope = Scope.for_paper(str(r["paper_id"]))
        for name, answerer in (("reranked", None), ("words only", ExtractiveAnswerer())):
            text = qa.ask(str(r["question"]), scope, answerer=answerer).answer.lower()
            found[name] += any(g in text for g in golds)
    # measured 4 vs 2 of 9 with the earlier word ranking; the question-focused one (paperchat.answering) finds
    # as many without MiniLM (4 vs 4), so MiniLM must not lose any
    assert found["reranked"] >= 4 and found["reranked"] >= found["words only"]


def test_topic_feedback_moves_the_dense_query_but_scores_stay_against_the_question(built_library: Library) -> None:
    """Topic questions: the dense query moves toward BM25's best chunks; the dense score each hit reports (used
    for abstention) is still its cosine with the question itself."""
    question = "How do retrieval-augmented models handle conflicting knowledge?"
    on = Retriever.of(built_library)
    off = Retriever.of(built_library, built_library.settings.retrieval.model_copy(update={"feedback_chunks": 0}))
    lex = built_library.ready_index()
    qv = built_library.embedder.embed_query(question)
    topic, paper = Scope.for_topic("rag"), Scope.for_paper("2005.11401")
    lexical = lex.search(question, 100, lex.scope_mask(topic="rag"), on.params.scope_idf)
    moved = on._dense_query(qv, topic, lexical, lex)
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-5 and float(moved @ qv) < 0.999
    assert on._dense_query(qv, paper, lexical, lex) is qv and off._dense_query(qv, topic, lexical, lex) is qv
    for retr in (on, off):
        for h in retr.search(question, topic, k=8):
            assert h.dense == pytest.approx(float(lex.vectors[lex.pos[h.chunk.id]] @ qv), abs=1e-5)


def test_topic_scope_date_window_and_diversity(built_library: Library) -> None:
    retr = Retriever.of(built_library, built_library.settings.retrieval.model_copy(update={"topic_outside_weight": 0.0}))  # a filter
    members = set(built_library.catalog.topic_papers("rag"))
    hits = retr.search("retrieval augmented generation with a dense retriever", Scope.for_topic("rag"), k=8)
    assert hits and {h.chunk.paper_id for h in hits} <= members
    per_paper: dict[str, int] = {}
    for h in hits:
        per_paper[h.chunk.paper_id] = per_paper.get(h.chunk.paper_id, 0) + 1
    assert len(members) >= 4  # enough papers that two chunks each fill the 8 hits: the cap must hold, no way around it
    assert max(per_paper.values()) <= 2, per_paper
    since = dt.date(2026, 1, 1)
    recent = retr.search("retrieval augmented generation", Scope.for_topic("rag", since=since), k=8)
    dates = built_library.catalog.get_many(h.chunk.paper_id for h in recent)
    assert recent and all(dates[h.chunk.paper_id].date >= since for h in recent)  # type: ignore[operator]
    assert all(h.dense is not None for h in hits)


def test_extractive_answer_quotes_its_cited_chunks(built_library: Library) -> None:
    qa = QA(built_library)
    for scope, q in [
        (Scope.for_paper("2004.04906"), "How are negative passages chosen when training the dual encoder?"),
        (Scope.for_topic("rag"), "How do retrieval-augmented models handle knowledge conflicts?"),
    ]:
        ans = qa.ask(q, scope)
        assert not ans.abstained and ans.citations and not ans.dropped_citations
        by_n = {s.n: s for s in ans.sources}
        quotes = re.findall(r'"(.+?)" \[(\d+)\]', ans.answer)
        assert quotes
        for quote, n in quotes:
            assert quote in by_n[int(n)].text  # verbatim, so faithful by construction
        assert all(c.support > 0.9 for c in ans.citations)
        assert ans.timings_ms["retrieve"] > 0


def test_abstains_when_nothing_is_relevant(built_library: Library) -> None:
    ans = QA(built_library).ask("What is the best recipe for sourdough bread with rye flour?", Scope.for_paper("2004.04906"))
    assert ans.abstained and ans.answer.startswith(CANNOT_ANSWER) and not ans.citations
    assert "sourdough" in ans.answer  # says what was searched


def test_followup_rewrite_is_shown() -> None:
    q = rewrite_followup("What dataset did they use?", ["How does Dense Passage Retrieval train its encoders?"])
    assert q.startswith("What dataset did they use?") and "Dense" in q and "encoders" in q
    assert (
        rewrite_followup("Which datasets are used to evaluate dense passage retrieval?", ["x"])
        == "Which datasets are used to evaluate dense passage retrieval?"
    )


def test_followup_through_qa(built_library: Library) -> None:
    ans = QA(built_library).ask("What do they train it on?", Scope.for_paper("2004.04906"), history=["How is the dense passage retriever trained?"])
    assert ans.rewritten and "retriever" in ans.query


def test_langchain_retriever(built_library: Library) -> None:
    lc = as_langchain_retriever(Retriever.of(built_library), Scope.for_paper("2005.11401"), k=3)
    docs = lc.invoke("How many documents are retrieved?")
    assert len(docs) == 3 and all(d.metadata["paper_id"] == "2005.11401" for d in docs)


def test_openai_path_streams_and_checks_citations(built_library: Library) -> None:
    with FakeLLM("Negatives come from BM25 [1] and in-batch passages [2]. Ignore this [12].") as llm:
        ans_ = OpenAIAnswerer("fake", llm.url, timeout=10, max_retries=0)
        qa = QA(built_library, answerer=ans_)
        pieces = list(qa.stream("How are negatives chosen?", Scope.for_paper("2004.04906")))
        final = pieces[-1]
        assert isinstance(final, Answer)
        assert len([p for p in pieces if isinstance(p, str)]) > 5  # token by token
        assert final.dropped_citations == [12] and "[12]" not in final.answer  # 10 sources are offered
        assert [c.n for c in final.citations] == [1, 2] and final.answerer == "openai"
        prompt = json.dumps(llm.requests[0])
        assert "[1]" in prompt and "cite" in prompt.lower()


def test_llm_answer_marks_unsupported_sentences_and_keeps_the_evidence(built_library: Library) -> None:
    from paperchat.citations import UNSUPPORTED, mark_unsupported
    from paperchat.text import split_sentences

    question, scope = "How are negatives chosen?", Scope.for_paper("2004.04906")
    first = QA(built_library).sources(QA(built_library).retriever.search(question, scope, None))[0]
    quoted = next(s for s in split_sentences(first.text) if len(s.split()) >= 6)
    reply = (
        f"{quoted} [1]. Negatives are chosen by a committee of penguins on the moon [1]. "  # "[1]." after the stop
        "Later work replaced them with synthetic negatives written by GPT-4."
    )
    with FakeLLM(reply) as llm:
        qa = QA(built_library, answerer=OpenAIAnswerer("fake", llm.url, timeout=10, max_retries=0))
        ans = qa.ask(question, scope)
    assert [(st.cited, st.supported) for st in ans.statements] == [([1], True), ([1], False), ([], False)]
    assert ans.statements[0].support >= 0.9 and ans.statements[1].support < 0.5
    marked = mark_unsupported(ans.answer, ans.statements)
    assert marked.count(UNSUPPORTED) == 2 and f"moon [1]. {UNSUPPORTED}" in marked and marked.endswith(f"GPT-4. {UNSUPPORTED}")
    assert ans.evidence and ans.evidence != ans.answer and "(p. " in ans.evidence  # the extractive answer, cited with pages
    from paperchat.cli.ask import format_answer

    shown = format_answer(ans)
    assert "1 of 3 sentences supported" in shown and "Evidence (quoted from the same sources)" in shown


def test_dead_endpoint_falls_back_to_extractive(built_library: Library) -> None:
    with FakeLLM(mode="500") as llm:
        qa = QA(built_library, answerer=OpenAIAnswerer("fake", llm.url, timeout=5, max_retries=1))
        ans = qa.ask("How are negatives chosen?", Scope.for_paper("2004.04906"))
    assert ans.fallback and "failed" in ans.fallback and ans.answerer == "extractive"
    assert ans.citations and "Traceback" not in ans.answer


def test_unknown_paper_is_a_clear_error(built_library: Library) -> None:
    from paperchat.errors import NotFound

    with pytest.raises(NotFound):
        QA(built_library).ask("x", Scope.for_paper("0000.00000"))


def test_topic_answers_quote_what_each_paper_does(shared: Path) -> None:
    """'What methods ...' over a topic: each paper's contribution sentence, not the opening sentence that
    restates the problem in the question's own words (real abstracts from the shared data)."""
    wanted = {"2505.17061", "2602.11824", "2606.29431"}
    records = {}
    with open(SHARED / "abstracts" / "arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if any(w in line[:40] for w in wanted):
                r = json.loads(line)
                records[r["id"]] = r
    sources = [
        Source(n=i, paper_id=pid, title=r["title"], text=f"{r['title']}\n\n{' '.join(r['abstract'].split())}", score=1.0 / i)
        for i, (pid, r) in enumerate(sorted(records.items()), start=1)
    ]
    assert len(sources) == 3
    text = "".join(ExtractiveAnswerer().compose("What methods reduce hallucination in vision-language models?", sources, topic_level=True))
    quotes = re.findall(r'"(.+?)" \[\d\]', text)
    assert len(quotes) == 3
    assert all(re.search(r"\b(we|this paper) (propose|introduce|present)", q, re.I) for q in quotes), quotes
