"""Reading beside AskPDF: quotes placed on real pages of the shared PDFs (ligatures, hyphenation, two
columns), the text under the boxes checked with PDFium's own text, page images and their cache, a stored
copy that cannot be rendered, and `paperchat ask --paper ID --json` carrying the boxes."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from paperchat.errors import SourceError
from paperchat.library import Library
from paperchat.qa import QA
from paperchat.reading import PageView, Reader
from paperchat.reading.document import PageCache, locate
from paperchat.reading.placement import fold, fold_quote, line_boxes, match_span
from paperchat.types import Highlight, Scope
from paperchat.ui import handlers as h

from .conftest import ROOT
from .corpus import PAPER_ID

ARTEFACTS = ROOT / "test-artefacts"  # the browser test's folder

DPR = "rag/2004.04906.pdf"  # two columns, ligatures (ﬁ, ﬃ) and hyphenated line ends
# page 3 of DPR: a sentence that starts at the foot of the left column and ends at the top of the right one
ACROSS_COLUMNS = (
    "such that relevant pairs of questions and passages will have smaller distance (i.e., higher simi- larity) "
    "than the irrelevant ones, by learning a better embedding function."
)


def _text_under(pdf: Path, hl: Highlight) -> str:
    """The folded text PDFium finds inside the highlight's boxes (page points, origin top-left)."""
    doc = pdfium.PdfDocument(str(pdf))
    try:
        tp = doc[hl.page - 1].get_textpage()
        return "".join(fold(tp.get_text_bounded(x0, hl.height - bottom, x1, hl.height - top))[0] for x0, top, x1, bottom in hl.boxes)
    finally:
        doc.close()


def _covers(under: str, quote: str) -> bool:
    """Every folded letter of the quote, in order, in the text under the boxes (which may add a letter or two
    of a neighbouring line that reaches into a line's box)."""
    it = iter(under)
    return all(ch in it for ch in fold_quote(quote))


