"""The app in a real browser: headless Debian Chromium driven by Playwright.

Opens the app, opens a topic and checks the momentum figures against the store, presses J/J/K/S and
checks the saved list, asks a topic question and follows a citation link, uploads a real PDF and asks
about it, clicks the answer's first citation and checks the viewer's page and highlight boxes, and checks
that a hostile title renders as text; opens a hostile record (javascript: URL, HTML in its abstract) and asks
about it: no dialog, no iframe, no javascript: link. Screenshots go to test-artefacts/.
`.ci/run` installs Debian's chromium; in CI a missing browser fails the test instead of skipping it.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paperchat.library import Library
from paperchat.types import Scope
from paperchat.ui import handlers as h
from tests.conftest import IN_CI, ROOT, served_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTEFACTS = ROOT / "test-artefacts"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
]
HOSTILE = "<img src=x onerror=alert(1)>"




@pytest.fixture
def app_url(built_library: Library) -> Iterator[tuple[str, h.Core]]:
    # a hostile title: must render as text everywhere (topic rows, paper view)
    built_library.catalog._conn.execute("UPDATE papers SET title=? WHERE id='2004.04906'", (HOSTILE,))
    built_library.catalog._conn.commit()
    with served_app(built_library) as served:
        yield served


@pytest.fixture(autouse=True)
def pdf_worker_before_the_browser() -> None:
    """Start the PDFium worker before Playwright: a child forked later inherits the Playwright driver's pipes,
    and the driver, never seeing them close, keeps `browser.close()` waiting for as long as the child lives."""
    import os

    from paperchat.reading import document

    document.WORKER.call(os.getpid)


@pytest.fixture
def page() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        msg = "Debian chromium not installed (apt-get install -y chromium)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright

    ARTEFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.set_default_timeout(30_000)
        try:
            yield pg
        finally:
            browser.close()


def _shot(pg: Any, name: str) -> None:
    pg.screenshot(path=str(ARTEFACTS / f"{name}.png"), full_page=True)


@pytest.mark.slow
def test_app_in_a_real_browser(app_url: tuple[str, h.Core], page: Any, five_pdfs: list[Path]) -> None:
    url, core = app_url
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.wait_for_selector(".pc-card")
    _shot(page, "01-all-topics")

    # -- topic page: momentum figures match the store ------------------------------------------
    page.click('.pc-card a[href="#topic/rag"]')
    head = page.wait_for_selector(".pc-momentum-box")
    page.wait_for_selector(".pc-list .pc-row")
    expected = h.topic_header(core, "rag")
    m = expected["momentum"]
    text = head.inner_text()
    assert f"{m.recent} paper" in text, text
    assert f"{m.share_pct:.1f}% of all new papers" in text, text
    assert page.locator(".pc-momentum-box svg rect").count() == len(m.weekly)
    _shot(page, "02-topic-page")

    # -- keyboard: J J K selects the first row, S saves it -------------------------------------
    rows = page.locator(".pc-list .pc-row")
    first = rows.nth(0).get_attribute("data-paper")
    page.locator("h3", has_text="Latest papers").click()  # focus the page, not a text box
    for key in ("j", "j", "k"):
        page.keyboard.press(key)
    assert page.locator(".pc-row.pc-selected").get_attribute("data-paper") == first
    page.keyboard.press("s")
    page.wait_for_function("() => !!document.querySelector('.pc-row .pc-saved')")
    assert core.library.catalog.saved() == [first]
    # typing J in a text box moves nothing
    filt = page.get_by_placeholder("Filter by title or author")
    filt.click()
    page.keyboard.press("j")
    assert page.locator(".pc-row.pc-selected").get_attribute("data-paper") == first
    filt.fill("")
    _shot(page, "03-topic-selected-and-saved")

    # -- ask about the topic: the answer cites papers of the topic, as links --------------------
    q = page.get_by_placeholder("Ask about this topic ...")
    q.fill("How do retrieval-augmented models use retrieved documents?")
    q.press("Enter")
    link = page.wait_for_selector('.pc-sources a[href^="#paper/"]')
    page.wait_for_selector('[class*="message"] a[href^="#paper/"]', timeout=30_000)
    topic_papers = set(core.library.catalog.topic_papers("rag"))
    cited = {re.sub(r"^#paper/", "", a.get_attribute("href")).split("/")[0]
             for a in page.locator('[class*="message"] a[href^="#paper/"]').all()}
    assert cited and cited & topic_papers, cited  # the topic is a prior: papers its rules miss may be cited too
    assert link is not None
    _shot(page, "04-topic-answer")

    # -- the paper view through a citation; the hostile title is text ---------------------------
    page.evaluate("location.hash = 'paper/2004.04906'")
    page.wait_for_selector(".pc-paper h2, .pc-paper")
    page.wait_for_function("() => document.body.innerText.includes('onerror=alert(1)')")
    assert not dialogs and page.locator('img[src="x"]').count() == 0
    _shot(page, "05-paper-view-hostile-title")

    # -- upload a real PDF and ask about it -----------------------------------------------------
    page.get_by_role("tab", name="Upload a PDF").click()
    page.locator('input[type="file"]').first.set_input_files(str(five_pdfs[4]))  # Attention Is All You Need
    page.wait_for_function("() => document.body.innerText.includes('Attention Is All You Need')", timeout=120_000)
    pq = page.get_by_placeholder("Ask about this paper ...")
    pq.fill("How many attention heads are used?")
    pq.press("Enter")
    page.wait_for_selector('[class*="message"] a[href^="#paper/1706.03762/"]', timeout=30_000)
    _shot(page, "06-askpdf-upload")
    assert not dialogs

    # -- the PDF beside the chat: its first citation opens the cited page with the quote highlighted ----
    page.wait_for_selector("#pc-viewer .pc-page-img")  # the upload opened the viewer at page 1
    assert page.locator("#pc-viewer .pc-viewer").get_attribute("data-page") == "1"
    first = page.locator('[class*="message"] a[href^="#paper/1706.03762/"]').first
    cited_page = int(first.get_attribute("href").rsplit("/", 1)[1])
    quote = first.get_attribute("title")  # hovering shows the quote
    assert quote and len(quote) > 20
    ans = core.ask("How many attention heads are used?", Scope.for_paper("1706.03762"))
    cite = next(c for c in ans.citations if c.page == cited_page)
    t0 = time.perf_counter()
    first.click()
    page.wait_for_function(
        f"() => {{ const v = document.querySelector('#pc-viewer .pc-viewer'); "
        f"return v && v.dataset.page === '{cited_page}' && v.querySelector('.pc-hl'); }}"
    )
    click_ms = 1000 * (time.perf_counter() - t0)
    # the boxes on the page are the ones computed from the page's text positions for that citation's quote
    expected = core.page_view("1706.03762", cited_page, cite.quote)
    assert expected is not None and expected.highlight is not None and expected.highlight.placed
    shown = page.locator("#pc-viewer .pc-hl").evaluate_all(
        "els => els.map(e => [e.style.left, e.style.top, e.style.width, e.style.height].map(parseFloat))"
    )
    assert shown == [list(b) for b in expected.boxes_pct()], (shown, expected.boxes_pct())
    assert "cited passage highlighted" in page.locator("#pc-viewer .pc-page-meta").inner_text()
    hl = page.locator("#pc-viewer .pc-hl").first.bounding_box()
    img = page.locator("#pc-viewer .pc-page-img").bounding_box()
    assert hl and img and img["x"] <= hl["x"] < img["x"] + img["width"] and img["y"] <= hl["y"] < img["y"] + img["height"]
    print(f"citation click to highlighted page in the browser: {click_ms:.0f} ms")
    _shot(page, "08-viewer-citation-highlight")
    page.click("#pc-next")  # next page: no highlight there
    page.wait_for_function(f"() => document.querySelector('#pc-viewer .pc-viewer').dataset.page === '{cited_page + 1}'")
    assert page.locator("#pc-viewer .pc-hl").count() == 0
    t0 = time.perf_counter()  # the same citation again: its page is rendered already (warm)
    first.click()
    page.wait_for_function(
        f"() => {{ const v = document.querySelector('#pc-viewer .pc-viewer'); "
        f"return v && v.dataset.page === '{cited_page}' && v.querySelector('.pc-hl'); }}"
    )
    print(f"citation click, page rendered before: {1000 * (time.perf_counter() - t0):.0f} ms")
    # a sources row opens its page too, with its passage highlighted
    row = page.locator(".pc-source[data-page] >> visible=true").nth(1)  # (the topic tab keeps its own, hidden)
    row_page = row.get_attribute("data-page")
    row.locator("blockquote").click()
    page.wait_for_function(
        f"() => {{ const v = document.querySelector('#pc-viewer .pc-viewer'); "
        f"return v && v.dataset.page === '{row_page}' && v.querySelector('.pc-hl'); }}"
    )
    assert not dialogs


@pytest.mark.slow
def test_hostile_record_is_inert_in_a_real_browser(built_library: Library, page: Any) -> None:
    """Issue 12: a record with a javascript: URL and HTML in its abstract, opened and asked about."""
    from paperchat.ingestion.pipeline import Ingester
    from tests.test_security import HOSTILE_ID, hostile_paper

    rep = Ingester(built_library).ingest_records([hostile_paper()])
    assert not rep.failed
    with served_app(built_library) as (url, _core):
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(url)
        page.wait_for_selector(".pc-card")
        page.evaluate(f"location.hash = 'paper/{HOSTILE_ID}'")
        page.wait_for_selector(f'.pc-paper[data-paper="{HOSTILE_ID}"]')
        page.wait_for_function("() => document.body.innerText.includes('onerror=alert(1)')")
        pq = page.get_by_placeholder("Ask about this paper ...")
        pq.fill("How does sparse expert routing reduce compute?")
        pq.press("Enter")
        cite = page.wait_for_selector(f'[class*="message"] a[href^="#paper/{HOSTILE_ID}"]', timeout=60_000)
        page.wait_for_selector(".pc-sources")
        # the text of the chat message that holds the citation
        answer = cite.evaluate("a => { let e = a; while (e && e.innerText.length < 80) e = e.parentElement; return e ? e.innerText : '' }")
        assert "iframe" in answer or "onerror" in answer, answer  # the answer does quote the hostile text, as text
        page.wait_for_timeout(500)  # let a (hostile) iframe or image load and fire, were there one
        _shot(page, "07-hostile-record")
        assert not dialogs, dialogs
        assert page.locator("iframe").count() == 0
        assert page.locator('a[href^="javascript" i]').count() == 0
        assert page.locator("[onerror]").count() == 0 and page.locator('img[src="x"]').count() == 0


def _bibtex_download(pg: Any) -> str:
    """The BibTeX behind the visible 'BibTeX of the cited papers' button under the last answer."""
    from urllib.parse import unquote

    href = pg.locator("a.pc-bibtex >> visible=true").first.get_attribute("href")
    assert href and href.startswith("data:application/x-bibtex;charset=utf-8,"), href
    return unquote(href.split(",", 1)[1])


def _cited(pg: Any) -> list[str]:
    links = pg.locator('[class*="message"] a[href^="#paper/"] >> visible=true').all()
    return list(dict.fromkeys(re.sub(r"^#paper/", "", a.get_attribute("href")).split("/")[0] for a in links))


def _ask_here(pg: Any, placeholder: str, question: str) -> list[str]:
    """Ask in the visible chat and wait for this answer's sources and BibTeX button; returns the cited paper ids
    in the order the answer cites them."""
    panel = "[...document.querySelectorAll('.pc-sources')].filter(e => e.offsetParent !== null).map(e => e.innerHTML).join('')"
    before = pg.evaluate(f"() => {panel}")
    q = pg.get_by_placeholder(placeholder)
    q.fill(question)
    q.press("Enter")
    pg.wait_for_function(
        f"(b) => {{ const s = {panel}; return s && s !== b && [...document.querySelectorAll('a.pc-bibtex')].some(a => a.offsetParent !== null); }}",
        arg=before, timeout=60_000,
    )
    return _cited(pg)


@pytest.mark.slow
def test_tags_collections_and_following_in_a_real_browser(built_library: Library, page: Any, tmp_path: Path) -> None:
    """Issue 16 in the page: fine-grained tags on the rows of Latest papers and in the paper view, a tag opens its
    discovered topic's page (momentum, latest papers, a chat scoped to it); an imported collection opens from the
    Following tab and is asked about; an answer's BibTeX button; "Mark as seen" moves the last visit."""
    import bibtexparser

    from paperchat.digest import LAST_VISIT_KEY
    from paperchat.discovery.clusters import DiscoverySettings, discover

    cat = built_library.catalog
    discover(built_library, DiscoverySettings(n_topics=10, min_similarity=0.5))
    labels = {t.slug: t.label for t in cat.discovered()}
    # a Zotero-like export of four papers of the store (by eprint): the collection 'Reading list'
    rag = cat.topic_papers("rag")
    chosen = ["2005.11401", "2004.04906", *[p for p in rag if p not in ("2005.11401", "2004.04906")][:2]]
    bib = tmp_path / "reading.bib"
    bib.write_text("".join(f"@misc{{k{i},\n  title = {{x}},\n  eprint = {{{pid}}},\n  archivePrefix = {{arXiv}}\n}}\n\n" for i, pid in enumerate(chosen)))
    cat.follow("rag")
    cat.set_meta(LAST_VISIT_KEY, "2000-01-01T00:00:00.000000+00:00")  # every paper of the store is new since then
    with served_app(built_library) as (url, core):
        assert core.import_collection(bib, "Reading list").size == 4
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(url)
        page.wait_for_selector(".pc-card")

        # -- Latest papers: every row shows its tags (best first), as links ------------------------
        page.click('.pc-card a[href="#topic/rag"]')
        page.wait_for_selector(".pc-list .pc-row >> visible=true")
        rows = page.locator(".pc-list .pc-row >> visible=true")
        ids = [rows.nth(i).get_attribute("data-paper") for i in range(rows.count())]
        tags = core.paper_tags(ids)
        assert ids == rag[: h.PAGE_SIZE] and sum(1 for i in ids if tags.get(i)) >= len(ids) // 2, tags
        for i, pid in enumerate(ids):
            shown = rows.nth(i).locator("a.pc-fine").evaluate_all("els => els.map(e => [e.dataset.topic, e.innerText])")
            assert shown == [[s, label] for s, label in tags.get(pid, [])], (pid, shown)
        _shot(page, "09-latest-papers-with-tags")

        # -- a tag opens its topic's page: name, momentum, latest papers ---------------------------
        row = next(i for i, pid in enumerate(ids) if tags.get(pid))
        slug = tags[ids[row]][0][0]
        rows.nth(row).locator("a.pc-fine").first.click()
        page.wait_for_function(
            "(n) => [...document.querySelectorAll('.pc-topic-head h2')].some(e => e.offsetParent !== null && e.innerText === n)", arg=labels[slug]
        )
        assert labels[slug].lower() not in {t.name.lower() for t in built_library.topics.topics}  # never a hand-written name
        head = h.topic_header(core, slug)
        assert head["momentum"].sentence() in page.locator(".pc-momentum >> visible=true").first.inner_text()
        members = cat.tagged_papers(slug)
        page.wait_for_function(
            "(p) => { const r = [...document.querySelectorAll('.pc-list .pc-row')].filter(e => e.offsetParent !== null); "
            "return r.length && r[0].dataset.paper === p; }",
            arg=members[0],
        )
        shown_rows = page.locator(".pc-list .pc-row >> visible=true")
        assert [shown_rows.nth(i).get_attribute("data-paper") for i in range(shown_rows.count())] == members[: h.PAGE_SIZE]
        assert page.locator(".pc-momentum-box svg rect").count() == len(head["momentum"].weekly)  # (empty weeks: zero-height bars)
        _shot(page, "10-discovered-topic-page")
        # ... and its chat searches only its papers; the BibTeX button holds the cited papers
        cited = _ask_here(page, "Ask about this topic ...", "What methods do these papers propose?")
        assert cited and set(cited) <= set(members), (cited, members[:5])
        entries = bibtexparser.parse_string(_bibtex_download(page)).entries
        assert [e.fields_dict["eprint"].value for e in entries] == cited
        _shot(page, "11-discovered-topic-answer")

        # -- the paper view shows the tags too, and they open the topic ----------------------------
        pid = next(i for i in ids if len(tags.get(i, [])) >= 1)
        page.evaluate(f"location.hash = 'paper/{pid}'")
        page.wait_for_selector(f'.pc-paper[data-paper="{pid}"]')
        view_tags = page.locator(".pc-paper a.pc-fine").evaluate_all("els => els.map(e => [e.dataset.topic, e.innerText])")
        assert view_tags == [[s, label] for s, label in tags[pid]]
        other = tags[pid][-1][0]
        page.locator(f'.pc-paper a.pc-fine[data-topic="{other}"]').click()
        page.wait_for_function("(n) => [...document.querySelectorAll('.pc-topic-head h2')].some(e => e.innerText === n)", arg=labels[other])
        _shot(page, "12-paper-view-tag-opened")

        # -- Following: the collection opens like a topic and is asked about -----------------------
        page.get_by_role("tab", name="Following & Saved").click()
        page.wait_for_selector('.pc-collections a[href="#topic/reading-list"]')
        digest_line = page.locator(".pc-digest").inner_text()
        assert re.match(r"\d+ new papers? in 1 of 1 followed topic", digest_line) and not digest_line.startswith("0 "), digest_line
        page.click('.pc-collections a[href="#topic/reading-list"]')
        page.wait_for_function("() => [...document.querySelectorAll('.pc-topic-head h2')].some(e => e.innerText === 'Reading list')")
        page.wait_for_function("() => [...document.querySelectorAll('.pc-list .pc-row')].filter(e => e.offsetParent !== null).length === 4")
        inside = core.collection_papers("reading-list")
        shown_rows = page.locator(".pc-list .pc-row >> visible=true")
        assert [shown_rows.nth(i).get_attribute("data-paper") for i in range(4)] == inside and set(inside) == set(chosen)
        cited = _ask_here(page, "Ask about this topic ...", "How many documents are retrieved per query?")
        assert cited and set(cited) <= set(chosen), cited
        _shot(page, "13-collection-answer")

        # -- Mark as seen: the last visit moves to now, nothing is new -----------------------------
        page.get_by_role("tab", name="Following & Saved").click()
        page.click("#pc-mark-seen")
        page.wait_for_function("() => document.querySelector('.pc-digest').innerText.startsWith('0 new papers')")
        moved = cat.get_meta(LAST_VISIT_KEY)
        assert moved and moved > "2026-01-01" and core.digest(peek=True).total == 0
        _shot(page, "14-marked-as-seen")
        assert not dialogs


