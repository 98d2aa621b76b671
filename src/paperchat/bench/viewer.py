"""The paper viewer's benchmarks: citation clicks on a long PDF (cold and warm), and placing quotes over a
question set."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.bench.measure import pct, rss_mb
from paperchat.errors import ConfigError
from paperchat.settings import Settings
from paperchat.types import Scope

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
                "click_cold_p50_ms": pct(cold, 50),
                "click_cold_p95_ms": pct(cold, 95),
                "click_warm_p50_ms": pct(warm, 50),
                "click_warm_p95_ms": pct(warm, 95),
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
