"""The ingest benchmarks: our ingest of abstracts and of PDFs against MiniLM alone on the same texts (the limit),
a re-ingest and the naive LangChain pipeline, and the Ray batch ingest against our local one."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.bench.measure import peak_rss_mb, timed
from paperchat.bench.naive import naive_ingest_pdfs, naive_ingest_records, need_dev_extra
from paperchat.errors import ConfigError
from paperchat.evaluation.lab import Lab
from paperchat.settings import Settings
from paperchat.types import Paper


def bench_ingest(source: Path, limit: int | None, settings: Settings) -> dict[str, Any]:
    """Our ingest of `limit` abstracts into a fresh store, MiniLM alone on the same texts and batch size
    (the limit here), a re-ingest of the same input, and the naive LangChain pipeline on the same records."""
    need_dev_extra()
    items = Lab.read_records(source, limit)
    papers = [p for p in items if isinstance(p, Paper)]
    texts = Lab.abstract_texts(papers)
    with tempfile.TemporaryDirectory() as tmp:
        s = settings.model_copy(update={"data_dir": Path(tmp) / "store", "models_dir": settings.models_path})  # no re-export
        lib = Assistant(s)
        lib.embed(["warm up"] * 4)  # model load is not ingest
        # the limit is measured before and after ours and averaged: this machine's speed drifts
        _, limit_before = timed(lambda: lib.embed(texts))
        first, ours_s = timed(lambda: lib.ingest_papers(iter(items)))
        _, limit_after = timed(lambda: lib.embed(texts))
        limit_s = (limit_before + limit_after) / 2
        again, re_s = timed(lambda: lib.ingest_record_files([source], show_progress=False) if limit is None else lib.ingest_papers(iter(items)))
        lab = Lab(lib)
        device, name = lab.embedder_device(), lab.embedder_name()
        lib.close()
        torch_part = _torch_minilm(texts, s, Path(tmp) / "torch", limit_s, ours_s) if name != "minilm" else {}
        naive_s = naive_ingest_records(papers, Path(tmp) / "naive", s)
    return {
        "embedder": name,
        "device": device,
        **torch_part,
        "naive_s": round(naive_s, 2),
        "ours/naive": round(ours_s / naive_s, 3),
        "peak_rss_mb": peak_rss_mb(),
        "abstracts": len(texts),
        "ours_s": round(ours_s, 2),
        "limit_s": round(limit_s, 2),
        "limit_runs_s": [round(limit_before, 2), round(limit_after, 2)],
        "abstracts_per_s": round(len(texts) / ours_s, 2),
        "limit_abstracts_per_s": round(len(texts) / limit_s, 2),
        "ours/limit": round(ours_s / limit_s, 3),
        "reingest_s": round(re_s, 3),
        "reingest_chunks_embedded": again.chunks_added,
        "reingest/first": round(re_s / ours_s, 4),
        "first_added": first.chunks_added,
    }


ARXIV_ABSTRACTS = 2_500_000  # all of arXiv, for the projection


def bench_ray_ingest(source: Path, limit: int | None, settings: Settings, address: str, workers: list[int], batch: int | None = None) -> dict[str, Any]:
    """The Ray batch ingest of `limit` abstracts with each number of `workers`, against our local ingest of
    the same records into the same Chroma server (settings.chroma_url, which must be empty: a scratch server;
    each run's chunks are deleted after it). Per run: the steady rate (workers started and their models
    loaded before the clock starts: `ray_<n>w_s`) and the wall time with that start (`ray_<n>w_wall_s`); then
    abstracts/s per worker and what all of arXiv would take at that rate."""
    if not settings.chroma_url:
        raise ConfigError(
            "bench ray writes into a Chroma server, and none is set",
            "start a scratch one (`chroma run --path DIR --port PORT`) and set PAPERCHAT_CHROMA_URL",
        )
    items = Lab.read_records(source, limit)
    n = len(Lab.abstract_texts([p for p in items if isinstance(p, Paper)]))
    out: dict[str, Any] = {"abstracts": n, "workers": workers, "ray_batch": batch}
    with tempfile.TemporaryDirectory() as tmp:
        def fresh(name: str) -> Assistant:
            lib = Assistant(settings.model_copy(update={"data_dir": Path(tmp) / name, "models_dir": settings.models_path}))
            if lib.counts()[1]:
                lib.close()
                raise ConfigError(
                    f"the Chroma server at {settings.chroma_url} holds chunks already",
                    "bench ray needs an empty scratch server (it deletes what it wrote)",
                )
            return lib

        local = fresh("local")
        local.embed(["warm up"] * 4)  # model load is not ingest
        _, local_s = timed(lambda: local.ingest_papers(iter(items)))
        Lab(local).drop_vectors()
        local.close()
        out.update(local_s=round(local_s, 2), local_abstracts_per_s=round(n / local_s, 2))
        for w in workers:
            lib = fresh(f"ray{w}")
            rep, wall = timed(lambda: lib.ingest_papers_on_ray(iter(items), address, w, batch, start_first=True))  # noqa: B023 - called at once
            Lab(lib).drop_vectors()
            lib.close()
            if rep.failed or rep.chunks_added != n:
                raise ConfigError(f"the Ray ingest with {w} workers stored {rep.chunks_added} of {n} abstracts ({len(rep.failed)} failed)", "see the Ray logs")
            rate = n / rep.seconds
            out.update({f"ray_{w}w_s": round(rep.seconds, 2), f"ray_{w}w_wall_s": round(wall, 2), f"ray_{w}w_abstracts_per_s": round(rate, 2),
                        f"ray_{w}w_per_worker": round(rate / w, 2), f"ray_{w}w/local": round(rep.seconds / local_s, 3)})
        per_worker = out[f"ray_{min(workers)}w_per_worker"]  # the fewest workers: the least contended rate per worker
        out["arxiv_worker_hours"] = round(ARXIV_ABSTRACTS / per_worker / 3600, 1)
    return out


def _torch_minilm(texts: list[str], settings: Settings, folder: Path, limit_s: float, ours_s: float) -> dict[str, Any]:
    """MiniLM through torch (today's default) alone on the same texts, in the same run: the yardstick of a
    faster backend. Measured twice, around nothing else, and averaged."""
    ref = Assistant(settings.model_copy(update={"embedder": "minilm", "data_dir": folder}))
    ref.embed(["warm up"] * 4)
    runs = [timed(lambda: ref.embed(texts))[1] for _ in range(2)]
    ref.close()
    torch_s = sum(runs) / len(runs)
    return {
        "torch_minilm_s": round(torch_s, 2),
        "torch_minilm_runs_s": [round(r, 2) for r in runs],
        "torch_abstracts_per_s": round(len(texts) / torch_s, 2),
        "limit_speedup_vs_torch": round(torch_s / limit_s, 2),
        "ours_speedup_vs_torch": round(torch_s / ours_s, 2),
    }


def bench_ingest_pdfs(pdfs: list[Path], settings: Settings) -> dict[str, Any]:
    """Our PDF ingest vs MiniLM alone on our chunk texts vs the naive LangChain pipeline, same PDFs."""
    need_dev_extra()
    with tempfile.TemporaryDirectory() as tmp:
        s = settings.model_copy(update={"data_dir": Path(tmp) / "store", "models_dir": settings.models_path})  # no re-export
        lib = Assistant(s)
        lib.embed(["warm up"] * 4)
        texts, pages = Lab(lib).pdf_chunk_texts(pdfs)
        _, limit_before = timed(lambda: lib.embed(texts))
        first, ours_s = timed(lambda: lib.ingest_pdfs(pdfs, show_progress=False))
        _, limit_after = timed(lambda: lib.embed(texts))
        limit_s = (limit_before + limit_after) / 2
        again, re_s = timed(lambda: lib.ingest_pdfs(pdfs, show_progress=False))
        lib.close()
        naive_s = naive_ingest_pdfs(pdfs, Path(tmp) / "naive", s)
    return {
        "pdfs": len(pdfs), "pages": pages, "chunks": first.chunks_added, "failed": len(first.failed),
        "ours_s": round(ours_s, 2), "limit_s": round(limit_s, 2), "naive_s": round(naive_s, 2),
        "pages_per_s": round(pages / ours_s, 2),
        "ours/limit": round(ours_s / limit_s, 3), "ours/naive": round(ours_s / naive_s, 3),
        "reingest_s": round(re_s, 3), "reingest_chunks_embedded": again.chunks_added, "reingest/first": round(re_s / ours_s, 4),
    }