@pytest.mark.slow
def test_for_you_learns_from_ratings_in_a_real_browser(built_library: Library, page: Any) -> None:
    """Issue 38 in the page: For you starts newest first; five papers rated with the M key on a topic page
    reorder it, each top row says why; "not interested" on a row takes it out of the list."""
    from paperchat.digest import LAST_VISIT_KEY

    cat = built_library.catalog
    cat.set_meta(LAST_VISIT_KEY, "2000-01-01T00:00:00.000000+00:00")  # every paper of the store is new since then
    with served_app(built_library) as (url, core):
        page.goto(url)
        page.wait_for_selector(".pc-card")
        page.get_by_role("tab", name="For you").click()
        page.wait_for_function("() => { const d = document.querySelector('#pc-foryou .pc-digest'); return d && d.innerText.includes('newest first'); }")
        before = page.locator("#pc-foryou .pc-row").evaluate_all("els => els.map(e => e.dataset.paper)")
        assert len(before) >= 10 and page.locator("#pc-foryou .pc-reason").count() == 0
        _shot(page, "14-for-you-before")

        # -- five papers rated "more like this" with the M key on the RAG page ---------------------
        page.evaluate("location.hash = 'topic/rag'")
        page.wait_for_selector(".pc-list .pc-row >> visible=true")
        page.locator("h3", has_text="Latest papers").click()  # focus the page, not a text box
        for n in range(1, 6):
            page.keyboard.press("j")
            page.keyboard.press("m")
            page.wait_for_function("(n) => document.querySelectorAll('.pc-row .pc-rate.pc-rated').length >= n", arg=n)
        rated = core.ratings()
        assert len(rated) == 5 and set(rated.values()) == {1}
        rag = set(cat.topic_papers("rag"))
        assert set(rated) <= rag

        # -- For you now follows the ratings, with reasons -----------------------------------------
        page.get_by_role("tab", name="For you").click()
        page.wait_for_function("() => document.querySelector('#pc-foryou .pc-digest').innerText.includes('ranked by 5 liked')")
        after = page.locator("#pc-foryou .pc-row").evaluate_all("els => els.map(e => e.dataset.paper)")
        assert after[:10] != before[:10] and not set(after) & set(rated)
        assert sum(p in rag for p in after[:10]) > sum(p in rag for p in before[:10]), (after[:10], before[:10])
        reasons = page.locator("#pc-foryou .pc-row").first.locator(".pc-reason").all_inner_texts()
        assert reasons and any("which you rated up" in r or r.startswith(("topic:", "tag:")) for r in reasons), reasons
        _shot(page, "15-for-you-after-five-ratings")

        # -- "not interested" on the first row: stored, and the row leaves the list ----------------
        top = after[0]
        page.locator(f'#pc-foryou .pc-row[data-paper="{top}"] a.pc-rate[data-rate="down"]').click()
        page.wait_for_function("(p) => !document.querySelector(`#pc-foryou .pc-row[data-paper='${p}']`)", arg=top)
        assert core.ratings()[top] == -1
        _shot(page, "16-for-you-not-interested")


