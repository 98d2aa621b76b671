"""Query latency at several store sizes, ours against the naive LangChain retriever on the same store, and the
chart of it."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.bench.measure import pct
from paperchat.bench.naive import naive_chroma, naive_embeddings, need_dev_extra
from paperchat.evaluation.lab import Lab
from paperchat.settings import Settings
from paperchat.types import Scope


def subset_store(src: Assistant, dst: Settings, n_abstracts: int | None) -> Assistant:
    """A store with the first n abstract papers of `src` plus every PDF chunk, copied with their vectors
    (no re-embedding), its catalogue rows and a fresh BM25 snapshot."""
    return Lab(src).copy_subset(dst, n_abstracts).assistant


def bench_query_sizes(settings: Settings, questions: list[tuple[str, str]], paper_ids: list[str], sizes: list[int | None], repeat: int = 2) -> dict[str, Any]:
    """Retrieval and extractive-answer latency, topic and paper scope, ours vs the naive LangChain
    retriever (`Chroma.as_retriever` with the same filter) on the same store, per store size."""
    need_dev_extra()
    full = Assistant(settings)
    full.sync_topics()
    out: dict[str, Any] = {}
    emb = naive_embeddings(settings.batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            lib = full if size is None else subset_store(full, settings.model_copy(update={"data_dir": Path(tmp) / f"s{size}"}), size)
            lib.ready()
            lib.warm_up()
            lab = Lab(lib)
            folder, collection = lab.chroma_collection()
            naive = naive_chroma(folder, emb, collection)
            stages = ("topic_retrieve", "topic_answer", "paper_retrieve", "paper_answer", "naive_topic", "naive_paper")
            rows: dict[str, list[float]] = {name: [] for name in stages}
            present = [p for p in paper_ids if lib.paper(p) is not None]
            for r in range(repeat):
                for q, topic in questions:
                    q2 = f"{q} ({size}-{r})"  # a new text each size and round: no query-cache hits
                    ans = lib.ask(q2, Scope.for_topic(topic))
                    rows["topic_retrieve"].append(ans.timings_ms["retrieve"])
                    rows["topic_answer"].append(ans.timings_ms["total"])
                    t0 = time.perf_counter()
                    naive.as_retriever(search_kwargs={"k": lib.settings.retrieval.k, "filter": lab.chroma_where(Scope.for_topic(topic))}).invoke(q2)
                    rows["naive_topic"].append((time.perf_counter() - t0) * 1000)
                for pid in present:
                    q2 = f"What method does this paper propose, and how is it evaluated? ({pid} {size}-{r})"
                    ans = lib.ask(q2, Scope.for_paper(pid))
                    rows["paper_retrieve"].append(ans.timings_ms["retrieve"])
                    rows["paper_answer"].append(ans.timings_ms["total"])
                    t0 = time.perf_counter()
                    naive.as_retriever(search_kwargs={"k": lib.settings.retrieval.k, "filter": lab.chroma_where(Scope.for_paper(pid))}).invoke(q2)
                    rows["naive_paper"].append((time.perf_counter() - t0) * 1000)
            res: dict[str, Any] = {"chunks": lib.counts()[1]}
            for k, v in rows.items():
                if v:
                    res[f"{k}_p50_ms"] = pct(v, 50)
                    res[f"{k}_p95_ms"] = pct(v, 95)
            if rows["naive_topic"]:
                res["naive/ours topic p50"] = round(res["naive_topic_p50_ms"] / res["topic_retrieve_p50_ms"], 2)
            if rows["naive_paper"]:
                res["naive/ours paper p50"] = round(res["naive_paper_p50_ms"] / res["paper_retrieve_p50_ms"], 2)
            out[str(size or "all")] = res
            if lib is not full:
                lib.close()
    return out


def chart_svg(results: dict[str, Any]) -> str:
    """A small SVG: retrieval p50 per store size, ours against the naive retriever (topic scope)."""
    q = results.get("query") or {}
    bars = []
    x = 10
    top = max([v.get("naive_topic_p50_ms", 0) for v in q.values()] + [v.get("topic_retrieve_p50_ms", 0) for v in q.values()] + [1])
    for size, v in q.items():
        for label, key, color in (("ours", "topic_retrieve_p50_ms", "#4f46e5"), ("naive", "naive_topic_p50_ms", "#9ca3af")):
            val = v.get(key, 0)
            h = 140 * val / top
            bars.append(f'<rect x="{x}" y="{160 - h:.1f}" width="28" height="{h:.1f}" fill="{color}"><title>{size} {label}: {val} ms</title></rect>'
                        f'<text x="{x + 14}" y="{155 - h:.1f}" font-size="9" text-anchor="middle">{val:g}</text>')
            x += 32
        bars.append(f'<text x="{x - 48}" y="176" font-size="10" text-anchor="middle">{size}</text>')
        x += 20
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{x + 10}" height="190"><text x="10" y="12" font-size="11">'
            "retrieval p50 (ms), topic scope: ours (indigo) vs naive LangChain (grey)</text>" + "".join(bars) + "</svg>")
