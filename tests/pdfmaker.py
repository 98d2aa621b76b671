"""Write small real PDFs with text pages (Helvetica, one text object per line) for tests."""

from __future__ import annotations

import textwrap
from pathlib import Path


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(path: Path, pages: list[str], title: str | None = None, page_extra: str = "") -> Path:
    """A PDF whose page i shows pages[i] (wrapped at 90 characters); the Info title when given;
    `page_extra` is raw PDF syntax added to every page dictionary (to build hostile files)."""
    objs: list[bytes] = []
    n_pages = len(pages)
    font_id = 3 + 2 * n_pages
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objs.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for i, text in enumerate(pages):
        lines = [ln for para in text.split("\n") for ln in (textwrap.wrap(para, 90) or [""])]
        ops = ["BT", "/F1 10 Tf", "12 TL", "50 760 Td"]
        for ln in lines[:60]:
            ops.append(f"({_esc(ln)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1", "replace")
        objs.append(
            (
                f"<< {page_extra} /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {4 + 2 * i} 0 R >>"
            ).encode()
        )
        objs.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_id = None
    if title:
        objs.append(f"<< /Title ({_esc(title)}) >>".encode())
        info_id = len(objs)
    return raw_pdf(path, objs, info_id)


def blank_pdf(path: Path, pages: int) -> Path:
    """A PDF of `pages` blank Letter pages (0 gives a PDF with no pages): pypdf writes it."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=612, height=792)
    with open(path, "wb") as fh:
        writer.write(fh)
    return path


def raw_pdf(path: Path, objs: list[bytes], info_id: int | None = None) -> Path:
    """A PDF of the given object bodies (object 1 must be the catalogue; object `info_id` the Info dictionary),
    with a correct xref table: make_pdf's writer, and hostile files that make_pdf cannot express."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    info = f" /Info {info_id} 0 R" if info_id else ""
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def _stream(data: bytes, extra: str = "") -> bytes:
    return f"<< {extra} /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def xobject_bomb(path: Path, levels: int = 40) -> Path:
    """One page of text that draws form XObject 0, which draws form 1 twice, ... down `levels` levels: 2^levels
    draws from a file of a few KB (issue 33, case 1)."""
    first = 5  # objects: 1 catalogue, 2 pages, 3 page, 4 contents, 5.. the forms, then the font
    font = first + levels
    text = b"BT /F1 12 Tf 50 700 Td (Nested forms: a page that takes forever to draw.) Tj ET\n/X0 Do"
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> /XObject << /X0 {first} 0 R >> >> >>"
        ).encode(),
        _stream(text),
    ]
    for i in range(levels):
        if i + 1 < levels:
            body = b"/X Do /X Do"
            res = f"/Resources << /XObject << /X {first + i + 1} 0 R >> /Font << /F1 {font} 0 R >> >>"
        else:
            body = b"BT /F1 8 Tf 1 1 Td (leaf) Tj ET 0 0 10 10 re f"
            res = f"/Resources << /Font << /F1 {font} 0 R >> >>"
        objs.append(_stream(body, f"/Type /XObject /Subtype /Form /BBox [0 0 612 792] {res}"))
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return raw_pdf(path, objs)


def huge_page(path: Path, points: int = 14400) -> Path:
    """One page of `points` x `points` (200 inches square, the largest the PDF spec allows) with a line of text."""
    text = b"BT /F1 24 Tf 100 100 Td (A page two hundred inches square.) Tj ET"
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {points} {points}] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".encode(),
        _stream(text),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return raw_pdf(path, objs)
