"""A bounded load test on loopback: 20 concurrent chat sessions through gradio_client for a fixed time
(PAPERCHAT_LOAD_SECONDS, 60 by default) against the app on the full demo store, plus one PDF upload
during it. No errors, no answers mixed up between sessions (each cites only its own scope), latency
p50 / p95 reported (printed and written to test-artefacts/load.json).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from paperchat.demo import ensure_demo
from paperchat.library import Library
from paperchat.settings import RetrievalSettings
from paperchat.text import percentile
from tests.conftest import ROOT, CountingEmbedder, make_settings, served_app

SESSIONS = 20
SECONDS = float(os.environ.get("PAPERCHAT_LOAD_SECONDS", "60"))




def _pct(xs: list[float], q: float) -> float:
    value = percentile(xs, q)
    return float("nan") if value is None else value


@pytest.mark.slow
def test_twenty_sessions_and_an_upload(tmp_path: Path, embedder: CountingEmbedder, five_pdfs: list[Path]) -> None:
    from gradio_client import Client, handle_file

    # the topic as a filter (topic_outside_weight 0): a topic answer citing a paper outside its topic then
    # means another session's answer leaked into it
    settings = make_settings(tmp_path / "demo", retrieval=RetrievalSettings(topic_outside_weight=0.0))
    lib = Library(settings, embedder=embedder)  # type: ignore[arg-type]
    ensure_demo(lib, show_progress=False)
    lib.ready_index()
    topics = [t.slug for t in lib.topics.topics]
    demo_qs = [json.loads(line) for line in open(ROOT / "eval" / "demo_questions.jsonl", encoding="utf-8")]
    q_by_topic = {q["topic"]: q["question"] for q in demo_qs}
    sessions: list[dict[str, Any]] = []
    for i in range(SESSIONS):
        if i % 2 == 0:
            slug = topics[(i // 2) % len(topics)]
            allowed = set(lib.catalog.topic_papers(slug))
            q = q_by_topic.get(slug, f"What are the main methods in {lib.topics.get(slug).name}?")
            sessions.append({"api": "/ask_topic", "args": (q, slug), "allowed": allowed})
        else:
            pid = lib.catalog.topic_papers(topics[(i // 2) % len(topics)])[i]
            p = lib.catalog.get(pid)
            assert p is not None
            sessions.append({"api": "/ask_paper", "args": (f"What does the paper '{p.title}' propose?", pid), "allowed": {pid}})

    url = ""  # set when the app is up; the sessions below read it (and stop_at) when they run
    lat: list[float] = []
    errors: list[str] = []
    mixed: list[str] = []
    answered = [0]
    lock = threading.Lock()
    stop_at = 0.0  # set when the app is up

    def session(s: dict[str, Any]) -> None:
        try:
            client = Client(url, verbose=False)
        except Exception as exc:
            with lock:
                errors.append(f"connect: {exc}")
            return
        while time.monotonic() < stop_at:
            t0 = time.perf_counter()
            try:
                rec = client.predict(*s["args"], api_name=s["api"])
            except Exception as exc:
                with lock:
                    errors.append(f"{s['api']}: {type(exc).__name__}: {exc}")
                continue
            dt_ms = (time.perf_counter() - t0) * 1000
            with lock:
                lat.append(dt_ms)
                if "error" in rec:
                    errors.append(rec["error"])
                    continue
                cited = {c["paper_id"] for c in rec["citations"]}
                if not cited <= s["allowed"]:
                    mixed.append(f"{s['args'][1]}: cited {sorted(cited - s['allowed'])}")
                if rec["citations"]:
                    answered[0] += 1

    upload: dict[str, Any] = {}

    def do_upload() -> None:
        time.sleep(min(10.0, SECONDS / 4))
        t0 = time.perf_counter()
        try:
            upload["result"] = Client(url, verbose=False).predict(handle_file(str(five_pdfs[1])), api_name="/upload_pdf")
        except Exception as exc:
            upload["result"] = {"error": str(exc)}
        upload["seconds"] = time.perf_counter() - t0

    threads = [threading.Thread(target=session, args=(s,)) for s in sessions] + [threading.Thread(target=do_upload)]
    with served_app(lib) as (url, _core):  # noqa: F811 - rebinds the url the sessions read
        stop_at = time.monotonic() + SECONDS
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=SECONDS + 300)
    report = {
        "sessions": SESSIONS, "seconds": SECONDS, "requests": len(lat), "with_citations": answered[0],
        "errors": len(errors), "mixed": len(mixed),
        "p50_ms": round(_pct(lat, 50), 1), "p95_ms": round(_pct(lat, 95), 1),
        "mean_ms": round(statistics.fmean(lat), 1) if lat else None,
        "upload": upload,
    }
    (ROOT / "test-artefacts").mkdir(exist_ok=True)
    (ROOT / "test-artefacts" / "load.json").write_text(json.dumps(report, indent=2))
    print("load:", json.dumps(report))
    assert not errors, errors[:5]
    assert not mixed, mixed[:5]
    assert len(lat) >= SESSIONS  # every session got answers
    assert answered[0] >= len(lat) * 0.8
    assert upload.get("result", {}).get("paper_id") == "2004.04906", upload
    lib.close()
