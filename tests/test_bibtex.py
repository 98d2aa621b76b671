"""BibTeX export: hostile titles survive a real parser (bibtexparser), keys are unique, selections work."""

from __future__ import annotations

import datetime as dt

import pytest

from paperchat.bibtex import escape, select, to_bibtex
from paperchat.cli import main
from paperchat.library import Library
from paperchat.types import Paper, is_arxiv_id
from tests.corpus import PAPER_ID, PAPER_QUESTIONS

bibtexparser = pytest.importorskip("bibtexparser")


def _paper(pid: str, title: str, authors: list[str]) -> Paper:
    return Paper(id=pid, title=title, authors=authors, date=dt.date(2026, 5, 4), categories=["cs.CL"], url="")


def test_round_trip_through_a_parser() -> None:
    papers = [
        _paper("2605.00001", "R&D at 100% with $x_1$ # {unbalanced} } braces {", ["José Müller", "A. B. O'Neil"]),
        _paper("2605.00002", "Attention Is All You Need, Again", ["José Müller"]),
        _paper("2605.00003", "Attention Is All You Need, Again", ["José Müller"]),
    ]
    text = to_bibtex(papers)
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks
    entries = lib.entries
    assert [e.key for e in entries] == ["muller2026unbalanced", "muller2026attention", "muller2026attentiona"]
    first = entries[0]
    assert first.entry_type == "misc" and first["eprint"] == "2605.00001" and first["archivePrefix"] == "arXiv"
    assert "José Müller and A. B. O'Neil" == first["author"]
    assert "R\\&D at 100\\%" in first["title"] and first["year"] == "2026"


def test_escape_balances_braces() -> None:
    for raw in ["}{", "a {b", "a} b {c} {", "\\", "50% _x_"]:
        out = escape(raw)
        depth = 0
        for ch in out:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0
        assert depth == 0 and not out.endswith("\\")


def test_select_and_cli(demo_library: Library, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    lib = demo_library  # the demo corpus (hashing embedder, built once per session): the catalogue is what matters
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "hashing")  # main() opens the same store
    rag = select(lib, topic="rag", since=dt.date(2026, 6, 1))
    assert rag and all(p.date and p.date >= dt.date(2026, 6, 1) and "rag" in p.topics for p in rag)
    pid = rag[0].id
    lib.catalog.save(pid)
    assert [p.id for p in select(lib, saved=True)] == [pid]
    d = str(lib.settings.data_dir)
    lib.close()
    assert main(["--data-dir", d, "export", "bibtex", "--topic", "rag", "--since", "2026-06-01"]) == 0
    parsed = bibtexparser.parse_string(capsys.readouterr().out)
    assert len(parsed.entries) == len(rag) and not parsed.failed_blocks
    assert main(["--data-dir", d, "export", "bibtex", "--ids", "no-such-id"]) != 0
    assert main(["--data-dir", d, "export", "bibtex"]) != 0


def bibtex_link(sources_html: str) -> tuple[str, str]:
    """(the download's label, the BibTeX it holds) of the button under an answer."""
    import html
    import re
    from urllib.parse import unquote

    m = re.search(r'<a class="pc-btn pc-bibtex" download="cited-papers.bib" href="data:application/x-bibtex;charset=utf-8,([^"]*)">([^<]*)</a>', sources_html)
    assert m, sources_html[:500]
    return m.group(2), unquote(html.unescape(m.group(1)))


def test_the_button_under_an_answer_exports_the_cited_papers(demo_library: Library) -> None:
    """Part 7: the BibTeX of the papers an answer cites, as a download under the answer (topic and paper chats)."""
    from paperchat.qa import QA
    from paperchat.ui import handlers as h

    core = h.Core(demo_library.settings, demo_library, QA(demo_library))
    for kind, target, question in [("topic", "rag", "How do retrieval-augmented models use retrieved documents?"),
                                   ("paper", PAPER_ID, PAPER_QUESTIONS[1][0])]:
        *_, (_msgs, sources) = h.chat_stream(core, question, kind, target, [])
        ans = core.ask(question, h.make_scope(core, kind, target))
        cited = list(dict.fromkeys(c.paper_id for c in ans.citations))
        assert cited, ans.answer
        label, text = bibtex_link(sources)
        assert label == f"BibTeX of the {len(cited)} cited paper{'s' if len(cited) != 1 else ''}"
        parsed = bibtexparser.parse_string(text)
        assert not parsed.failed_blocks
        papers = core.papers(cited)
        assert [e["title"].strip("{}") for e in parsed.entries] == [escape(papers[i].title) for i in cited]
        assert [e.fields_dict["eprint"].value for e in parsed.entries if "eprint" in e.fields_dict] == [i for i in cited if is_arxiv_id(i)]
