"""PDF reading with pypdf (or PDFium, a setting): cleaned text per page, title and arXiv id. Runs in worker processes with a
time limit (see `parse_many`), so a file that hangs the parser is reported and skipped."""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperchat.errors import SourceError
from paperchat.hashing import sha256_file
from paperchat.text import clean_text
from paperchat.types import Page, ParsedPdf
from paperchat.workers import die_with_parent

_ARXIV_STAMP = re.compile(r"arXiv:\s?(\d{4}\.\d{4,5})(v\d+)?")
_ARXIV_IN_NAME = re.compile(r"(?<!\d)(\d{4}\.\d{4,5})(v\d+)?(?!\d)")
MIN_TEXT_CHARS = 200


def check_pdf_file(path: Path, max_mb: float) -> None:
    """Cheap checks before parsing: exists, not empty, not too big, starts like a PDF."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(f"cannot read the file ({exc.strerror})", "check the path and its permissions") from exc
    if size == 0:
        raise SourceError("the file is empty (0 bytes)", "download or export it again")
    if size > max_mb * 1024 * 1024:
        raise SourceError(f"the file is {size / 1e6:.1f} MB, over the {max_mb:g} MB limit", "raise PAPERCHAT_MAX_PDF_MB")
    with open(path, "rb") as fh:
        head = fh.read(1024)
    if b"%PDF-" not in head:
        kind = "an HTML page" if b"<html" in head.lower() or b"<!doctype" in head.lower() else "not a PDF"
        raise SourceError(f"the file is {kind} (no %PDF header)", "download the real PDF and try again")


def _title_from(meta_title: str | None, first_page_raw: str, path: Path) -> str:
    if meta_title:
        t = clean_text(meta_title)
        bad = {"untitled", "", "title", path.stem.lower()}
        if 8 <= len(t) <= 300 and t.lower() not in bad and not t.lower().endswith((".pdf", ".dvi", ".tex")) and not t.lower().startswith("microsoft word"):
            return t
    for line in first_page_raw.splitlines():
        line = clean_text(line)
        if 12 <= len(line) <= 250 and not _ARXIV_STAMP.search(line) and not re.match(r"^(proceedings|published|preprint|under review|arxiv)", line, re.I):
            return line
    return path.stem


def _open_reader(path: Path) -> Any:
    """pypdf's reader; when the cross-reference table is damaged, once more with it ignored, so that pypdf
    rebuilds it by scanning the objects (what most PDF viewers do)."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path), strict=False)
        if not reader.is_encrypted:  # (an encrypted file's pages can be read only after decrypting)
            _ = len(reader.pages)
        return reader
    except PdfReadError as first:
        data = path.read_bytes()
        i = data.rfind(b"startxref")
        if i < 0:
            raise
        try:
            reader = PdfReader(io.BytesIO(data[:i] + b"startxref\n0\n%%EOF\n"), strict=False)
            _ = len(reader.pages)
        except Exception:
            raise first from None
        return reader


EXTRACTORS = ("pypdf", "pdfium")


def read_pdf(path: Path, max_mb: float = 50.0, max_pages: int = 2000, extractor: str = "pypdf") -> ParsedPdf:
    """Parse one PDF into cleaned pages; raises SourceError with the reason when it cannot.

    `extractor` picks the text extractor: "pypdf" (the reference) or "pdfium" (PDFium through pypdfium2,
    about 12x faster on the shared PDFs). Both number pages by their physical order, so page numbers agree.
    """
    check_pdf_file(path, max_mb)
    if extractor == "pdfium":
        pages, first_raw, meta_title = _pages_pdfium(path, max_pages)
    elif extractor == "pypdf":
        pages, first_raw, meta_title = _pages_pypdf(path, max_pages)
    else:
        raise ValueError(f"unknown PDF extractor {extractor!r}: use one of {', '.join(EXTRACTORS)}")
    n = len(pages)
    if n == 0:
        raise SourceError("the PDF has no pages", "download it again")
    total = sum(len(p.text) for p in pages)
    if total < MIN_TEXT_CHARS:
        raise SourceError(
            f"no extractable text in {n} page(s) (a scanned or image-only PDF?)",
            "run OCR on it first (for example `ocrmypdf in.pdf out.pdf`) and ingest the result",
        )
    m = _ARXIV_STAMP.search(first_raw) or _ARXIV_IN_NAME.search(path.name)
    return ParsedPdf(
        path=str(path),
        sha256=sha256_file(path),
        title=_title_from(meta_title, first_raw, path),
        arxiv_id=m.group(1) if m else None,
        pages=pages,
    )


