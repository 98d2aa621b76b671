"""Experiment (issue 14 part 3, stop 31): the bundled local model as a second-stage reader for many-paper topic
questions. For each multi-paper question the retriever's top 20 papers are judged one by one by Qwen2.5-Coder-1.5B
("Does this paper itself propose or study what the question asks for, in the setting it names? Yes or No", from the
title and the first two sentences of the abstract); P(Yes) ranks them, fused with the retrieval rank at weight w.
Reports gold recall@10 and judged precision@10 (eval/topic_judged.jsonl) per set for each w.

Usage: PAPERCHAT_DATA_DIR=<full store> PYTHONPATH=src python scripts/exp_llm_rerank_topics.py ABSTRACTS.jsonl SET.jsonl...
Needs the `local` extra. Result on this machine (docs/measured.md): 1.5 s per paper, 30 s per question on 2 cores;
topic_dev recall@10 0.448 -> 0.42-0.29 at every weight, eval/topic_tune 0.545 -> 0.58 at 0.25; not kept.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from openai import OpenAI

from paperchat.assistant import Assistant
from paperchat.evaluation import metrics as M
from paperchat.evaluation.questions import load_judgments, load_set
from paperchat.evaluation.runner import question_scope
from paperchat.providers.local_llm import LocalServer
from paperchat.settings import Settings

PROMPT = (
    "You judge whether a paper answers a researcher's question.\nQuestion: {q}\n\nPaper title: {title}\nAbstract (start): {lead}\n\n"
    "Does this paper itself propose or study what the question asks for, in the setting it names? Answer Yes or No."
)


def p_yes(cli: OpenAI, alias: str, question: str, title: str, abstract: str) -> float:
    """P(Yes) / (P(Yes) + P(No)) of the model's first token."""
    lead = " ".join(re.split(r"(?<=[.!?])\s+", " ".join(abstract.split()))[:2])[:600]
    r = cli.chat.completions.create(
        model=alias, messages=[{"role": "user", "content": PROMPT.format(q=question, title=" ".join(title.split()), lead=lead)}],
        max_tokens=1, temperature=0, logprobs=True, top_logprobs=10,
    )  # fmt: skip
    top = r.choices[0].logprobs.content[0].top_logprobs if r.choices[0].logprobs and r.choices[0].logprobs.content else []
    yes = sum(math.exp(x.logprob) for x in top if x.token.strip().lower() == "yes")
    no = sum(math.exp(x.logprob) for x in top if x.token.strip().lower() == "no")
    return yes / (yes + no) if yes + no > 0 else 0.5


def main() -> None:
    """Judge, rerank, report."""
    records = {json.loads(line)["id"]: json.loads(line) for line in open(sys.argv[1], encoding="utf-8")}
    settings = Settings()
    assistant = Assistant(settings)
    judged = load_judgments([Path("eval/topic_judged.jsonl")])
    server = LocalServer.from_settings(settings, "qwen1.5b").start()
    cli = OpenAI(base_url=server.base_url, api_key="local")
    results: dict[str, list[tuple[str, list[tuple[str, float]], list[str]]]] = {}
    try:
        for path in sys.argv[2:]:
            for q in load_set(Path(path))[0]:
                if q.kind != "multi-paper":
                    continue
                hits = assistant.search(q.question, question_scope(assistant, q, None), 40)
                # papers known only as PDFs have no abstract record and are left out of the 20 (w = 0 is then the
                # retrieval order without them; on the shared sets it gives the same recall as `eval run`)
                papers = [p for p in dict.fromkeys(h.chunk.paper_id for h in hits) if p in records][:20]
                scored = [(p, p_yes(cli, server.alias, q.question, records[p]["title"], records[p]["abstract"])) for p in papers]
                results.setdefault(Path(path).stem, []).append((q.id, scored, q.gold_papers))
    finally:
        server.stop()
    for w in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0):
        cells = []
        for name, rows in results.items():
            rec, prec = [], []
            for qid, scored, gold in rows:
                llm_rank = {p: i for i, (p, _) in enumerate(sorted(scored, key=lambda x: -x[1]), start=1)}
                fused = {p: 1 / (10 + i) + w / (10 + llm_rank[p]) for i, (p, _) in enumerate(scored, start=1)}
                top = sorted(fused, key=lambda p: -fused[p])[:10]
                rec.append(M.recall_at(top, gold, 10)[0])
                got = M.judged(top, judged.get(qid, {}), 10)  # unjudged questions have no precision
                if "judged_precision@10" in got:
                    prec.append(got["judged_precision@10"][0])
            judged_part = f"{sum(prec) / len(prec):.3f}" if prec else "-"
            cells.append(f"{name}: recall@10 {sum(rec) / len(rec):.3f}, judged precision@10 {judged_part}")
        print(f"w={w}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
