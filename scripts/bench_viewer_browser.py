"""Citation clicks in a real browser: the app (hashing embedder, a temporary data folder holding one PDF) in
headless Chromium; AskPDF answers a few questions, then each cited page's link is clicked cold (the
viewer's caches emptied first) and warm (that page rendered before), timed from the click to the page shown
with its highlight boxes. `paperchat bench viewer` times the same work without the browser and Gradio.

Usage: python scripts/bench_viewer_browser.py PDF [QUESTIONS] [WARM_ROUNDS]
  e.g. python scripts/bench_viewer_browser.py ../shared/data/pdfs/labml/2204.02311.pdf 4 3
Needs the `dev` extra (playwright) and Debian's chromium.
"""
import sys
import tempfile
import time
from pathlib import Path

from paperchat.assistant import Assistant
from paperchat.text import percentile
from paperchat.bench import GENERIC_QUESTIONS, rss_mb
from paperchat.settings import Settings
from paperchat.ui.app import build_app

pdf = Path(sys.argv[1])
n_questions = int(sys.argv[2]) if len(sys.argv) > 2 else 4
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
SHOWN = "v => v && v.dataset.page === '{page}' && v.querySelector('.pc-hl')"

with tempfile.TemporaryDirectory() as tmp:
    core = Assistant(Settings(data_dir=Path(tmp), embedder="hashing"))
    res = core.add_pdf(pdf)
    assert res.paper is not None, res.error
    pid = res.paper.id
    demo = build_app(core.settings, core)
    _app, url, _share = demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True)
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.set_default_timeout(60_000)
            page.goto(url)
            page.wait_for_selector(".pc-card, .pc-empty", state="attached")
            page.evaluate(f"location.hash = 'paper/{pid}'")
            page.wait_for_selector("#pc-viewer .pc-page-img")
            rss0 = rss_mb()
            box = page.get_by_placeholder("Ask about this paper ...")
            sources = "() => { const s = [...document.querySelectorAll('.pc-sources')].find(e => e.offsetParent); return s ? s.innerText : ''; }"
            for q in GENERIC_QUESTIONS[:n_questions]:
                before = page.evaluate(sources)
                box.fill(q)
                box.press("Enter")
                try:  # the sources panel changes when the answer is final (an abstention may leave it as it was)
                    page.wait_for_function(f"b => ({sources})() !== b", arg=before, timeout=30_000)
                except Exception:
                    pass
            links = page.locator(f'[class*="message"] a[href^="#paper/{pid}/"]')
            first_of_page: dict[str, int] = {}
            for i in range(links.count()):
                first_of_page.setdefault(links.nth(i).get_attribute("href").rsplit("/", 1)[1], i)
            cold: list[float] = []
            warm: list[float] = []
            for rnd in range(rounds + 1):
                for n, i in first_of_page.items():
                    if rnd == 0:
                        core.reader.clear()
                    t0 = time.perf_counter()
                    links.nth(i).click()
                    page.wait_for_function(f"() => ({SHOWN.format(page=n)})(document.querySelector('#pc-viewer .pc-viewer'))")
                    (cold if rnd == 0 else warm).append(1000 * (time.perf_counter() - t0))
            browser.close()
    finally:
        demo.close()
    print(f"pdf {pdf.name}: {len(first_of_page)} cited pages, {len(cold)} cold and {len(warm)} warm clicks in Chromium")
    print(f"click to highlighted page, cold  p50 {percentile(cold, 50):.0f} ms  p95 {percentile(cold, 95):.0f} ms")
    print(f"click to highlighted page, warm  p50 {percentile(warm, 50):.0f} ms  p95 {percentile(warm, 95):.0f} ms")
    print(f"app RSS after the clicks {rss_mb():.0f} MB (+{rss_mb() - rss0:.0f} MB since the paper was opened, answers included)")