def _too_many_pages(n: int, max_pages: int) -> SourceError:
    return SourceError(
        f"the PDF has {n} pages, over the {max_pages} page limit (a book or a proceedings volume?)", "split it, or raise PAPERCHAT_MAX_PDF_PAGES"
    )


def _pages_pypdf(path: Path, max_pages: int) -> tuple[list[Page], str, str | None]:
    """(cleaned pages, the first page's raw text, the metadata title) by pypdf."""
    from pypdf.errors import PdfReadError

    try:
        reader = _open_reader(path)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception as exc:  # pypdf raises several types here, some from its crypto backend
                raise SourceError(f"the PDF is encrypted and cannot be opened ({exc})", "save an unencrypted copy") from exc
            if not ok:
                raise SourceError("the PDF is encrypted with a password", "save a copy without the password")
        n = len(reader.pages)
        if n > max_pages:
            raise _too_many_pages(n, max_pages)
        pages: list[Page] = []
        first_raw = ""
        for i in range(n):
            try:
                raw = reader.pages[i].extract_text() or ""
            except Exception:  # one broken page must not lose the rest of the paper
                raw = ""
            if i == 0:
                first_raw = raw
            pages.append(Page(number=i + 1, text=clean_text(raw)))
        meta_title = None
        try:
            meta_title = reader.metadata.title if reader.metadata else None
        except Exception:
            meta_title = None
    except SourceError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, AssertionError, IndexError, RecursionError) as exc:
        cause: BaseException | None = exc
        while cause is not None:  # deeply nested objects: a RecursionError, raw or wrapped by pypdf
            if isinstance(cause, RecursionError):
                raise SourceError("the PDF's objects are nested too deeply to parse", "re-save the PDF with another tool") from exc
            cause = cause.__cause__ or cause.__context__
        raise SourceError(f"the PDF is damaged or truncated ({type(exc).__name__}: {exc})", "download it again") from exc
    return pages, first_raw, meta_title


# PDFium marks a hyphen it takes for a line-end hyphenation as U+FFFE ("rea\ufffe\r\nsoning"); between two
# lower-case letters it joins them, elsewhere (a minus sign in an equation) it stands for a hyphen.
_PDFIUM_SOFT_HYPHEN = re.compile(r"(?<=[a-z])\ufffe\s*(?=[a-z])")


def pdfium_page_text(raw: str) -> str:
    """PDFium's text of a page, cleaned the way pypdf's is (see clean_text), its hyphenation marks resolved."""
    return clean_text(_PDFIUM_SOFT_HYPHEN.sub("", raw).replace("\ufffe", "-"))


def _pages_pdfium(path: Path, max_pages: int) -> tuple[list[Page], str, str | None]:
    """(cleaned pages, the first page's raw text, the metadata title) by PDFium."""
    import pypdfium2 as pdfium

    with open(path, "rb") as fh:  # PDFium opens a cut-off download and reads what is left: refuse it, as pypdf does
        fh.seek(max(0, path.stat().st_size - 2048))
        if b"%%EOF" not in fh.read():
            raise SourceError("the PDF is damaged or truncated (no end-of-file marker)", "download it again")
    try:
        doc = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise SourceError("the PDF is encrypted with a password", "save a copy without the password") from exc
        raise SourceError(f"the PDF is damaged or truncated ({exc})", "download it again") from exc
    try:
        n = len(doc)
        if n > max_pages:
            raise _too_many_pages(n, max_pages)
        pages: list[Page] = []
        first_raw = ""
        for i in range(n):
            try:
                page = doc[i]
                textpage = page.get_textpage()
                raw = textpage.get_text_range()
                textpage.close()
                page.close()
            except pdfium.PdfiumError:  # one broken page must not lose the rest of the paper
                raw = ""
            if i == 0:
                first_raw = raw.replace("\r\n", "\n")
            pages.append(Page(number=i + 1, text=pdfium_page_text(raw)))
        try:
            meta_title = doc.get_metadata_dict(skip_empty=True).get("Title")
        except pdfium.PdfiumError:
            meta_title = None
    finally:
        doc.close()
    return pages, first_raw, meta_title


