from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from paperchat.citations import build_citations, parse_citations, split_sentences, strip_invalid, support
from paperchat.types import Source


def test_parse_messy_model_output() -> None:
    text = "Dense retrieval helps [1]. BM25 is strong [2, 3][5]. Both [1-3] and [4–6]; see [ 7 ; 8 ]. Not a cite [a], [2024 is a year]."
    assert parse_citations(text) == [1, 2, 3, 5, 4, 6, 7, 8]


def test_strip_invalid_drops_unoffered() -> None:
    text, dropped = strip_invalid("A [1]. B [9]. C [2, 9]. D [1-3].", offered=[1, 2])
    assert text == "A [1]. B. C [2]. D [1, 2]."
    assert dropped == [3, 9]


def test_split_sentences_keeps_abbreviations() -> None:
    s = "We use BM25, e.g. Lucene. Results improve (Fig. 2). Lewis et al. show this. Done."
    assert split_sentences(s) == ["We use BM25, e.g. Lucene.", "Results improve (Fig. 2).", "Lewis et al. show this.", "Done."]


def _src(n: int, text: str) -> Source:
    return Source(n=n, paper_id=f"p{n}", title=f"T{n}", date=dt.date(2025, 1, 1), text=text, score=1.0)


def test_build_citations_support_and_quote() -> None:
    sources = [_src(1, "The retriever is DPR. It uses a BERT bi-encoder trained on NQ."), _src(2, "Unrelated text about cooking pasta.")]
    cites = build_citations("The retriever is a BERT bi-encoder [1]. Pasta is tasty [2]. Made up [3].", sources)
    assert [c.n for c in cites] == [1, 2]
    assert cites[0].quote == "It uses a BERT bi-encoder trained on NQ." and cites[0].support >= 0.75
    assert cites[1].support < cites[0].support
    assert support("The retriever is DPR.", sources[0].text) == 1.0


@given(st.text(max_size=300))
def test_parser_never_crashes_and_only_returns_positive_ints(text: str) -> None:
    nums = parse_citations(text)
    assert all(isinstance(n, int) and n > 0 for n in nums)
    cleaned, dropped = strip_invalid(text, offered=[1, 2])
    assert set(parse_citations(cleaned)) <= {1, 2}


def test_reference_markers_inside_quotes_are_not_citations() -> None:
    text = 'The paper says: "Dense retrieval [12] beats BM25 [3, 4] on NQ." [1]'
    assert parse_citations(text) == [1]
    cleaned, dropped = strip_invalid(text, offered=[1])
    assert cleaned == text and dropped == []
