"""Topic answers at several source depths: how many gold papers the map cites when the answerer is offered k
sources (the app's `PAPERCHAT_RETRIEVAL__K`), over the topic questions of one or more sets.

    PAPERCHAT_DATA_DIR=STORE python scripts/topic_sources.py --set ../shared/data/eval/topic_dev.jsonl --k 8,10,20

Prints per set and k: multi-paper citation recall and precision, papers cited per answer, and the share of
known-item answers that cite their gold paper first (as `eval run` scores them).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from paperchat.assistant import Assistant
from paperchat.evaluation.questions import load_set
from paperchat.evaluation.runner import question_scope
from paperchat.settings import Settings


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", type=Path, required=True)
    ap.add_argument("--k", default="8,10,20", help="comma-separated source depths")
    args = ap.parse_args()
    assistant = Assistant(Settings())
    assistant.sync_topics()
    for path in args.set:
        questions = [q for q in load_set(path)[0] if q.scope == "topic" and q.gold_papers]
        for k in (int(v) for v in args.k.split(",")):
            recall, precision, cited_n, first = [], [], [], []
            for q in questions:
                ans = assistant.ask(q.question, question_scope(assistant, q, None), k=k)
                cited = list(dict.fromkeys(c.paper_id for c in ans.citations))
                gold = set(q.gold_papers)
                if q.kind == "multi-paper":
                    recall.append(len(gold & set(cited)) / len(gold))
                    precision.append(len(gold & set(cited)) / max(1, len(cited)))
                    cited_n.append(len(cited))
                else:
                    first.append(1.0 if cited and cited[0] in gold else 0.0)
            mean = lambda xs: statistics.fmean(xs) if xs else float("nan")  # noqa: E731
            print(
                f"{path.name} k={k}: multi-paper citation recall {mean(recall):.3f} precision {mean(precision):.3f}"
                f" papers/answer {mean(cited_n):.1f} | known-item gold first {mean(first):.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
