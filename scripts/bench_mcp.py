"""MCP benchmark (issue 37): the startup of `paperchat mcp` (stdio) to its first tool answer, and the p50 / p95 of
search_papers, ask_topic and ask_paper over the questions of a set, through the SDK's own client.

    python scripts/bench_mcp.py --data-dir DATA --set ../shared/data/eval/topic_dev.jsonl [--paper-set SET] [--n 20]

Prints one JSON object. Uses the environment's settings (PAPERCHAT_EMBEDDER ...) for the server.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio


def _p(values: list[float], q: float) -> float:
    return round(sorted(values)[min(len(values) - 1, int(q * len(values)))], 1) if values else float("nan")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    topic_qs = [json.loads(line) for line in open(args.set, encoding="utf-8")][: args.n]
    paper_qs = [json.loads(line) for line in open(args.paper_set, encoding="utf-8")][: args.n] if args.paper_set else []
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(args.data_dir)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "paperchat.cli", "mcp"], env=env)
    t0 = time.perf_counter()
    out: dict[str, Any] = {"data_dir": str(args.data_dir), "questions": len(topic_qs), "paper_questions": len(paper_qs)}
    async with Client(params) as client:
        await client.call_tool("search_papers", {"query": topic_qs[0]["question"], "k": 10})
        out["startup_to_first_answer_s"] = round(time.perf_counter() - t0, 2)
        times: dict[str, list[float]] = {"search_papers": [], "ask_topic": [], "ask_paper": []}
        for q in topic_qs:
            for name, call in (("search_papers", {"query": q["question"], "k": 10}), ("ask_topic", {"question": q["question"], "topic": q.get("topic")})):
                t = time.perf_counter()
                r = await client.call_tool(name, call)
                times[name].append(1000 * (time.perf_counter() - t))
                assert not r.is_error, r.content[0].text
        for q in paper_qs:
            t = time.perf_counter()
            r = await client.call_tool("ask_paper", {"question": q["question"], "paper_id": q["paper_id"]})
            times["ask_paper"].append(1000 * (time.perf_counter() - t))
    for name, v in times.items():
        if v:
            out[name] = {"p50_ms": round(statistics.median(v), 1), "p95_ms": _p(v, 0.95), "n": len(v)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--set", type=Path, required=True, help="topic questions (eval format)")
    ap.add_argument("--paper-set", type=Path, help="paper questions (eval format, with paper_id) whose papers the store holds")
    ap.add_argument("--n", type=int, default=20)
    print(json.dumps(anyio.run(run, ap.parse_args()), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
