"""The local answerer's server timed: load (start to first `/v1/models` answer), time to first token, generated
tokens/s, for each thread count asked, on one grounded question (the attention-heads page of "Attention Is All You
Need"). Prints one line per run with the load average, since the machine is shared.

Usage: PYTHONPATH=src python scripts/bench_local.py [MODEL] [THREADS,...] [DATA_DIR]   (e.g. qwen1.5b 1,2 /tmp/pc)
"""

import os
import sys
import time
from pathlib import Path

from paperchat.providers.local_answerer import LocalAnswerer
from paperchat.providers.local_llm import LocalServer
from paperchat.settings import Settings
from paperchat.types import Source

PAGE = (
    "Multi-Head Attention. Instead of performing a single attention function with dmodel-dimensional keys, values and "
    "queries, we found it beneficial to linearly project the queries, keys and values h times with different, learned "
    "linear projections. In this work we employ h = 8 parallel attention layers, or heads. For each of these we use "
    "dk = dv = dmodel/h = 64. Due to the reduced dimension of each head, the total computational cost is similar to "
    "that of single-head attention with full dimensionality."
)
OTHER = "We trained on the standard WMT 2014 English-German dataset consisting of about 4.5 million sentence pairs."


def main() -> None:
    """Time each thread count asked on the command line."""
    model = sys.argv[1] if len(sys.argv) > 1 else "qwen1.5b"
    threads = [int(t) for t in (sys.argv[2] if len(sys.argv) > 2 else "1,2").split(",")]
    settings = Settings(data_dir=Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/paperchat-bench-local"))
    t0 = time.perf_counter()
    LocalServer.from_settings(settings, model)  # joins split models once (timed apart from the load)
    print(f"{model}: model file ready in {time.perf_counter() - t0:.1f} s", flush=True)
    sources = [
        Source(n=1, paper_id="1706.03762", title="Attention Is All You Need", page=5, text=PAGE, score=1.0),
        Source(n=2, paper_id="1706.03762", title="Attention Is All You Need", page=7, text=OTHER, score=0.5),
    ]
    for n in threads:
        server = LocalServer.from_settings(settings.model_copy(update={"local": settings.local.model_copy(update={"threads": n})}), model)
        with server:
            ans = LocalAnswerer(server.alias, server.base_url, 300.0, 0, max_tokens=48)
            t1 = time.perf_counter()
            first = None
            pieces = []
            for piece in ans.llm.stream(ans.messages("How many attention heads are used?", sources)):
                if piece.content:
                    first = first or time.perf_counter()
                    pieces.append(piece.content)
            end = time.perf_counter()
            text = "".join(str(p) for p in pieces)
            rate = (len(pieces) - 1) / (end - first) if first and len(pieces) > 1 else 0.0
            print(
                f"{model} threads={n} load={server.load_s:.2f}s ttft={(first or end) - t1:.2f}s tokens={len(pieces)} {rate:.2f} tok/s "
                f"loadavg={os.getloadavg()[0]:.2f} answer={text.strip()!r}",
                flush=True,
            )


if __name__ == "__main__":
    main()
