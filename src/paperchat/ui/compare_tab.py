"""The Compare tab: papers by columns you choose (every cell a quote that opens the paper at its page), and the
ways to reach it from a topic, a topic answer's citations and a paper's page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paperchat.assistant import Assistant
from paperchat.ui import handlers as h
from paperchat.ui.render import md_text
from paperchat.ui.shell import PaperTab, Shell, TopicTab


def table_handler(core: Assistant) -> Any:
    """The handler that builds the Compare table from the ids box, the columns and the sort (with a progress bar)."""
    import gradio as gr

    def build(ids_: str, cols_: list[str], sort_: str, progress: Any = gr.Progress()) -> str:  # noqa: B008 - how Gradio passes a progress bar
        chosen = [p.strip() for p in (ids_ or "").split(",") if p.strip()]
        return h.compare_table(core, chosen, list(cols_ or []), sort_ or "", progress=progress)

    return build


@dataclass
class CompareTab:
    """The Compare tab's table inputs and output, which its wiring from the other tabs fills and rebuilds."""

    ids: Any
    cols: Any
    sort: Any
    out: Any


def compare_tab(core: Assistant) -> CompareTab:
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
    tab = CompareTab(ids, cols, sort, out)

    build = table_handler(core)

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


def wire_compare(core: Assistant, shell: Shell, topic: TopicTab, paper: PaperTab, cmp: CompareTab) -> None:
    """Reaching Compare: a topic's (or collection's) papers, the papers a topic answer cites, a paper added."""
    import gradio as gr

    build = table_handler(core)

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
