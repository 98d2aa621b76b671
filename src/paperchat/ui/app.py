"""build_app(settings) -> gr.Blocks: All topics, Topic page (momentum, latest papers, related topics,
"Ask about this topic"), Paper view with its PDF's pages beside AskPDF, PDF upload, For you (new papers ranked
by the ratings), Following & Saved, Evaluation.

One builder per tab makes its components and wires what happens inside it; `_wire_navigation` connects the
tabs (hash links, J/K/S/M/N keys, follow, save and rate, citation clicks that open the cited page with the quote
highlighted) and `_api` adds the endpoints scripts call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paperchat.assistant import ZOOMS, Assistant
from paperchat.settings import PROJECT_ROOT, Settings
from paperchat.types import Scope
from paperchat.ui import handlers as h
from paperchat.ui.assets import CSS, JS
from paperchat.ui.render import md_text

__all__ = ["build_app", "show_page"]

EVAL_RESULTS = PROJECT_ROOT / "eval" / "results"


@dataclass
class _Shell:
    """What every tab shares: the hidden navigation box, the tab set, the open topic and paper, a notice."""

    nav: Any
    nav_btn: Any
    tabs: Any
    topic_state: Any
    paper_state: Any
    notice: Any
    quote: Any  # hidden: the quote of the citation clicked last (set by the page's script with the nav box)


@dataclass
class _TopicTab:
    pick: Any
    follow_btn: Any
    compare_btn: Any
    compare_cited_btn: Any
    now_box: Any
    head: Any
    filt: Any
    page_no: Any
    listing: Any
    chat: Any


@dataclass
class _PaperTab:
    html: Any
    save_btn: Any
    add_compare_btn: Any
    chat: Any
    viewer_col: Any
    view: Any
    page_no: Any
    zoom: Any
    cite: Any  # {"page": n, "quote": text}: the passage to highlight when that page is shown

    def outputs(self) -> list[Any]:
        """What showing a page of the viewer updates (see `show_page`)."""
        return [self.view, self.page_no, self.viewer_col, self.cite]


def show_page(core: Assistant, pid: str, page: float | None, zoom: float | None, cite: dict[str, Any] | None) -> tuple[Any, ...]:
    """The viewer at a page of the paper (the cited passage highlighted when that is its page): (html, page
    number, column visibility, cite); the column is hidden for a paper without a stored PDF."""
    import gradio as gr

    cite = cite or {}
    n = int(page or 1)
    quote = str(cite.get("quote") or "") if cite.get("page") == n else ""
    html, shown, has_pdf = h.viewer(core, pid, n, quote, float(zoom or 1.0))
    return html, shown, gr.update(visible=has_pdf), cite


def _topic_choices(core: Assistant) -> list[tuple[str, str]]:
    """(name, slug) of every topic a page can show (see `Assistant.all_topic_names`)."""
    return [(n, s) for s, n in core.all_topic_names().items()]


def _topics_tab(core: Assistant) -> tuple[Any, Any]:
    """All topics: a search box and the topic cards. Returns (search box, cards)."""
    import gradio as gr

    search = gr.Textbox(placeholder="Search topics by name", show_label=False)
    overview = gr.HTML(h.topics_overview(core))
    search.change(lambda q: h.topics_overview(core, q or ""), search, overview, api_visibility="private")
    return search, overview


def _show_topic(core: Assistant) -> Any:
    """The handler that fills a topic page: (header html, paper rows, follow button)."""
    import gradio as gr

    def show_topic(slug: str, now: str, filter_text: str, page: float) -> tuple[Any, ...]:
        try:
            head = h.topic_header(core, slug, now or None)
            rows, _total, _pages = h.topic_papers(core, slug, int(page or 1), filter_text or "")
            return head["html"], rows, gr.update(value="Unfollow" if head["following"] else "Follow")
        except Exception as exc:
            return h._error(exc), "", gr.update()

    return show_topic


def _topic_tab(core: Assistant, settings: Settings, shell: _Shell, first: str, answerers: list[str]) -> _TopicTab:
    """One topic: momentum and related topics, its latest papers (paged, filtered) and its chat."""
    import gradio as gr

    # every kind of topic: hand-written, the collections, the discovered ones (custom values: a collection
    # imported or a discovery run while the app runs is reached by its link before the choices are refreshed)
    pick = gr.Dropdown(choices=_topic_choices(core), value=first, label="Topic", allow_custom_value=True)
    with gr.Row():
        follow_btn = gr.Button("Follow", variant="secondary", scale=0)
        compare_btn = gr.Button("Compare these papers", elem_id="pc-compare-topic", variant="secondary", scale=0)
        now_box = gr.Textbox(label="Now (YYYY-MM-DD; empty = newest date in the corpus)", scale=1)
    head = gr.HTML()
    with gr.Row():
        with gr.Column(scale=3):
            gr.HTML('<h3>Latest papers</h3><p class="pc-keys">Keys: J / K move, Enter opens, S saves.</p>')
            with gr.Row():
                filt = gr.Textbox(placeholder="Filter by title or author", show_label=False, scale=3)
                page_no = gr.Number(value=1, precision=0, minimum=1, label="Page", scale=1)
            listing = gr.HTML()
        with gr.Column(scale=2):
            gr.HTML("<h3>Ask about this topic</h3>")
            chat = gr.Chatbot(height=420, show_label=False, sanitize_html=True)
            q = gr.Textbox(placeholder="Ask about this topic ...", show_label=False)
            with gr.Accordion("Answer settings", open=False):
                answerer = gr.Dropdown(answerers, value=settings.answerer, label="Answerer")
                k = gr.Slider(3, 20, value=settings.retrieval.k, step=1, label="Sources")
                since = gr.Textbox(label="Only papers since (YYYY-MM-DD)")
            compare_cited_btn = gr.Button("Compare the cited papers", elem_id="pc-compare-cited", size="sm", scale=0)
            sources = gr.HTML()

    show_topic = _show_topic(core)
    outputs = [head, listing, follow_btn]
    # `.input`, not `.change`: only a topic the user picks here. Navigation (a link, a tag, a collection) sets the
    # state and renders the page itself and updates this dropdown's value; a `.change` on that update was queued
    # behind it and, under load, ran after the next navigation, setting the state back to the previous topic, so a
    # question asked on the new page was answered in the old scope (issue 33, the browser test's collection step)
    pick.input(lambda s: (s, []), pick, [shell.topic_state, chat], api_visibility="private").then(
        show_topic, [pick, now_box, filt, page_no], outputs, api_visibility="private"
    )
    for comp in (now_box, filt):
        comp.submit(show_topic, [shell.topic_state, now_box, filt, page_no], outputs, api_visibility="private")
    page_no.change(show_topic, [shell.topic_state, now_box, filt, page_no], outputs, api_visibility="private")

    def turn(question: str, hist: list[dict[str, Any]], slug: str, k_: float, since_: str, name: str) -> Any:
        for msgs, src in h.chat_stream(core, question, "topic", slug, hist or [], int(k_), since_ or None, name):
            yield msgs, src, ""

    q.submit(turn, [q, chat, shell.topic_state, k, since, answerer], [chat, sources, q], api_visibility="private", concurrency_limit=4)
    return _TopicTab(pick, follow_btn, compare_btn, compare_cited_btn, now_box, head, filt, page_no, listing, chat)


def _paper_tab(core: Assistant, settings: Settings, shell: _Shell, answerers: list[str]) -> _PaperTab:
    """One paper: its page, Save, adding its PDF (upload or arXiv), and the PDF viewer beside AskPDF."""
    import gradio as gr

    html = gr.HTML('<p class="pc-empty">Open a paper from a topic page.</p>')
    with gr.Row():
        save_btn = gr.Button("Save", scale=0)
        add_compare_btn = gr.Button("Add to comparison", elem_id="pc-add-compare", scale=0)
    with gr.Accordion("Add this paper's PDF", open=False):
        attach = gr.File(file_types=[".pdf"], label="PDF of this paper")
        fetch_btn = gr.Button("Download from arXiv", scale=0)
        attach_msg = gr.Markdown()
    cite = gr.State({})
    with gr.Row(equal_height=False):
        with gr.Column(scale=3, visible=False, elem_id="pc-viewer-col") as viewer_col:
            with gr.Row(elem_classes="pc-viewer-bar"):
                prev_btn = gr.Button("< Prev", elem_id="pc-prev", scale=0, min_width=100)
                page_no = gr.Number(value=1, precision=0, minimum=1, label="Page", elem_id="pc-page-no", scale=0, min_width=90)
                next_btn = gr.Button("Next >", elem_id="pc-next", scale=0, min_width=100)
                zoom = gr.Dropdown([(f"{round(z * 100)}%", z) for z in ZOOMS], value=1.0, label="Zoom", elem_id="pc-zoom", scale=0, min_width=100)
            view = gr.HTML(elem_id="pc-viewer")
        with gr.Column(scale=2):
            gr.HTML("<h3>AskPDF</h3>")
            chat = gr.Chatbot(height=380, show_label=False, sanitize_html=True)
            q = gr.Textbox(placeholder="Ask about this paper ...", show_label=False)
            answerer = gr.Dropdown(answerers, value=settings.answerer, label="Answerer")
            sources = gr.HTML()
    tab = _PaperTab(html, save_btn, add_compare_btn, chat, viewer_col, view, page_no, zoom, cite)

    def turn_page(step: int) -> Any:
        def go(pid: str, page: float, zoom_: float, cite_: dict[str, Any]) -> tuple[Any, ...]:
            return show_page(core, pid, max(1, int(page or 1) + step), zoom_, cite_)

        return go

    inputs = [shell.paper_state, page_no, zoom, cite]
    prev_btn.click(turn_page(-1), inputs, tab.outputs(), api_visibility="private", queue=False)
    next_btn.click(turn_page(1), inputs, tab.outputs(), api_visibility="private", queue=False)
    page_no.submit(turn_page(0), inputs, tab.outputs(), api_visibility="private", queue=False)
    zoom.input(turn_page(0), inputs, tab.outputs(), api_visibility="private", queue=False)

    def turn(question: str, hist: list[dict[str, Any]], pid: str, name: str) -> Any:
        for msgs, src in h.chat_stream(core, question, "paper", pid, hist or [], None, None, name):
            yield msgs, src, ""

    q.submit(turn, [q, chat, shell.paper_state, answerer], [chat, sources, q], api_visibility="private", concurrency_limit=4)

    def on_attach(path: str | None, pid: str, zoom_: float) -> tuple[Any, ...]:
        if not pid:
            return gr.update(), "Open a paper first.", *[gr.update()] * 4
        new_pid, msg = h.upload_pdf(core, path, paper_id=pid)
        if not new_pid:
            return gr.update(), md_text(msg), *[gr.update()] * 4
        return h.paper_view(core, pid), md_text(msg), *show_page(core, pid, 1, zoom_, {})

    def on_fetch(pid: str, zoom_: float) -> tuple[Any, ...]:
        new_pid, msg = h.download_arxiv_pdf(core, pid)
        if not new_pid:
            return gr.update(), md_text(msg), *[gr.update()] * 4
        return h.paper_view(core, pid), md_text(msg), *show_page(core, pid, 1, zoom_, {})

    fetch_btn.click(on_fetch, [shell.paper_state, zoom], [html, attach_msg, *tab.outputs()], api_visibility="private", concurrency_limit=1)
    attach.upload(on_attach, [attach, shell.paper_state, zoom], [html, attach_msg, *tab.outputs()], api_visibility="private", concurrency_limit=1)
    return tab


def _upload_tab(core: Assistant, settings: Settings, shell: _Shell, paper: _PaperTab) -> None:
    """Upload a PDF: it is ingested, then opened in the Paper tab."""
    import gradio as gr

    up = gr.File(file_types=[".pdf"], label=f"Drop a PDF (up to {settings.max_pdf_mb:g} MB)")
    up_msg = gr.Markdown()

    def on_upload(path: str | None, zoom: float, progress: Any = gr.Progress()) -> tuple[Any, ...]:  # noqa: B008 - how Gradio passes a progress bar
        progress(0.1, desc="reading and embedding the PDF")
        pid, msg = h.upload_pdf(core, path)
        progress(1.0)
        if pid is None:
            return gr.update(), gr.update(), gr.update(), f"**{md_text(msg)}**", [], *[gr.update()] * 4
        return gr.update(selected="paper"), pid, h.paper_view(core, pid), md_text(msg), [], *show_page(core, pid, 1, zoom, {})

    outputs = [shell.tabs, shell.paper_state, paper.html, up_msg, paper.chat, *paper.outputs()]
    up.upload(on_upload, [up, paper.zoom], outputs, api_visibility="private", concurrency_limit=1)


def _lists_tab(core: Assistant) -> Any:
    """Following (what is new since the last visit, "Mark as seen"), the collections and the saved papers."""
    import gradio as gr

    seen = gr.Button("Mark as seen", elem_id="pc-mark-seen", scale=0)
    lists = gr.HTML(h.lists_html(core))
    # moves the last visit to now, as `paperchat digest` does; the tab itself only peeks
    seen.click(lambda: h.mark_seen(core), None, lists, api_visibility="private")
    return lists


def _for_you_tab(core: Assistant) -> Any:
    """For you: the new papers ranked by "more like this" / "not interested", saves and follows, with reasons."""
    import gradio as gr

    gr.HTML('<p class="pc-keys">Keys: J / K move, Enter opens, S saves, M more like this, N not interested.</p>')
    refresh = gr.Button("Refresh", elem_id="pc-foryou-refresh", scale=0)
    feed = gr.HTML(elem_id="pc-foryou")
    refresh.click(lambda: h.for_you_html(core), None, feed, api_visibility="private")
    return feed


def _table_handler(core: Assistant) -> Any:
    """The handler that builds the Compare table from the ids box, the columns and the sort (with a progress bar)."""
    import gradio as gr

    def build(ids_: str, cols_: list[str], sort_: str, progress: Any = gr.Progress()) -> str:  # noqa: B008 - how Gradio passes a progress bar
        chosen = [p.strip() for p in (ids_ or "").split(",") if p.strip()]
        return h.compare_table(core, chosen, list(cols_ or []), sort_ or "", progress=progress)

    return build


@dataclass
class _CompareTab:
    ids: Any
    cols: Any
    sort: Any
    out: Any


def _compare_tab(core: Assistant) -> _CompareTab:
    """Compare: papers by columns you choose, every cell a quote that opens the paper at its page."""
    import gradio as gr

    from paperchat.tables.columns import PRESETS

    names = [c.name for c in PRESETS["empirical"]]
    ids = gr.Textbox(label="Papers (ids, comma-separated: filled from a topic, an answer or a paper's page)", elem_id="pc-compare-ids")
    cols = gr.CheckboxGroup(choices=names, value=names, label="Columns (untick to remove)", elem_id="pc-compare-cols")
    with gr.Row():
        add = gr.Textbox(placeholder="Add a column: a name (Datasets) or a question", show_label=False, elem_id="pc-add-column", scale=3)
        add_btn = gr.Button("Add column", elem_id="pc-add-column-btn", scale=0)
        sort = gr.Dropdown(choices=["", *names], value="", label="Sort by", elem_id="pc-compare-sort", scale=1)
    build_btn = gr.Button("Build table", variant="primary", elem_id="pc-build-table", scale=0)
    out = gr.HTML(elem_id="pc-compare")
    tab = _CompareTab(ids, cols, sort, out)

    build = _table_handler(core)

    outputs = [out]
    build_btn.click(build, [ids, cols, sort], outputs, api_visibility="private", concurrency_limit=1)

    def add_column(text: str, cols_: list[str], choices_sort: str) -> tuple[Any, ...]:
        text = " ".join((text or "").split())
        if not text:
            return gr.update(), gr.update(), ""
        now = [*(cols_ or []), text] if text not in (cols_ or []) else list(cols_)
        return gr.update(choices=list(dict.fromkeys([*names, *now])), value=now), gr.update(choices=["", *now]), ""

    for ev in (add_btn.click, add.submit):
        ev(add_column, [add, cols, sort], [cols, sort, add], api_visibility="private").then(build, [ids, cols, sort], outputs, api_visibility="private")
    cols.input(build, [ids, cols, sort], outputs, api_visibility="private")
    sort.input(build, [ids, cols, sort], outputs, api_visibility="private")
    return tab


def _wire_compare(core: Assistant, shell: _Shell, topic: _TopicTab, paper: _PaperTab, cmp: _CompareTab) -> None:
    """Reaching Compare: a topic's (or collection's) papers, the papers a topic answer cites, a paper added."""
    import gradio as gr

    build = _table_handler(core)

    def of_topic(slug: str) -> tuple[Any, ...]:
        try:
            return ", ".join(core.comparison_papers(topic=slug, limit=10)), gr.update(selected="compare")
        except Exception as exc:
            return gr.update(), md_text(str(exc))

    def of_answer(hist: list[dict[str, Any]]) -> tuple[Any, ...]:
        ids = h.cited_ids(hist)
        if not ids:
            return gr.update(), gr.update()
        return ", ".join(ids), gr.update(selected="compare")

    def add_paper(pid: str, ids_: str) -> tuple[Any, ...]:
        have = [p.strip() for p in (ids_ or "").split(",") if p.strip()]
        if not pid:
            return gr.update(), "Open a paper first."
        return ", ".join(dict.fromkeys([*have, pid])), f"Added {md_text(pid)} to the comparison ({len(set(have) | {pid})} papers)."

    table_io = ([cmp.ids, cmp.cols, cmp.sort], [cmp.out])
    topic.compare_btn.click(of_topic, shell.topic_state, [cmp.ids, shell.tabs], api_visibility="private").then(build, *table_io, api_visibility="private")
    topic.compare_cited_btn.click(of_answer, topic.chat, [cmp.ids, shell.tabs], api_visibility="private").then(build, *table_io, api_visibility="private")
    paper.add_compare_btn.click(add_paper, [shell.paper_state, cmp.ids], [cmp.ids, shell.notice], api_visibility="private")


def _eval_tab() -> None:
    """The newest evaluation report, with a reload button."""
    import gradio as gr

    eval_md = gr.Markdown(h.latest_report(EVAL_RESULTS))
    gr.Button("Reload", scale=0).click(lambda: h.latest_report(EVAL_RESULTS), None, eval_md, api_visibility="private")


def _wire_navigation(core: Assistant, shell: _Shell, overview: Any, topic: _TopicTab, paper: _PaperTab, lists: Any, foryou: Any) -> None:
    """Hash links and keys (#topic/SLUG, #paper/ID, save/ID and rate/ID/up|down through the hidden nav box),
    Follow and Save."""
    import gradio as gr

    show_topic = _show_topic(core)

    def on_nav(value: str, slug: str, pid: str, now: str, filter_text: str, page: float, quote: str, zoom: float) -> tuple[Any, ...]:
        target = (value or "").split("|")[0]
        kind, _, rest = target.partition("/")
        msg = ""
        sel = gr.update()
        viewer: tuple[Any, ...] = (gr.update(),) * 4
        pick = gr.update(value=slug)
        chat: Any = gr.update()
        if kind == "topic" and core.topic_kind(rest) is not None:  # hand-written, discovered or a collection
            if rest != slug:  # another topic: its chat starts empty (the previous topic's turns are not its history)
                chat = []
            slug, sel = rest, gr.update(selected="topic")
            page = 1
            pick = gr.update(value=slug, choices=_topic_choices(core))
        elif kind == "paper" and rest:
            pid, sel = rest.split("/")[0], gr.update(selected="paper")
            tail = rest.split("/")[1:]
            cited = int(tail[0]) if tail and tail[0].isdigit() and len(tail[0]) <= 5 else 1
            # a citation's link carries its page; the clicked citation's quote comes in the hidden quote box
            viewer = show_page(core, pid, cited, zoom, {"page": cited, "quote": quote or ""})
        elif kind == "save" and rest:
            try:
                on = h.toggle_save(core, rest)
                msg = f"{'Saved' if on else 'Removed from saved'}: {md_text(rest)}"
            except Exception as exc:
                msg = md_text(str(exc))
        elif kind == "rate" and rest.count("/") >= 1:
            rated, _, how = rest.rpartition("/")
            try:
                msg = md_text(h.rate(core, rated, how))
            except Exception as exc:
                msg = md_text(str(exc))
        listed: Any = gr.update()
        mine: Any = gr.update()
        if kind == "paper":  # opening a paper (a citation click) changes nothing on the topic page or the lists
            head = rows = fbtn = gr.update()
        else:
            (head, rows, fbtn), listed = show_topic(slug, now, filter_text, page), h.lists_html(core)
            if kind in ("rate", "save"):  # the ranking learns from both
                mine = h.for_you_html(core)
        view = h.paper_view(core, pid) if pid else gr.update()
        return sel, slug, pick, chat, pid, head, rows, fbtn, view, listed, mine, msg, *viewer

    outputs = [
        shell.tabs, shell.topic_state, topic.pick, topic.chat, shell.paper_state, topic.head, topic.listing, topic.follow_btn, paper.html, lists,
        foryou, shell.notice, *paper.outputs(),
    ]
    inputs = [shell.nav, shell.topic_state, shell.paper_state, topic.now_box, topic.filt, topic.page_no, shell.quote, paper.zoom]
    # off the queue: a navigation (a citation click) is tens of ms of work, and the queue's join and event
    # stream added about 100-200 ms to every click
    shell.nav_btn.click(on_nav, inputs, outputs, api_visibility="private", queue=False)

    def on_follow(slug: str) -> tuple[Any, ...]:
        on = h.toggle_follow(core, slug)
        return gr.update(value="Unfollow" if on else "Follow"), h.lists_html(core), h.topics_overview(core)

    topic.follow_btn.click(on_follow, shell.topic_state, [topic.follow_btn, lists, overview], api_visibility="private")

    def on_save(pid: str) -> tuple[Any, ...]:
        if not pid:
            return gr.update(), gr.update(), "Open a paper first."
        on = h.toggle_save(core, pid)
        return h.paper_view(core, pid), h.lists_html(core), f"{'Saved' if on else 'Removed from saved'}."

    paper.save_btn.click(on_save, shell.paper_state, [paper.html, lists, shell.notice], api_visibility="private")


def _api(core: Assistant) -> None:
    """The endpoints scripts call: ask_topic, ask_paper (answer records) and upload_pdf."""
    import gradio as gr

    def ask_topic(question: str, topic: str) -> dict[str, Any]:
        """Ask about a topic; returns the answer record (as `paperchat ask --json`)."""
        return h.ask_json(core, question, Scope.for_topic(topic))

    def ask_paper(question: str, paper_id: str) -> dict[str, Any]:
        """Ask about one paper; returns the answer record (as `paperchat ask --json`)."""
        return h.ask_json(core, question, Scope.for_paper(paper_id))

    gr.api(ask_topic, api_name="ask_topic", concurrency_limit=4)
    gr.api(ask_paper, api_name="ask_paper", concurrency_limit=4)
    # scripts upload through this endpoint: a File input, so gradio_client sends the bytes
    api_file = gr.File(elem_classes="pc-hidden")
    api_btn = gr.Button("upload", elem_classes="pc-hidden")
    api_out = gr.JSON(elem_classes="pc-hidden")

    def upload_pdf(path: str | None) -> dict[str, Any]:
        pid, msg = h.upload_pdf(core, path)
        return {"paper_id": pid, "message": msg}

    api_btn.click(upload_pdf, api_file, api_out, api_name="upload_pdf", concurrency_limit=1)


def build_app(settings: Settings, core: Assistant | None = None) -> Any:
    """The Gradio Blocks of paperchat; the library and models are opened once, here (or passed in)."""
    import gradio as gr

    core = core or Assistant.open(settings)
    slugs = list(core.topic_names())
    first = slugs[0] if slugs else ""
    answerers = core.answerer_choices()

    with gr.Blocks(title="paperchat") as demo:
        gr.HTML(f"<style>{CSS}</style>", head=JS)
        gr.HTML('<div class="pc-brand"><h1>paperchat</h1><p>Topics, papers and answers with checked citations.</p></div>')
        nav = gr.Textbox(elem_id="pc-nav", elem_classes="pc-hidden", show_label=False, container=False)
        nav_btn = gr.Button("nav", elem_id="pc-nav-btn", elem_classes="pc-hidden")
        quote = gr.Textbox(elem_id="pc-quote", elem_classes="pc-hidden", show_label=False, container=False)
        topic_state = gr.State(first)
        paper_state = gr.State("")
        notice = gr.Markdown("")

        with gr.Tabs(selected="topics") as tabs:
            shell = _Shell(nav, nav_btn, tabs, topic_state, paper_state, notice, quote)
            with gr.Tab("All topics", id="topics"):
                _search, overview = _topics_tab(core)
            with gr.Tab("Topic", id="topic"):
                topic = _topic_tab(core, settings, shell, first, answerers)
            with gr.Tab("Paper", id="paper"):
                paper = _paper_tab(core, settings, shell, answerers)
            with gr.Tab("Upload a PDF", id="upload"):
                _upload_tab(core, settings, shell, paper)
            with gr.Tab("Compare", id="compare"):
                compare = _compare_tab(core)
            with gr.Tab("For you", id="foryou") as foryou_tab:
                foryou = _for_you_tab(core)
            foryou_tab.select(lambda: h.for_you_html(core), None, foryou, api_visibility="private")
            with gr.Tab("Following & Saved", id="lists") as lists_tab:
                lists = _lists_tab(core)
            # shown fresh each time: papers, follows and collections may have come since the page was built
            lists_tab.select(lambda: h.lists_html(core), None, lists, api_visibility="private")
            with gr.Tab("Evaluation", id="eval"):
                _eval_tab()

        _wire_navigation(core, shell, overview, topic, paper, lists, foryou)
        _wire_compare(core, shell, topic, paper, compare)
        _api(core)
        fill = [shell.topic_state, topic.now_box, topic.filt, topic.page_no]
        demo.load(_show_topic(core), fill, [topic.head, topic.listing, topic.follow_btn], api_visibility="private")
    demo.queue(default_concurrency_limit=4, max_size=64)
    demo.paperchat_core = core
    return demo