@pytest.mark.slow
def test_compare_table_in_a_real_browser(built_library: Library, page: Any) -> None:
    """Issue 36 in the page: a topic's papers compared in a table, a column added, a cell clicked opens the
    paper at its quote with the highlight; a paper's page adds it to the comparison."""
    with served_app(built_library) as (url, core):
        page.goto(url)
        page.wait_for_selector(".pc-card")
        page.click('.pc-card a[href="#topic/rag"]')
        page.wait_for_selector(".pc-list .pc-row >> visible=true")
        page.click("#pc-compare-topic")
        page.wait_for_selector("table.pc-compare tbody tr", timeout=120_000)
        rows = page.locator("table.pc-compare tbody tr").evaluate_all("els => els.map(e => e.dataset.paper)")
        assert rows == core.library.catalog.topic_papers("rag")[:10]
        heads = page.locator("table.pc-compare thead th").all_inner_texts()
        assert heads[1:] == ["Task", "Approach", "Datasets", "Metric and best result", "Model and size", "Compute", "Code"]
        _shot(page, "17-compare-from-topic")
        from urllib.parse import unquote

        csv_href = page.locator("#pc-compare a.pc-csv").get_attribute("href") or ""
        assert csv_href.startswith("data:text/csv") and unquote(csv_href).split(",", 1)[1].startswith("paper_id,title,Task,Task (citation)")

        # -- a column added on the page -------------------------------------------------------------
        page.locator("#pc-add-column textarea, #pc-add-column input").first.fill("Which retriever is used?")
        page.click("#pc-add-column-btn")
        page.wait_for_function("() => [...document.querySelectorAll('table.pc-compare thead th')].some(e => e.innerText === 'Which retriever is used')",
                               timeout=120_000)
        cells = page.locator('table.pc-compare td.pc-cell[data-column="Which retriever is used"]')
        assert cells.count() == len(rows)
        _shot(page, "18-compare-column-added")

        # -- a paper's page adds it (a stored PDF: its cells quote pages) --------------------------------
        extra = "2005.11401"
        page.evaluate(f"location.hash = 'paper/{extra}'")
        page.wait_for_selector(f'.pc-paper[data-paper="{extra}"]')
        page.click("#pc-add-compare")
        page.wait_for_function("(p) => (document.querySelector('#pc-compare-ids textarea, #pc-compare-ids input') || {}).value.includes(p)", arg=extra)
        page.get_by_role("tab", name="Compare").click()
        page.click("#pc-build-table")
        page.wait_for_selector(f'table.pc-compare tr[data-paper="{extra}"]', timeout=120_000)

        # -- a cell with a page opens the paper there, the quote highlighted ---------------------------
        paged = [a for a in page.locator(f'table.pc-compare tr[data-paper="{extra}"] a.pc-cell-link').all()
                 if (a.get_attribute("href") or "").count("/") == 2]
        assert paged, "no cell of the PDF quotes a page"
        href = paged[0].get_attribute("href") or ""
        _shot(page, "19-compare-with-a-pdf")
        paged[0].click()
        pg_no = int(href.split("/")[2])
        page.wait_for_selector("#pc-viewer .pc-hl", timeout=60_000)
        assert int(page.locator("#pc-page-no input").input_value()) == pg_no
        _shot(page, "20-compare-cell-opened")
        page.goto("about:blank")  # leave the app before it stops (a closing page kept its event stream open)

