"""What connects the tabs: hash links and keys through the hidden nav box (open a topic or a paper, a citation
click that opens the cited page with its quote highlighted, save and rate), Follow and Save."""

from __future__ import annotations

from typing import Any

from paperchat.assistant import Assistant
from paperchat.ui import handlers as h
from paperchat.ui.render import md_text
from paperchat.ui.shell import PaperTab, Shell, TopicTab, show_page, show_topic_handler, topic_choices


def wire_navigation(core: Assistant, shell: Shell, overview: Any, topic: TopicTab, paper: PaperTab, lists: Any, foryou: Any) -> None:
    """Hash links and keys (#topic/SLUG, #paper/ID, save/ID and rate/ID/up|down through the hidden nav box),
    Follow and Save."""
    import gradio as gr

    show_topic = show_topic_handler(core)

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
            pick = gr.update(value=slug, choices=topic_choices(core))
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