PARSER_MEMORY_MB = 1536.0  # what a parser worker may grow by (pdfium on a hostile PDF grew 4 GB in 12 s)


def _worker(path: str, max_mb: float, max_pages: int, extractor: str) -> ParsedPdf | tuple[str, str]:
    try:
        return read_pdf(Path(path), max_mb, max_pages, extractor)
    except SourceError as exc:
        return ("error", str(exc))
    except Exception as exc:  # anything else pypdf throws: report, never crash the batch
        return ("error", f"the PDF could not be parsed ({type(exc).__name__}: {exc})")


@dataclass
class ParseResult:
    """Outcome of parsing one PDF: the parsed PDF or an error."""

    path: Path
    pdf: ParsedPdf | None
    error: str | None


def parse_many(
    paths: Sequence[Path], max_mb: float, timeout_s: float, workers: int = 1, max_pages: int = 2000, extractor: str = "pypdf"
) -> Iterator[ParseResult]:
    """Parse PDFs in worker processes, yielding results in input order.

    A file that takes longer than `timeout_s` is reported as failed; its worker is killed and the pool is
    started again for the remaining files.
    """
    # fork: the worker only runs the PDF parser, so it need not re-import torch or the caller's __main__.
    ctx = mp.get_context("fork")
    pending = list(paths)
    while pending:
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(), PARSER_MEMORY_MB))
        futures = [pool.submit(_worker, str(p), max_mb, max_pages, extractor) for p in pending]
        restart_from: int | None = None
        for i, (path, fut) in enumerate(zip(pending, futures, strict=True)):
            try:
                res = fut.result(timeout=timeout_s)
            except cf.TimeoutError:
                yield ParseResult(path, None, f"parsing took longer than {timeout_s:g} s and was stopped")
                restart_from = i + 1
                break
            except cf.process.BrokenProcessPool:
                yield ParseResult(path, None, f"the parser crashed on this file (out of memory or a bug in {extractor})")
                restart_from = i + 1
                break
            if isinstance(res, tuple):
                yield ParseResult(path, None, res[1])
            else:
                yield ParseResult(path, res, None)
        if restart_from is None:
            pool.shutdown(wait=True)
            return
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        pending = pending[restart_from:]


def find_pdfs(inputs: Sequence[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """Expand files and folders into PDF paths (sorted, de-duplicated); missing paths are failures."""
    files: list[Path] = []
    missing: list[tuple[str, str]] = []
    for p in inputs:
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.suffix.lower() == ".pdf" and q.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            missing.append((str(p), "no such file or folder"))
    seen: set[Path] = set()
    out = []
    for f in files:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            out.append(f)
    return out, missing


def load_sidecars(files: Sequence[Path]) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """Metadata from `metadata.json` files beside the PDFs (or one folder up), keyed by resolved path,
    and the sidecars that could not be used (path, reason): their PDFs are still ingested from their text.

    The format is the shared data set's: a list of {file, arxiv_id, title, authors, abstract, version_date}.
    """
    out: dict[str, dict[str, Any]] = {}
    problems: list[tuple[str, str]] = []
    checked: set[Path] = set()
    for f in files:
        for folder in (f.parent, f.parent.parent):
            meta_path = folder / "metadata.json"
            if meta_path in checked or not meta_path.is_file():
                continue
            checked.add(meta_path)
            try:
                entries = json.loads(meta_path.read_bytes().decode("utf-8"))
            except UnicodeDecodeError as exc:
                problems.append((str(meta_path), f"metadata ignored: not UTF-8 (byte {exc.start}); the PDFs are read from their own text"))
                continue
            except ValueError as exc:
                problems.append((str(meta_path), f"metadata ignored: malformed JSON ({exc}); the PDFs are read from their own text"))
                continue
            except OSError as exc:
                problems.append((str(meta_path), f"metadata ignored: cannot read it ({exc.strerror})"))
                continue
            if not isinstance(entries, list):
                problems.append((str(meta_path), "metadata ignored: expected a JSON list of {file, title, ...} objects"))
                continue
            for e in entries:
                if isinstance(e, dict) and isinstance(e.get("file"), str):
                    out[str((folder / e["file"]).resolve())] = e
    return out, problems
