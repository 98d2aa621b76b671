"""The MiniLM backends side by side on the same real abstracts: abstracts/s and the minimum and mean cosine of
each backend's vectors to ONNX Runtime fp32's (the torch model's function), alternating for a few rounds.

    python scripts/bench_backends.py ../shared/data/abstracts/arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl \
        --models DATA_DIR/models --n 400 --rounds 2

The models folder gets the ONNX exports on first use (about 10-20 s each). Run it on a quiet machine: the
numbers are per-run ratios, absolute speeds move with the load.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from paperchat.providers.onnx_minilm import OnnxMiniLMEmbedder
from paperchat.providers.openvino_minilm import OpenVinoMiniLMEmbedder


def main() -> None:
    """Print one line per backend and round."""
    ap = argparse.ArgumentParser()
    ap.add_argument("abstracts", type=Path)
    ap.add_argument("--models", type=Path, required=True)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    texts: list[str] = []
    with open(args.abstracts, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            texts.append(f"{r['title']}\n\n{r['abstract']}")
            if len(texts) >= args.n:
                break
    backends = {
        "onnx-fp32": OnnxMiniLMEmbedder(args.models),
        "onnx-int8": OnnxMiniLMEmbedder(args.models, quantized=True),
        "openvino": OpenVinoMiniLMEmbedder(args.models),
    }
    for emb in backends.values():
        emb.embed(texts[:4])  # export and load before timing
    for r in range(args.rounds):
        ref: np.ndarray | None = None
        for name, emb in backends.items():
            t0 = time.perf_counter()
            vecs = emb.embed(texts, batch_size=args.batch)
            dt = time.perf_counter() - t0
            ref = vecs if ref is None else ref
            cos = (vecs * ref).sum(axis=1)
            extra = f" ({emb.precision})" if isinstance(emb, OpenVinoMiniLMEmbedder) else ""
            print(f"round {r + 1} {name}{extra}: {len(texts) / dt:.1f} abstracts/s, cosine to fp32 min {cos.min():.6f} mean {cos.mean():.7f}", flush=True)


if __name__ == "__main__":
    main()