def _dev_rows(shared: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (shared / "eval" / "askpdf_dev.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if not r["unanswerable"]]


def test_every_askpdf_dev_evidence_is_placed_on_its_gold_page(shared: Path) -> None:
    """The quality gate: each answerable question's evidence (pypdf's text, ligatures and `cor- pus` kept) is
    placed on its gold page, and the boxes cover exactly that text."""
    rows = _dev_rows(shared)
    assert len(rows) == 30
    ARTEFACTS.mkdir(exist_ok=True)
    reader = Reader(cache_mb=16)
    for i, r in enumerate(rows):
        pdf = shared / "pdfs" / str(r["pdf"])
        page = r["gold_pages"][0]  # type: ignore[index]
        hl = locate(pdf, page, str(r["evidence"]))
        assert hl.placed and hl.coverage == 1.0 and hl.boxes, r["id"]
        assert 0 <= min(b[0] for b in hl.boxes) and max(b[2] for b in hl.boxes) <= hl.width, r["id"]
        under = _text_under(pdf, hl)
        assert _covers(under, str(r["evidence"])), (r["id"], under)
        # not much more than the quote: whole lines at most (the first and last lines only partly)
        assert len(under) < 1.6 * len(fold_quote(str(r["evidence"]))) + 120, r["id"]
        if i % 6 == 0:  # five of them as pictures, for a person to look at (test-artefacts/placement-*.png)
            (ARTEFACTS / f"placement-{r['id']}.png").write_bytes(reader.highlighted_png(pdf, page, str(r["evidence"])))


@pytest.mark.parametrize(
    ("page", "quote"),
    [
        (7, "DPR can be made incredibly efﬁcient, processing 995.0 questions per second, returning top 100 pas- sages per question."),
        (5, "trained using the in-batch negative setting (Sec- tion 3.2) with a batch size of 128"),
    ],
)
def test_ligatures_and_hyphenation(shared: Path, page: int, quote: str) -> None:
    pdf = shared / "pdfs" / DPR
    hl = locate(pdf, page, quote)
    assert hl.placed and hl.coverage == 1.0
    assert len(hl.boxes) >= 2  # the quote runs over a line break: one box per line
    assert _covers(_text_under(pdf, hl), quote)
    # the same quote as the ingester cleans it (ligature expanded, hyphen break joined) lands on the same boxes
    from paperchat.text import clean_text

    assert locate(pdf, page, clean_text(quote).replace("pas- sages", "passages")).boxes == hl.boxes


def test_a_quote_across_two_columns(shared: Path) -> None:
    pdf = shared / "pdfs" / DPR
    hl = locate(pdf, 3, ACROSS_COLUMNS)
    assert hl.placed and hl.coverage == 1.0
    middle = hl.width / 2
    assert any(b[2] < middle for b in hl.boxes) and any(b[0] > middle for b in hl.boxes), hl.boxes
    left = max(b[3] for b in hl.boxes if b[2] < middle)
    right = min(b[1] for b in hl.boxes if b[0] > middle)
    assert right < left  # the right column's part sits higher up the page: the end of the left column, then the top of the right
    assert _covers(_text_under(pdf, hl), ACROSS_COLUMNS)


def test_a_quote_that_differs_a_little_is_still_placed(shared: Path) -> None:
    pdf = shared / "pdfs" / DPR
    exact = locate(pdf, 3, ACROSS_COLUMNS)
    changed = ACROSS_COLUMNS.replace("smaller distance", "smaller [3] distance").replace("embedding", "embeding")
    hl = locate(pdf, 3, changed)
    assert hl.placed and 0.6 <= hl.coverage < 1.0
    assert hl.boxes[0][:2] == exact.boxes[0][:2]  # starts where the exact quote starts


def test_a_quote_not_on_the_page_highlights_nothing_and_the_page_still_opens(shared: Path) -> None:
    pdf = shared / "pdfs" / DPR
    quote = "Transformers cannot count the number of pancakes served at a breakfast buffet in Lisbon."
    assert not locate(pdf, 3, quote).placed
    view = Reader(cache_mb=8).view("2004.04906", pdf, 3, quote)
    assert view.image.startswith("data:image/png;base64,") and not view.error
    assert view.highlight is not None and not view.highlight.placed and view.boxes_pct() == []


def test_match_and_merge_units() -> None:
    assert fold("ﬁne-tuning the “cor-\npus”")[0] == "finetuningthecorpus"
    page, _ = fold("alpha beta gamma delta epsilon zeta eta theta iota kappa")
    assert match_span(page, fold_quote("gamma delta")) == ([(9, 19)], 1.0)
    assert match_span(page, fold_quote("nothing of the kind here at all")) == ([], 0.0)
    # two characters on one line merge; the next line starts a new box
    assert line_boxes([(10, 100, 15, 110), (16, 100, 20, 110), (10, 112, 15, 122)]) == [(10, 100, 20, 110), (10, 112, 15, 122)]


def test_page_images_are_cached_and_bounded(shared: Path) -> None:
    pdf = shared / "pdfs" / DPR
    cache = PageCache(max_bytes=600_000)
    png, w, h_ = cache.png(pdf, 1, 1.0)
    assert png.startswith(b"\x89PNG") and (w, h_) == (596, 842)  # A4
    assert cache.png(pdf, 1, 1.0)[0] is png and cache.hits == 1 and cache.misses == 1
    for n in (2, 3, 4, 5):
        cache.png(pdf, n, 1.0)
    assert cache.held_bytes <= 600_000  # the oldest pages went
    with pytest.raises(SourceError, match="no page 99"):
        cache.png(pdf, 99, 1.0)


def test_the_viewer_boxes_follow_the_page() -> None:
    hl = Highlight(page=1, width=200.0, height=400.0, boxes=[(50.0, 100.0, 150.0, 110.0)], placed=True, coverage=1.0)
    view = PageView("p", 1, 1, 1.0, highlight=hl)
    assert view.boxes_pct() == [(24.5, 24.75, 51.0, 3.0)]


# -- through the facade and the app's handlers, on the demo store's four-page PDF -----------------------


def test_viewer_highlights_a_citation_and_a_damaged_copy_says_so_while_askpdf_works(demo_library: Library) -> None:
    core = h.Core(demo_library.settings, demo_library, QA(demo_library))
    ans = core.place_citations(core.ask("How are negative passages chosen when training the encoders?", Scope.for_paper(PAPER_ID)))
    pdf_cites = [c for c in ans.citations if c.page]
    assert pdf_cites and all(c.highlight is not None and c.highlight.placed and c.highlight.boxes for c in pdf_cites)
    c = pdf_cites[0]
    html, shown, has_pdf = h.viewer(core, PAPER_ID, c.page or 1, c.quote)
    assert has_pdf and shown == c.page and 'class="pc-page-img" src="data:image/png;base64,' in html
    assert html.count('class="pc-hl"') == len(c.highlight.boxes) and "cited passage highlighted" in html  # type: ignore[union-attr]

    # a paper without a PDF keeps the abstract view: no viewer
    plain_id = next(p.id for p in demo_library.catalog.iter_papers() if not p.pdf_path)
    assert core.page_view(plain_id) is None and h.viewer(core, plain_id)[2] is False

    # the stored copy damaged on disk: the viewer says so in place, AskPDF answers from the index as before
    stored = core.stored_pdf(PAPER_ID)
    assert stored is not None and stored.parent == demo_library.settings.uploads_dir
    stored.write_bytes(b"%PDF-1.4\n" + b"\x00garbage" * 200)
    core.reader.cache.clear()
    html, _shown, has_pdf = h.viewer(core, PAPER_ID, 2, c.quote)
    assert has_pdf and 'class="pc-error"' in html and "cannot be shown" in html and "AskPDF still answers" in html
    again = core.place_citations(core.ask("How are negative passages chosen when training the encoders?", Scope.for_paper(PAPER_ID)))
    assert again.citations and all(c.highlight is None for c in again.citations)


def test_ask_json_gives_each_pdf_citation_its_boxes(demo_library: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    from paperchat.cli import main

    data = demo_library.settings.data_dir
    demo_library.close()
    monkeypatch.setenv("PAPERCHAT_EMBEDDER", "hashing")
    monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(data))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["ask", "--paper", PAPER_ID, "--json", "How are negative passages chosen when training the encoders?"]) == 0
    cites = json.loads(out.getvalue())["citations"]
    pdf_cites = [c for c in cites if c["page"]]
    assert pdf_cites
    for c in pdf_cites:
        hl = c["highlight"]
        assert hl["page"] == c["page"] and hl["placed"] and hl["boxes"]
        assert all(0 <= x0 < x1 <= hl["width"] and 0 <= top < bottom <= hl["height"] for x0, top, x1, bottom in hl["boxes"])
    assert all(c["highlight"] is None for c in cites if not c["page"])


def test_an_unreadable_file_is_a_source_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4\nnot really")
    with pytest.raises(SourceError, match="cannot be shown"):
        locate(bad, 1, "anything at all")
    view = Reader(cache_mb=1).view("x", bad, 1, "anything")
    assert view.error and not view.image
    shutil.rmtree(tmp_path, ignore_errors=True)
