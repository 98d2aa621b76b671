"""Hard negatives for the sentence reader, mined the way the answerer reads: for each PDF answer question of the
location files, the paper-scoped answerer (reader off) retrieves its passages and the rules rank their sentences;
the best READ_TOP sentences that are on other pages than the answer, and do not repeat it, are what the reader
will have to tell the answer from. The stop-37 reader was trained on same-page sentences only, and on the 30
untrained PDFs a third of its wrong first quotes came from another page.

    PAPERCHAT_DATA_DIR=STORE python scripts/reader_hard_negatives.py OUT.jsonl --data ../shared/data [FILES...]

STORE must hold the PDFs (`paperchat ingest ../shared/data`, or the 40-PDF evaluation store). OUT holds the mined
sentences' text, so it lives outside the repository (the PDFs' licences forbid redistributing it): the trainer
reads it with `--hard OUT.jsonl`.

A sentence of another page can answer the question too (a fact restated in the conclusion). With `--denoise`,
the shipped reader scores each question's answer sentence and its mined negatives, and a negative it rates at or
above the answer is dropped (RocketQA's denoised hard negatives); `--denoise-only` does this to an existing OUT.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from paperchat.reader.data import _norm, _overlap, pypdf_page_text


def location_files() -> list[Path]:
    """The location files mined by default: what the shipped reader trained on, and the fourth batch."""
    from paperchat.reader.train import DEFAULT_FILES

    return [Path(f) for f in (*DEFAULT_FILES, "eval/reader/answers_d.jsonl")]


def denoise(path: Path, data: Path, files: list[Path]) -> None:
    """Drop the mined negatives the shipped reader rates at or above the question's answer sentence (the questions
    are read from `files`, the location files the negatives were mined for)."""
    from paperchat.reader.data import load_groups
    from paperchat.reader.model import shipped_reader
    from paperchat.text import Tokenizer

    reader = shipped_reader()
    mined = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    want = {m["id"] for m in mined if m["negatives"]}
    groups = {g.qid: g for g in load_groups(files, data, Tokenizer()) if g.qid in want and g.answer is not None}
    before = after = 0
    for m in mined:
        g = groups.get(m["id"])
        negs = m["negatives"]
        if g is None or g.answer is None or not negs:
            continue
        logits = reader.score(g.question, [g.cands[g.answer]] + [n["text"] for n in negs], [g.contexts[g.answer]] + [n["context"] for n in negs])
        m["negatives"] = [n for n, lg in zip(negs, logits[1:], strict=True) if lg < logits[0]]
        before += len(negs)
        after += len(m["negatives"])
    with open(path, "w", encoding="utf-8") as fh:
        for m in mined:
            fh.write(json.dumps(m, ensure_ascii=False) + "\n")
    print(f"denoised: {before} -> {after} negatives")


def main() -> int:
    """The mining command (module docstring)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--keep", type=int, default=12, help="negatives kept per question, best by the rules first")
    ap.add_argument("--denoise", action="store_true", help="drop negatives the shipped reader rates at or above the answer")
    ap.add_argument("--denoise-only", action="store_true", help="only denoise an existing OUT")
    args = ap.parse_args()
    files = args.files or location_files()
    if args.denoise_only:
        denoise(args.out, args.data, files)
        return 0
    import paperchat.answering as answering
    from paperchat.answering.select import READ_TOP, neighbours_of
    from paperchat.assistant import Assistant
    from paperchat.evaluation.lab import recording
    from paperchat.settings import load_settings
    from paperchat.types import Scope

    core = Assistant(load_settings().model_copy(update={"reader": "off"}))
    papers: dict[str, object] = {}
    n = kept = 0
    t0 = time.perf_counter()
    with recording(answering, "rank") as calls, open(args.out, "w", encoding="utf-8") as fh:
        for f in files:
            for line in open(f, encoding="utf-8"):
                row = json.loads(line)
                if row.get("source") != "pdf" or "start" not in row:
                    continue
                pdf = args.data / "pdfs" / row["pdf"]
                if row["pdf"] not in papers:
                    papers[row["pdf"]] = core.paper_for_pdf(pdf)
                paper = papers[row["pdf"]]
                if paper is None:
                    print(f"{row['pdf']} is not in the store: ingest it first", file=sys.stderr)
                    return 2
                gold = _norm(pypdf_page_text(pdf, int(row["page"])))[int(row["start"]) : int(row["end"])]
                calls.clear()
                core.ask(row["question"], Scope.for_paper(paper.id))  # type: ignore[attr-defined]
                if not calls:
                    continue
                (_, cands, *_), _, out = calls[-1]
                where = {(c.n, c.position): j for j, c in enumerate(cands)}
                negs = []
                for s in out[:READ_TOP]:
                    c = s.cand
                    if c.page == int(row["page"]) or _overlap(gold, c.text) >= 0.5:
                        continue
                    negs.append({"page": c.page, "text": c.text, "context": neighbours_of(cands, where[(c.n, c.position)])})
                negs = negs[: args.keep]
                fh.write(json.dumps({"id": row["id"], "negatives": negs}, ensure_ascii=False) + "\n")
                n += 1
                kept += len(negs)
                if n % 200 == 0:
                    print(f"{n} questions, {kept} negatives, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"{n} questions, {kept} negatives, {time.perf_counter() - t0:.0f} s")
    if args.denoise:
        denoise(args.out, args.data, files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
