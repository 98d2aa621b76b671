"""The builders of the app's tabs but Compare: All topics, Topic, Paper (the PDF viewer beside AskPDF), Upload a
PDF, Following & Saved, For you and Evaluation; each makes its components and wires what happens inside it."""

from __future__ import annotations

from typing import Any

from paperchat.assistant import ZOOMS, Assistant
from paperchat.settings import PROJECT_ROOT, Settings
from paperchat.ui import handlers as h
from paperchat.ui.render import md_text
from paperchat.ui.shell import PaperTab, Shell, TopicTab, show_page, show_topic_handler, topic_choices

EVAL_RESULTS = PROJECT_ROOT / "eval" / "results"


def topics_tab(core: Assistant) -> tuple[Any, Any]:
    """All topics: a search box and the topic cards. Returns (search box, cards)."""
    import gradio as gr

    search = gr.Textbox(placeholder="Search topics by name", show_label=False)
    overview = gr.HTML(h.topics_overview(core))
    search.change(lambda q: h.topics_overview(core, q or ""), search, overview, api_visibility="private")
    return search, overview


def topic_tab(core: Assistant, settings: Settings, shell: Shell, first: str, answerers: list[str]) -> TopicTab:
    """One topic: momentum and related topics, its latest papers (paged, filtered) and its chat."""
    import gradio as gr

    # every kind of topic: hand-written, the collections, the discovered ones (custom values: a collection
    # imported or a discovery run while the app runs is reached by its link before the choices are refreshed)
    pick = gr.Dropdown(choices=topic_choices(core), value=first, label="Topic", allow_custom_value=True)
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

    show_topic = show_topic_handler(core)
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
    return TopicTab(pick, follow_btn, compare_btn, compare_cited_btn, now_box, head, filt, page_no, listing, chat)


def paper_tab(core: Assistant, settings: Settings, shell: Shell, answerers: list[str]) -> PaperTab:
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
    tab = PaperTab(html, save_btn, add_compare_btn, chat, viewer_col, view, page_no, zoom, cite)

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


def upload_tab(core: Assistant, settings: Settings, shell: Shell, paper: PaperTab) -> None:
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


def lists_tab(core: Assistant) -> Any:
    """Following (what is new since the last visit, "Mark as seen"), the collections and the saved papers."""
    import gradio as gr

    seen = gr.Button("Mark as seen", elem_id="pc-mark-seen", scale=0)
    lists = gr.HTML(h.lists_html(core))
    # moves the last visit to now, as `paperchat digest` does; the tab itself only peeks
    seen.click(lambda: h.mark_seen(core), None, lists, api_visibility="private")
    return lists


def for_you_tab(core: Assistant) -> Any:
    """For you: the new papers ranked by "more like this" / "not interested", saves and follows, with reasons."""
    import gradio as gr

    gr.HTML('<p class="pc-keys">Keys: J / K move, Enter opens, S saves, M more like this, N not interested.</p>')
    refresh = gr.Button("Refresh", elem_id="pc-foryou-refresh", scale=0)
    feed = gr.HTML(elem_id="pc-foryou")
    refresh.click(lambda: h.for_you_html(core), None, feed, api_visibility="private")
    return feed


def eval_tab() -> None:
    """The newest evaluation report, with a reload button."""
    import gradio as gr

    eval_md = gr.Markdown(h.latest_report(EVAL_RESULTS))
    gr.Button("Reload", scale=0).click(lambda: h.latest_report(EVAL_RESULTS), None, eval_md, api_visibility="private")
