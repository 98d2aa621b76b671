"""Topic answers at several source depths: how many gold papers the map cites when the answerer is offered k
sources (the app's `PAPERCHAT_RETRIEVAL__K`), over the topic questions of one or more sets.

    PAPERCHAT_DATA_DIR=STORE python scripts/topic_sources.py --set ../shared/data/eval/topic_dev.jsonl --k 8,10,20

Prints per set and k: multi-paper citation recall and precision and the share of known-item answers that cite
their gold paper first, scored and averaged by `eval run`'s own functions.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.evaluation.questions import load_set
from paperchat.evaluation.runner import question_scope, score, summarize
from paperchat.settings import Settings


def main() -> None:
    """Print the table: `eval run`'s own scoring (runner.score, runner.summarize) at each depth."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", type=Path, required=True)
    ap.add_argument("--k", default="8,10,20", help="comma-separated source depths")
    args = ap.parse_args()
    assistant = Assistant(Settings())
    assistant.sync_topics()
    for path in args.set:
        questions = [q for q in load_set(path)[0] if q.scope == "topic" and q.gold_papers]
        for k in (int(v) for v in args.k.split(",")):
            rows: dict[str, list[dict[str, Any]]] = {"multi-paper": [], "known-item": []}
            for q in questions:
                ans = assistant.ask(q.question, question_scope(assistant, q, None), k=k)
                rows.setdefault(q.kind, []).append({"metrics": score(q, ans)[0], "answer": ans.to_json()})
            multi, known = (summarize(rows[kind])["citations"] if rows[kind] else {} for kind in ("multi-paper", "known-item"))
            print(
                f"{path.name} k={k}: multi-paper citation recall {multi.get('recall')} precision {multi.get('precision')}"
                f" | known-item gold first {known.get('gold_first')}",
                flush=True,
            )


if __name__ == "__main__":
    main()
