"""Check paper-level AskPDF question files against the PDFs they quote (eval/README format).

Usage:
    python scripts/check_questions.py eval/askpdf_heldout.jsonl [more.jsonl ...]
        [--data /work/shared/data] [--cache /tmp/askpdf_pages.json]

For every record it checks the fields and types, that `pdf` and `paper_id` match `pdfs/metadata.json`,
and, for answerable records, that `evidence` is 10 to 40 words and a substring of pypdf's
`extract_text()` of page `gold_pages[0]` with every whitespace run collapsed to one space, and that the
question never repeats 4 consecutive words of the evidence. Unanswerable records must have empty answer,
aliases, pages and evidence. It warns (does not fail) when the evidence also occurs in the metadata
abstract, since answers must come from the paper body. Exits 1 when any record fails.

Page texts are extracted once per PDF; `--cache` keeps them in a JSON file between runs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

WORD = re.compile(r"\w+")
FIELDS: dict[str, type] = {
    "id": str,
    "scope": str,
    "pdf": str,
    "paper_id": str,
    "question": str,
    "gold_answer": str,
    "answer_aliases": list,
    "gold_pages": list,
    "evidence": str,
    "unanswerable": bool,
}


def collapse(text: str) -> str:
    """Collapse every whitespace run to one space, as the evidence quotes are written."""
    return re.sub(r"\s+", " ", text).strip()


def shared_4grams(question: str, evidence: str) -> list[str]:
    """Return 4-word windows of the question that also occur in the evidence (both lowercased).

    Two tokenisations are checked: whitespace words joined back with spaces (a window must not be a
    substring of the evidence) and bare word characters (so punctuation cannot hide a copied run).
    """
    found: list[str] = []
    q_ws, ev = question.lower().split(), evidence.lower()
    found += [" ".join(q_ws[i : i + 4]) for i in range(len(q_ws) - 3) if " ".join(q_ws[i : i + 4]) in ev]
    q_w, e_w = WORD.findall(question.lower()), WORD.findall(ev)
    e_grams = {tuple(e_w[i : i + 4]) for i in range(len(e_w) - 3)}
    found += [" ".join(g) for g in (tuple(q_w[i : i + 4]) for i in range(len(q_w) - 3)) if g in e_grams]
    return found


def load_pages(pdf_root: Path, files: set[str], cache: Path | None) -> dict[str, list[str]]:
    """Extract the raw page texts of `files` with pypdf, reusing and updating the cache file if given."""
    pages: dict[str, list[str]] = {}
    if cache is not None and cache.exists():
        pages = json.loads(cache.read_text(encoding="utf-8"))
    missing = sorted(f for f in files if f not in pages)
    if missing:
        from pypdf import PdfReader  # imported here so --help works without the venv

        for name in missing:
            print(f"extracting {name}", file=sys.stderr)
            pages[name] = [p.extract_text() or "" for p in PdfReader(pdf_root / name).pages]
        if cache is not None:
            cache.write_text(json.dumps(pages), encoding="utf-8")
    return pages


def check_record(rec: dict, meta: dict[str, dict], pages: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """Return (errors, warnings) for one record."""
    errs: list[str] = []
    warns: list[str] = []
    for field, kind in FIELDS.items():
        if not isinstance(rec.get(field), kind):
            errs.append(f"field {field!r} missing or not {kind.__name__}")
    if errs:
        return errs, warns
    if rec["scope"] != "paper":
        errs.append("scope is not 'paper'")
    m = meta.get(rec["pdf"])
    if m is None:
        return errs + [f"pdf {rec['pdf']!r} not in metadata.json"], warns
    if rec["paper_id"] != (m.get("arxiv_id") or ""):
        errs.append(f"paper_id {rec['paper_id']!r} != metadata arxiv_id {m.get('arxiv_id')!r}")
    stem = rec["paper_id"] or Path(rec["pdf"]).stem
    if not re.fullmatch(rf"(?:pdf|abst|val|fresh|chk)-{re.escape(stem)}-\d+", rec["id"]):
        errs.append(f"id {rec['id']!r} is not pdf-{stem}-<n> (or abst-/val-/fresh-/chk-)")
    if rec["unanswerable"]:
        if rec["gold_answer"] or rec["answer_aliases"] or rec["gold_pages"] or rec["evidence"]:
            errs.append("unanswerable record has a non-empty answer, aliases, pages or evidence")
        return errs, warns
    if not rec["gold_answer"].strip():
        errs.append("empty gold_answer")
    if not all(isinstance(a, str) and a.strip() for a in rec["answer_aliases"]):
        errs.append("answer_aliases must be non-empty strings")
    doc = pages[rec["pdf"]]
    gp = rec["gold_pages"]
    if not gp or not all(isinstance(p, int) and 1 <= p <= len(doc) for p in gp):
        return errs + [f"gold_pages {gp} not within 1..{len(doc)}"], warns
    ev = rec["evidence"]
    n_words = len(ev.split())
    if not 10 <= n_words <= 40:
        errs.append(f"evidence has {n_words} words (needs 10-40)")
    if ev != collapse(ev):
        errs.append("evidence has uncollapsed whitespace")
    if any(unicodedata.category(ch) == "Cc" for ch in ev):
        # pypdf renders some glyphs (e.g. FlashAttention's "×") as control characters; quote around them.
        errs.append("evidence contains a control character")
    if ev not in collapse(doc[gp[0] - 1]):
        errs.append(f"evidence not found on page {gp[0]}")
    overlap = shared_4grams(rec["question"], ev)
    if overlap:
        errs.append(f"question repeats evidence words: {sorted(set(overlap))}")
    if ev in collapse(m.get("abstract") or ""):
        warns.append("evidence also occurs in the metadata abstract")
    return errs, warns


def main(argv: list[str] | None = None) -> int:
    """Check the given question files; print one line per problem and a summary."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--cache", type=Path, default=None, help="JSON file to keep extracted page texts in")
    args = ap.parse_args(argv)

    meta = {m["file"]: m for m in json.loads((args.data / "pdfs" / "metadata.json").read_text(encoding="utf-8"))}
    records: list[tuple[Path, int, dict]] = []
    for path in args.files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                records.append((path, n, json.loads(line)))
    wanted = {r["pdf"] for _, _, r in records if isinstance(r.get("pdf"), str) and r["pdf"] in meta}
    pages = load_pages(args.data / "pdfs", wanted, args.cache)

    failed = 0
    ids = Counter(r.get("id") for _, _, r in records)
    for path, n, rec in records:
        errs, warns = check_record(rec, meta, pages)
        if ids[rec.get("id")] > 1:
            errs.append("duplicate id")
        for msg in errs:
            print(f"ERROR {path.name}:{n} {rec.get('id')}: {msg}")
        for msg in warns:
            print(f"warn  {path.name}:{n} {rec.get('id')}: {msg}")
        failed += bool(errs)

    groups = Counter(
        (str(r.get("pdf", "?")).split("/")[0], "unanswerable" if r.get("unanswerable") else "answerable")
        for _, _, r in records
    )
    print(f"{len(records)} records, {failed} failing, {len({r.get('pdf') for _, _, r in records})} PDFs")
    for (group, kind), count in sorted(groups.items()):
        print(f"  {group:22s} {kind:13s} {count}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
