from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from paperchat.errors import SourceError
from paperchat.ingestion.chunking import PageChunker
from paperchat.ingestion.pdf import parse_many, read_pdf
from tests.pdfmaker import blank_pdf


def test_real_pdf_pages_title_and_id(five_pdfs: list[Path]) -> None:
    pdf = read_pdf(five_pdfs[0])
    assert pdf.arxiv_id == "2005.11401"
    assert "Retrieval-Augmented Generation" in pdf.title
    assert len(pdf.pages) == len(PdfReader(str(five_pdfs[0])).pages)
    assert all("\ufb01" not in p.text for p in pdf.pages)
    chunks = PageChunker(1000, 150).chunk_pages("2005.11401", pdf.pages)
    assert chunks and all(c.page is not None for c in chunks)
    for c in chunks[:50]:  # offsets point at the quoted text on its page
        page = pdf.pages[c.page - 1]  # type: ignore[operator]
        assert page.text[c.start : c.end] == c.text
        assert len(c.text) <= 1000


def _bad_inputs(src: Path, tmp: Path) -> dict[str, Path]:
    data = src.read_bytes()
    files = {}
    files["truncated"] = tmp / "truncated.pdf"
    files["truncated"].write_bytes(data[: len(data) // 3])
    files["empty"] = tmp / "empty.pdf"
    files["empty"].write_bytes(b"")
    files["html"] = tmp / "page.pdf"
    files["html"].write_bytes(b"<!DOCTYPE html><html><body>Not found</body></html>")
    w = PdfWriter(clone_from=str(src))
    w.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    files["encrypted"] = tmp / "encrypted.pdf"
    with open(files["encrypted"], "wb") as fh:
        w.write(fh)
    files["scanned"] = blank_pdf(tmp / "scanned.pdf", 3)
    return files


@pytest.mark.parametrize("extractor", ["pypdf", "pdfium"])
@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("truncated", "damaged or truncated"),
        ("empty", "empty"),
        ("html", "HTML"),
        ("encrypted", "password"),
        ("scanned", "no extractable text"),
    ],
)
def test_bad_pdfs_give_clear_reasons(five_pdfs: list[Path], tmp_path: Path, name: str, words: str, extractor: str) -> None:
    path = _bad_inputs(five_pdfs[2], tmp_path)[name]
    with pytest.raises(SourceError) as exc:
        read_pdf(path, extractor=extractor)
    assert words in str(exc.value)


def test_pdfium_extractor_reads_the_same_pages(five_pdfs: list[Path]) -> None:
    """PDFium (the fast extractor) numbers pages as pypdf does and reads nearly the same words on each page;
    its line-end hyphenation marks are resolved ("rea-/soning" -> "reasoning"), never left in the text."""
    for path in five_pdfs[:3]:
        ref, fast = read_pdf(path), read_pdf(path, extractor="pdfium")
        assert (fast.arxiv_id, fast.title, fast.sha256) == (ref.arxiv_id, ref.title, ref.sha256)
        assert [p.number for p in fast.pages] == [p.number for p in ref.pages]
        shared = total = 0
        for a, b in zip(ref.pages, fast.pages, strict=True):
            assert "\ufffe" not in b.text
            wa, wb = set(a.text.split()), set(b.text.split())
            shared += len(wa & wb)
            total += len(wa | wb)
        assert shared / total > 0.9, path  # measured 0.95-0.97 on these: formulas and chart labels differ
    with pytest.raises(ValueError, match="unknown PDF extractor"):
        read_pdf(five_pdfs[0], extractor="ocr")


def test_pdfium_hyphenation_marks() -> None:
    from paperchat.ingestion.pdf import pdfium_page_text

    assert pdfium_page_text("rea\ufffe\r\nsoning about be\ufffehavior") == "reasoning about behavior"
    assert pdfium_page_text("R(q, o) \ufffe mean(R)") == "R(q, o) - mean(R)"


@pytest.mark.slow  # parser worker processes
def test_parse_many_isolates_failures(five_pdfs: list[Path], tmp_path: Path) -> None:
    bad = _bad_inputs(five_pdfs[2], tmp_path)
    results = list(parse_many([bad["truncated"], five_pdfs[2], bad["html"]], 50, 60, workers=1))
    assert [r.pdf is not None for r in results] == [False, True, False]
    assert results[0].error and results[2].error
