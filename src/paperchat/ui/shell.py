"""What the app's tabs share: the shell (the hidden navigation box, the tab set, the open topic and paper, a
notice), the records of the Topic and Paper tabs' components that other tabs wire to, and the handlers more than
one tab calls (`show_page`, `show_topic_handler`, `topic_choices`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paperchat.assistant import Assistant
from paperchat.ui import handlers as h


@dataclass
class Shell:
    """What every tab shares: the hidden navigation box, the tab set, the open topic and paper, a notice."""

    nav: Any
    nav_btn: Any
    tabs: Any
    topic_state: Any
    paper_state: Any
    notice: Any
    quote: Any  # hidden: the quote of the citation clicked last (set by the page's script with the nav box)


@dataclass
class TopicTab:
    """The Topic tab's components that the navigation, Compare and the first load reach."""

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
class PaperTab:
    """The Paper tab's components that the navigation, Upload and Compare reach (`outputs`: the viewer's)."""

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


def topic_choices(core: Assistant) -> list[tuple[str, str]]:
    """(name, slug) of every topic a page can show (see `Assistant.all_topic_names`)."""
    return [(n, s) for s, n in core.all_topic_names().items()]


def show_topic_handler(core: Assistant) -> Any:
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
