"""Per question of AskPDF sets: the sentences the reader read, with the rules' parts, the reader's logit and whether
each quotes the question's evidence (what `python -m paperchat.reader.fit_combine` fits the combination on, and
what the refusal threshold is chosen on).

    PAPERCHAT_DATA_DIR=STORE python scripts/reader_capture.py CAPTURE.json SET.jsonl [SET.jsonl ...] --data ../shared/data

STORE must hold the sets' PDFs (the 40-PDF evaluation store). Use only sets you choose on, never a held-out one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    """The capture command (module docstring)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("sets", nargs="+", type=Path)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = ap.parse_args()
    import paperchat.answering as answering
    from paperchat.answering.select import combine_row
    from paperchat.assistant import Assistant
    from paperchat.evaluation.lab import recording
    from paperchat.evaluation.metrics import quotes_evidence
    from paperchat.evaluation.questions import load_set
    from paperchat.settings import load_settings
    from paperchat.types import Scope

    core = Assistant(load_settings().model_copy(update={"reader": "on"}))
    res = []
    with recording(answering, "rank") as calls:
        for setf in args.sets:
            qs, _, _ = load_set(setf)
            for q in qs:
                if not q.pdf:
                    continue
                paper = core.paper_for_pdf(args.data / "pdfs" / q.pdf)
                if paper is None:
                    print(f"{q.pdf} is not in the store", file=sys.stderr)
                    return 2
                calls.clear()
                core.ask(q.question, Scope.for_paper(paper.id))
                ranked = [out for _, _, out in calls if out and out[0].reader is not None]  # the rankings the reader read
                ev = q.evidence or ""
                read = [{**combine_row(s), "gold": bool(ev) and quotes_evidence(s.text, ev)} for s in (ranked[-1] if ranked else []) if s.reader is not None]
                res.append({"id": q.id, "set": setf.name, "pdf": q.pdf, "unanswerable": bool(q.unanswerable), "read": read})
    args.out.write_text(json.dumps(res))
    print(f"{len(res)} questions captured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
