"""build_app(settings) -> gr.Blocks: All topics, Topic page (momentum, latest papers, related topics,
"Ask about this topic"), Paper view with its PDF's pages beside AskPDF, PDF upload, Compare, For you (new papers
ranked by the ratings), Following & Saved, Evaluation.

One builder per tab makes its components and wires what happens inside it (`tabs`, `compare_tab`);
`navigation.wire_navigation` connects the tabs (hash links, J/K/S/M/N keys, follow, save and rate, citation clicks
that open the cited page with the quote highlighted), `shell` holds what they share, and `_api` here adds the
endpoints scripts call.
"""

from __future__ import annotations

from typing import Any

from paperchat.assistant import Assistant
from paperchat.settings import Settings
from paperchat.types import Scope
from paperchat.ui import handlers as h
from paperchat.ui.assets import CSS, JS
from paperchat.ui.compare_tab import compare_tab, wire_compare
from paperchat.ui.navigation import wire_navigation
from paperchat.ui.shell import Shell, show_page, show_topic_handler
from paperchat.ui.tabs import eval_tab, for_you_tab, lists_tab, paper_tab, topic_tab, topics_tab, upload_tab

__all__ = ["build_app", "show_page"]


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
            shell = Shell(nav, nav_btn, tabs, topic_state, paper_state, notice, quote)
            with gr.Tab("All topics", id="topics"):
                _search, overview = topics_tab(core)
            with gr.Tab("Topic", id="topic"):
                topic = topic_tab(core, settings, shell, first, answerers)
            with gr.Tab("Paper", id="paper"):
                paper = paper_tab(core, settings, shell, answerers)
            with gr.Tab("Upload a PDF", id="upload"):
                upload_tab(core, settings, shell, paper)
            with gr.Tab("Compare", id="compare"):
                compare = compare_tab(core)
            with gr.Tab("For you", id="foryou") as foryou_page:
                foryou = for_you_tab(core)
            foryou_page.select(lambda: h.for_you_html(core), None, foryou, api_visibility="private")
            with gr.Tab("Following & Saved", id="lists") as lists_page:
                lists = lists_tab(core)
            # shown fresh each time: papers, follows and collections may have come since the page was built
            lists_page.select(lambda: h.lists_html(core), None, lists, api_visibility="private")
            with gr.Tab("Evaluation", id="eval"):
                eval_tab()

        wire_navigation(core, shell, overview, topic, paper, lists, foryou)
        wire_compare(core, shell, topic, paper, compare)
        _api(core)
        fill = [shell.topic_state, topic.now_box, topic.filt, topic.page_no]
        demo.load(show_topic_handler(core), fill, [topic.head, topic.listing, topic.follow_btn], api_visibility="private")
    demo.queue(default_concurrency_limit=4, max_size=64)
    demo.paperchat_core = core
    return demo
