"""Turn the blind writers' raw files (question + the sentence copied from the page) into locations: the PDF,
the page, and the sentence's character span in that page's whitespace-normalised pypdf text with its sha1, so the
repository stores questions and locations, never the PDFs' text (their licences forbid redistribution).

    python scripts/reader_locations.py /tmp/reader_raw eval/reader --data ../shared/data

Writes `answers.jsonl` (a question and where its answer sentence is) and `near_misses.jsonl` (a question the page
or abstract does not answer). Questions whose sentence is an askpdf_dev evidence are dropped (that set stays out of
training); a sentence that cannot be found again is reported and dropped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path


def norm(text: str) -> str:
    return " ".join(text.split())


def sha(text: str) -> str:
    return hashlib.sha1(norm(text).encode("utf-8")).hexdigest()[:16]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("raw", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = ap.parse_args()
    from paperchat.reader.data import abstract_text, pypdf_page_text

    dev = [norm(json.loads(line).get("evidence") or "") for line in open(args.data / "eval/askpdf_dev.jsonl")]
    answers, misses, lost, dropped_dev = [], [], 0, 0
    seen: set[tuple[str, str]] = set()
    for f in sorted(args.raw.glob("*.jsonl")):
        writer = f.stem
        for i, line in enumerate(open(f, encoding="utf-8"), 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                print(f"{f}:{i}: not JSON", file=sys.stderr)
                continue
            q = norm(r.get("question", ""))
            if not q:
                continue
            if "pdf" in r:
                doc, page = r["pdf"], int(r["page"])
                text = norm(pypdf_page_text(args.data / "pdfs" / doc, page))
                loc = {"source": "pdf", "pdf": doc, "page": page}
            else:
                doc, page = r["paper_id"], None
                text = norm(abstract_text(args.data, doc))
                loc = {"source": "abstract", "paper_id": doc}
            key = (f"{doc}:{page}", q.lower())
            if key in seen:
                continue
            seen.add(key)
            base = {"id": f"{writer}-{i}", "writer": writer, **loc, "question": q}
            if r.get("kind") == "near_miss":
                misses.append({**base, "kind": "near_miss"})
                continue
            sent = norm(r.get("sentence", ""))
            start = text.find(sent) if sent else -1
            if start < 0:
                lost += 1
                print(f"{f}:{i}: sentence not found on {doc} p{page}", file=sys.stderr)
                continue
            if any(d and (sent in d or d in sent) and min(len(d), len(sent)) > 40 for d in dev):
                dropped_dev += 1
                continue
            answers.append({**base, "kind": "answer", "start": start, "end": start + len(sent), "sha1": sha(sent)})
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("answers.jsonl", answers), ("near_misses.jsonl", misses)):
        with open(args.out / name, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"answers {len(answers)}, near misses {len(misses)}, not found {lost}, dropped as askpdf_dev evidence {dropped_dev}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
