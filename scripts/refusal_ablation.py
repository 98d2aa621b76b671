"""Which of AskPDF's refusal checks still earn their place beside the sentence reader: every paper question of the
sets is asked once (the default settings), the evidence each refusal decision read is recorded, and the rule is
replayed on it with each check switched off in turn. Prints refused right / wrong per variant.

    PAPERCHAT_DATA_DIR=STORE python scripts/refusal_ablation.py SET.jsonl [SET.jsonl ...] --data ../shared/data [--save EV.pkl]

STORE must hold the sets' PDFs (the 30- or 40-PDF evaluation store). Use sets you choose on.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path
from typing import Any

VARIANTS: dict[str, dict[str, Any]] = {
    "all on (default)": {}, "no measure check": {"measures": False}, "no unstated-setting check": {"settings": False},
    "no missing-names check": {"names": False}, "no reader check": {"min_reader": None},
    "reader and strength alone": {"measures": False, "settings": False, "names": False},
}
FIELDS = ("missing_names", "measured", "measure", "set_value", "settings", "reader_top", "coverage", "cosine", "absent", "fits", "counted", "asked")


def main() -> int:
    """The ablation command (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", type=Path)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--save", type=Path, default=None, help="also write the recorded evidence (pickle)")
    args = ap.parse_args()
    from paperchat.answering import evidence as E
    from paperchat.assistant import Assistant
    from paperchat.evaluation.lab import recording
    from paperchat.evaluation.questions import load_set
    from paperchat.evaluation.runner import question_scope
    from paperchat.settings import load_settings

    assistant = Assistant(load_settings())
    rows: list[dict[str, Any]] = []
    with recording(E.Refusal, "refuse") as calls:
        for path in args.sets:
            questions, _, _ = load_set(path)
            for q in questions:
                if q.scope != "paper":
                    continue
                calls.clear()
                assistant.ask(q.question, question_scope(assistant, q, args.data))
                if calls:
                    (rule, ev), _, _ = calls[-1]
                    rows.append({"id": q.id, "set": path.name, "unanswerable": bool(q.unanswerable), "question": q.question,
                                 "ev": {k: getattr(ev, k) for k in FIELDS}, "rule": dict(rule.__dict__)})
    if args.save:
        args.save.write_bytes(pickle.dumps(rows))
    if not rows:
        print("no paper questions were refused or checked")
        return 1
    base = rows[0]["rule"]
    n_un = sum(r["unanswerable"] for r in rows)
    print(f"{len(rows) - n_un} answerable, {n_un} unanswerable; default rule {base}")
    for name, change in VARIANTS.items():
        rule = E.Refusal(**{**base, **change})
        refused = [rule.refuse(E.Evidence(best=None, **r["ev"])) for r in rows]
        right = sum(x for x, r in zip(refused, rows, strict=True) if r["unanswerable"])
        wrong = sum(x for x, r in zip(refused, rows, strict=True) if not r["unanswerable"])
        print(f"{name:28s} refused right {right}/{n_un}  wrong {wrong}/{len(rows) - n_un}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
