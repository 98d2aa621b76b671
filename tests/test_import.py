"""`paperchat import FILE --collection NAME`: a Zotero export (BibTeX or CSL-JSON) as a personal collection.
Entries in the store join it (by eprint, arXiv URL or the 10.48550 DOI), entries with an abstract are ingested,
the rest and broken entries are reported (by line); the collection is asked about like a topic."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperchat.assistant import Assistant
from paperchat.cli import main
from paperchat.errors import InputError, NotFound, SourceError
from paperchat.importing import arxiv_id_of, read_references
from paperchat.settings import Settings
from paperchat.types import Scope

FIX = Path(__file__).parent / "fixtures"
BIB, CSL = FIX / "refs" / "zotero.bib", FIX / "refs" / "zotero.json"


@pytest.fixture
def assistant(fast_settings: Settings) -> Iterator[Assistant]:
    a = Assistant(fast_settings)
    assert a.ingest_record_files([FIX / "arxiv" / "seed.jsonl"], show_progress=False).papers == 3
    yield a
    a.close()


def test_arxiv_ids_are_found_where_zotero_puts_them() -> None:
    assert arxiv_id_of("2305.18290") == "2305.18290"
    assert arxiv_id_of(None, "https://arxiv.org/abs/2305.18290v3") == "2305.18290"
    assert arxiv_id_of("http://arxiv.org/pdf/2305.18290v1.pdf") == "2305.18290"
    assert arxiv_id_of("10.48550/arXiv.2305.18290") == "2305.18290"
    assert arxiv_id_of("https://doi.org/10.48550/ARXIV.2305.18290") == "2305.18290"
    assert arxiv_id_of("arXiv:cs/0101001") == "cs/0101001"
    assert arxiv_id_of("10.1145/3442188.3445922", "https://example.org/x") is None


def test_a_bibtex_export_becomes_a_collection_with_broken_entries_reported_by_line(assistant: Assistant) -> None:
    rep = assistant.import_collection(BIB, "My Thesis")
    assert rep.slug == "my-thesis" and rep.entries == 7
    assert rep.in_store == 2  # the eprint and the 10.48550 DOI of seed papers
    assert rep.ingested[0] == "2606.30774" and rep.ingested[1].startswith("ref-") and len(rep.ingested) == 2  # arXiv URL; no id
    assert rep.size == 4
    where = dict(rep.problems)
    assert set(where) == {"zotero.bib:18", "zotero.bib:52", "zotero.bib:59"}, rep.problems
    assert where["zotero.bib:18"].startswith("broken entry '@misc{broken2026,'")
    assert "arXiv 2505.03910 is not in the store and no abstract" in where["zotero.bib:52"]
    assert "notitle: no arXiv id" in where["zotero.bib:59"]
    p = assistant.papers(["2606.30774"])["2606.30774"]
    assert p.authors == ["Ann Lee", "Bo Kim"] and p.date is not None and p.date.isoformat() == "2026-06-01"
    ids = assistant.collection_papers("my-thesis")
    assert set(ids) == {"2606.23693", "2606.23695", "2606.30774", rep.ingested[1]}
    again = assistant.import_collection(BIB, "My Thesis")  # idempotent: everything is in the store now
    assert again.size == 4 and again.in_store == 4 and not again.ingested


def test_a_csl_json_export_imports_too(assistant: Assistant) -> None:
    rep = assistant.import_collection(CSL, "reading")
    assert rep.in_store == 1 and len(rep.ingested) == 2 and rep.size == 3
    assert [w for w, _ in rep.problems] == ["zotero.json item 4", "zotero.json item 5"]
    entries, _ = read_references(CSL)
    assert entries[1].arxiv_id == "2606.30774" and entries[1].date == "2026-06-30" and entries[2].date == "2025"


def test_a_collection_is_asked_about_like_a_topic(assistant: Assistant) -> None:
    assistant.import_collection(BIB, "thesis")
    inside = set(assistant.collection_papers("thesis"))
    ans = assistant.ask("execution-based policy optimization for SQL clauses", Scope.for_collection("thesis"))
    assert ans.sources and {s.paper_id for s in ans.sources} <= inside
    assert ans.scope.describe() == "collection thesis"
    everything = assistant.ask("graph neural networks modularity", Scope())
    assert "2606.23694" in {s.paper_id for s in everything.sources}  # the seed paper outside the collection
    scoped = assistant.ask("graph neural networks modularity", Scope.for_collection("thesis"))
    assert "2606.23694" not in {s.paper_id for s in scoped.sources}
    with pytest.raises(NotFound):
        assistant.ask("anything", Scope.for_collection("nope"))
    assistant.follow("thesis")  # followed like a topic: the digest lists its new papers
    assert {p.id for t in assistant.digest(peek=True).topics for p in t.papers} == inside


def test_bad_inputs(assistant: Assistant, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="already a topic"):
        assistant.import_collection(BIB, "RAG")
    with pytest.raises(SourceError, match="no such file"):
        assistant.import_collection(tmp_path / "none.bib", "x")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"title": "x",}]')
    with pytest.raises(SourceError, match="not valid JSON"):
        assistant.import_collection(bad, "x")
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    with pytest.raises(SourceError, match="no BibTeX entry"):
        assistant.import_collection(text, "x")


def test_the_import_command(assistant: Assistant, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = assistant.settings.data_dir
    assistant.close()
    monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(data))
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "hashing")
    assert main(["import", str(BIB), "--collection", "thesis"]) == 1  # some entries reported
    out, err = capsys.readouterr()
    assert out.startswith("collection 'thesis': 4 papers (2 already in the store, 2 ingested from their abstracts) of 7 entries; 3 reported")
    assert "ask about it: paperchat ask --collection thesis" in out
    assert "  zotero.bib:18: broken entry" in err
    assert main(["import", "--list"]) == 0 and "thesis" in capsys.readouterr().out
    assert main(["ask", "--collection", "thesis", "execution-based policy optimization", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["scope"]["kind"] == "collection" and got["sources"]
    assert main(["import", str(BIB)]) == 2
    assert capsys.readouterr().err.strip() == "paperchat: error: give a file and --collection NAME (e.g. paperchat import zotero.bib --collection thesis)"


def test_a_collection_exports_as_bibtex(assistant: Assistant) -> None:
    import bibtexparser

    assistant.import_collection(BIB, "thesis")
    text, n = assistant.bibtex(topic="thesis")
    assert n == 4 and len(bibtexparser.parse_string(text).entries) == 4


def test_topics_show_lists_a_collection(assistant: Assistant) -> None:
    assistant.import_collection(BIB, "thesis")
    d = assistant.topic_detail("thesis")
    assert d.name == "thesis" and len(d.paper_ids) == 4 and d.how == "as a personal collection" and "zotero.bib" in d.extra


def test_the_following_tab_lists_collections(assistant: Assistant) -> None:
    from paperchat.ui import handlers as h

    assert "<h3>Collections</h3>" not in h.lists_html(assistant)  # type: ignore[arg-type]
    assistant.import_collection(BIB, "My <Thesis>")
    html = h.lists_html(assistant)  # type: ignore[arg-type]
    assert '<a class="pc-tag" href="#topic/my-thesis">My &lt;Thesis&gt;</a> 4 papers (imported from zotero.bib)' in html


def test_a_collection_has_a_page_and_a_chat_in_the_app(assistant: Assistant) -> None:
    """The app's Topic tab serves a collection as it does a topic: page, papers, Follow and a scoped chat."""
    from paperchat.ui import handlers as h

    assistant.import_collection(BIB, "thesis")
    inside = assistant.collection_papers("thesis")
    head = h.topic_header(assistant, "thesis")  # type: ignore[arg-type]
    assert head["total"] == 4 and "<h2>thesis</h2>" in head["html"] and "imported from zotero.bib" in head["html"]
    assert head["momentum"].recent + head["momentum"].previous <= 4
    html, total, pages = h.topic_papers(assistant, "thesis")  # type: ignore[arg-type]
    assert (total, pages) == (4, 1) and [i for i in inside if f'data-paper="{i}"' in html] == inside
    assert "2606.23694" not in html  # the seed paper outside the collection
    assert h.toggle_follow(assistant, "thesis") and 'href="#topic/thesis"' in h.lists_html(assistant).split("<h3>New")[0]  # type: ignore[arg-type]
    # "Ask about this topic" on the collection's page: a hard filter on its papers
    question = "graph neural networks modularity"
    assert "2606.23694" in {s.paper_id for s in assistant.ask(question, Scope()).sources}
    assert h.make_scope(assistant, "topic", "thesis") == Scope.for_collection("thesis")  # type: ignore[arg-type]
    *_, (msgs, sources) = h.chat_stream(assistant, question, "topic", "thesis", [])  # type: ignore[arg-type]
    linked = set(re.findall(r'href="#paper/([^"/]+)', sources))
    assert msgs[-1]["role"] == "assistant" and linked and linked <= set(inside), (linked, inside)
