from __future__ import annotations

import gzip
import json
from pathlib import Path

from paperchat.ingestion.records import Failure, parse_atom, read_records, record_to_paper
from paperchat.text import clean_text, normalize_for_match
from paperchat.types import Paper

from .conftest import SHARED, jsonl, read_sample


def test_clean_text_ligatures_hyphens_whitespace() -> None:
    raw = "The \ufb01rst e\ufb00ect of the cor-\npus is   large.\n\nGPT-\n4 stays\tjoined"
    assert clean_text(raw) == "The first effect of the corpus is large. GPT- 4 stays joined"


def test_normalize_for_match_joins_quote_artifacts() -> None:
    # evidence quotes keep pypdf artefacts ("\ufb01", "cor- pus"); the chunk text is cleaned
    assert normalize_for_match("the cor- pus is \ufb01ne") == normalize_for_match("The corpus is fine")


def test_listing_shape_and_dates(shared: Path, tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text("".join(read_sample(20)), encoding="utf-8")
    papers = [p for p in read_records(path)]
    assert len(papers) == 20 and all(isinstance(p, Paper) for p in papers)
    first = json.loads(read_sample(1)[0])
    p0 = papers[0]
    assert isinstance(p0, Paper)
    assert p0.id == first["id"] and p0.date is not None and p0.date.isoformat() == first["listing_date"]
    assert p0.authors == first["authors"] and "\n" not in p0.abstract


def test_kaggle_shape_from_real_record(shared: Path) -> None:
    rec = json.loads(read_sample(1)[0])
    kaggle = {
        "id": rec["id"],
        "title": rec["title"],
        "authors": ", ".join(rec["authors"][:-1]) + " and " + rec["authors"][-1],
        "abstract": rec["abstract"],
        "categories": " ".join(rec["categories"]),
        "versions": [{"version": "v1", "created": "Mon, 17 Mar 2025 10:00:00 GMT"}, {"version": "v2", "created": "Tue, 1 Apr 2025 10:00:00 GMT"}],
        "update_date": "2025-04-01",
    }
    p = record_to_paper(kaggle)
    assert p.authors == rec["authors"]
    assert p.categories == rec["categories"]
    assert p.date is not None and p.date.isoformat() == "2025-03-17"  # first version, not update_date


def test_bad_lines_are_reported_and_the_rest_read(tmp_path: Path) -> None:
    good = {"id": "2501.00001v2", "title": "A title", "abstract": "An abstract.", "authors": ["A"], "listing_date": "2025-01-02"}
    content = (
        jsonl([good]).encode()
        + b'{"id": "x", "title": \n'
        + b'{"id": "2501.00002", "title": "caf\xe9", "abstract": "x"}\n'
        + jsonl([{"id": "2501.00003", "abstract": "no title"}, {"id": "2501.00004", "title": "no abstract"}, good]).encode()
    )
    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(content)
    out = list(read_records(path))
    papers = [p for p in out if isinstance(p, Paper)]
    fails = [f for f in out if isinstance(f, Failure)]
    assert [p.id for p in papers] == ["2501.00001"]
    reasons = [f.reason for f in fails]
    assert any("malformed JSON" in r for r in reasons)
    assert any("invalid UTF-8" in r for r in reasons)
    assert any("no title" in r for r in reasons) and any("no abstract" in r for r in reasons)
    assert any("duplicate id 2501.00001" in r for r in reasons)
    assert all(f.source.startswith(str(path) + ":") for f in fails)


def test_huge_abstract_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(jsonl([{"id": "1", "title": "t", "abstract": "word " * 250_000}]))
    (fail,) = list(read_records(path))
    assert isinstance(fail, Failure) and "characters" in fail.reason


ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title type="html">ArXiv Query: search_query=all:retrieval</title>
  <entry>
    <id>http://arxiv.org/abs/2005.11401v4</id>
    <updated>2021-04-12T15:42:21Z</updated>
    <published>2020-05-22T05:23:14Z</published>
    <title>Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks</title>
    <summary>  Large pre-trained language models have been shown to store factual knowledge
in their parameters.</summary>
    <author><name>Patrick Lewis</name></author>
    <author><name>Ethan Perez</name></author>
    <arxiv:primary_category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/2101.00001v1</id>
    <title></title>
    <summary>No title here.</summary>
  </entry>
</feed>"""


def test_atom_response() -> None:
    out = list(parse_atom(ATOM, "resp.xml"))
    paper, fail = out
    assert isinstance(paper, Paper) and isinstance(fail, Failure)
    assert paper.id == "2005.11401" and paper.categories == ["cs.CL", "cs.LG"]
    assert paper.date is not None and paper.date.isoformat() == "2020-05-22"
    assert paper.authors == ["Patrick Lewis", "Ethan Perez"]
    assert "no title" in fail.reason
    assert list(parse_atom("<html>", "x"))[0].reason.startswith("not a valid Atom")  # type: ignore[union-attr]


def test_latex_in_titles_and_abstracts_is_shown_as_plain_text(shared: Path) -> None:
    from paperchat.tex import plain

    assert plain("AT$^2$PO: Agentic Turn-based Policy Optimization") == "AT²PO: Agentic Turn-based Policy Optimization"
    assert plain(r"we propose \textbf{STAR-S} (\textbf{S}elf-\textbf{TA}ught)") == "we propose STAR-S (Self-TAught)"
    assert plain(r"a 3$\times$ speedup, $\sim$40\% fewer tokens") == "a 3× speedup, ~40% fewer tokens"
    assert plain(r"$O(n^2)$ with $k_{1}$ and $\alpha=0.5$") == "O(n²) with k₁ and α=0.5"
    assert plain(r"code at \href{https://x.org}{our site}\footnote{thanks}") == "code at our site"
    assert plain("costs $5 and $10") == "costs $5 and $10"  # money, not math
    plain_text = "Plain text (with braces {x}) stays as it is."
    assert plain(plain_text) == plain_text
    # every record of the shared abstracts: no markup command survives, nothing is emptied
    rows = [json.loads(line) for line in open(SHARED / "abstracts" / "arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl", encoding="utf-8")]
    marked = [r for r in rows if "\\textbf" in r["abstract"] or "\\emph" in r["abstract"]]
    assert len(marked) > 1000
    for r in marked:
        out = plain(r["abstract"])
        assert "\\textbf" not in out and "\\emph" not in out and len(out) > 0.7 * len(r["abstract"])


def test_text_module_is_a_leaf() -> None:
    # paperchat.text is the one place for plain text helpers; any layer may import it only while it
    # imports nothing of ours
    import ast

    import paperchat.text

    tree = ast.parse(Path(paperchat.text.__file__).read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n == "paperchat" or n.startswith("paperchat.")]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]


def test_arxiv_ids_and_sidecar_months() -> None:
    from paperchat.dates import parse_date
    from paperchat.text import is_arxiv_id

    assert is_arxiv_id("2301.01234") and is_arxiv_id("hep-th/9901001") and is_arxiv_id("math.AG/0101001")
    assert not is_arxiv_id("2301.01234v2") and is_arxiv_id("2301.01234v2", versioned=True)
    assert not is_arxiv_id("pdf-0123456789ab", versioned=True) and not is_arxiv_id("2301.01234\n", versioned=True)
    assert parse_date("2024-03") is None and str(parse_date("2024-03", month=True)) == "2024-03-01"
