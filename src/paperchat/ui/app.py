"""build_app(settings) -> gr.Blocks: All topics, Topic page (momentum, latest papers, related topics,
"Ask about this topic"), Paper view with AskPDF, PDF upload, Following & Saved, Evaluation."""

from __future__ import annotations

from typing import Any

from paperchat.settings import Settings
from paperchat.types import Scope
from paperchat.ui import handlers as h
from paperchat.ui.assets import CSS, JS
from paperchat.ui.render import md_text


def build_app(settings: Settings, core: h.Core | None = None) -> Any:
    """The Gradio Blocks of paperchat; the library and models are opened once, here."""
    import gradio as gr

    core = core or h.Core.open(settings)
    names = {t.slug: t.name for t in core.library.topics.topics}
    first = core.library.topics.topics[0].slug if core.library.topics.topics else ""
    answerers = ["extractive", "local"] + ([settings.answerer] if settings.answerer.startswith("openai:") else [])

    with gr.Blocks(title="paperchat") as demo:
        gr.HTML(f"<style>{CSS}</style>", head=JS)
        gr.HTML('<div class="pc-brand"><h1>paperchat</h1><p>Topics, papers and answers with checked citations.</p></div>')
        nav = gr.Textbox(elem_id="pc-nav", elem_classes="pc-hidden", show_label=False, container=False)
        nav_btn = gr.Button("nav", elem_id="pc-nav-btn", elem_classes="pc-hidden")
        topic_state = gr.State(first)
        paper_state = gr.State("")
        notice = gr.Markdown("")

        with gr.Tabs(selected="topics") as tabs:
            with gr.Tab("All topics", id="topics"):
                search = gr.Textbox(placeholder="Search topics by name", show_label=False)
                overview = gr.HTML(h.topics_overview(core))
            with gr.Tab("Topic", id="topic"):
                topic_pick = gr.Dropdown(choices=[(n, s) for s, n in names.items()], value=first, label="Topic")
                with gr.Row():
                    follow_btn = gr.Button("Follow", variant="secondary", scale=0)
                    now_box = gr.Textbox(label="Now (YYYY-MM-DD; empty = newest date in the corpus)", scale=1)
                topic_head = gr.HTML()
                with gr.Row():
                    with gr.Column(scale=3):
                        gr.HTML('<h3>Latest papers</h3><p class="pc-keys">Keys: J / K move, Enter opens, S saves.</p>')
                        with gr.Row():
                            filt = gr.Textbox(placeholder="Filter by title or author", show_label=False, scale=3)
                            page_no = gr.Number(value=1, precision=0, minimum=1, label="Page", scale=1)
                        topic_list = gr.HTML()
                    with gr.Column(scale=2):
                        gr.HTML("<h3>Ask about this topic</h3>")
                        topic_chat = gr.Chatbot(height=420, show_label=False, sanitize_html=True)
                        topic_q = gr.Textbox(placeholder="Ask about this topic ...", show_label=False)
                        with gr.Accordion("Answer settings", open=False):
                            t_answerer = gr.Dropdown(answerers, value=settings.answerer, label="Answerer")
                            t_k = gr.Slider(3, 20, value=settings.retrieval.k, step=1, label="Sources")
                            t_since = gr.Textbox(label="Only papers since (YYYY-MM-DD)")
                        topic_sources = gr.HTML()
            with gr.Tab("Paper", id="paper"):
                paper_html = gr.HTML('<p class="pc-empty">Open a paper from a topic page.</p>')
                save_btn = gr.Button("Save", scale=0)
                with gr.Accordion("Add this paper's PDF", open=False):
                    attach = gr.File(file_types=[".pdf"], label="PDF of this paper")
                    fetch_btn = gr.Button("Download from arXiv", scale=0)
                    attach_msg = gr.Markdown()
                gr.HTML("<h3>AskPDF</h3>")
                paper_chat = gr.Chatbot(height=380, show_label=False, sanitize_html=True)
                paper_q = gr.Textbox(placeholder="Ask about this paper ...", show_label=False)
                p_answerer = gr.Dropdown(answerers, value=settings.answerer, label="Answerer")
                paper_sources = gr.HTML()
            with gr.Tab("Upload a PDF", id="upload"):
                up = gr.File(file_types=[".pdf"], label=f"Drop a PDF (up to {settings.max_pdf_mb:g} MB)")
                up_msg = gr.Markdown()
            with gr.Tab("Following & Saved", id="lists"):
                lists = gr.HTML(h.lists_html(core))
            with gr.Tab("Evaluation", id="eval"):
                from paperchat.settings import PROJECT_ROOT

                eval_md = gr.Markdown(h.latest_report(PROJECT_ROOT / "eval" / "results"))
                gr.Button("Reload", scale=0).click(lambda: h.latest_report(PROJECT_ROOT / "eval" / "results"), None, eval_md, api_visibility="private")

        # -- wiring -----------------------------------------------------------------------------
        def show_topic(slug: str, now: str, filter_text: str, page: float) -> tuple[Any, ...]:
            try:
                head = h.topic_header(core, slug, now or None)
                rows, _total, _pages = h.topic_papers(core, slug, int(page or 1), filter_text or "")
                return head["html"], rows, gr.update(value="Unfollow" if head["following"] else "Follow")
            except Exception as exc:
                return h._error(exc), "", gr.update()

        def on_nav(value: str, slug: str, pid: str, now: str, filter_text: str, page: float) -> tuple[Any, ...]:
            target = (value or "").split("|")[0]
            kind, _, rest = target.partition("/")
            msg = ""
            sel = gr.update()
            if kind == "topic" and rest in names:
                slug, sel = rest, gr.update(selected="topic")
                page = 1
            elif kind == "paper" and rest:
                pid, sel = rest.split("/")[0], gr.update(selected="paper")
            elif kind == "save" and rest:
                try:
                    on = h.toggle_save(core, rest)
                    msg = f"{'Saved' if on else 'Removed from saved'}: {md_text(rest)}"
                except Exception as exc:
                    msg = md_text(str(exc))
            head, rows, fbtn = show_topic(slug, now, filter_text, page)
            paper = h.paper_view(core, pid) if pid else gr.update()
            return sel, slug, gr.update(value=slug), pid, head, rows, fbtn, paper, h.lists_html(core), msg

        nav_outputs = [tabs, topic_state, topic_pick, paper_state, topic_head, topic_list, follow_btn, paper_html, lists, notice]
        nav_btn.click(on_nav, [nav, topic_state, paper_state, now_box, filt, page_no], nav_outputs, api_visibility="private")
        search.change(lambda q: h.topics_overview(core, q or ""), search, overview, api_visibility="private")
        topic_pick.change(lambda s: (s, []), topic_pick, [topic_state, topic_chat], api_visibility="private").then(
            show_topic, [topic_pick, now_box, filt, page_no], [topic_head, topic_list, follow_btn], api_visibility="private"
        )
        for comp in (now_box, filt):
            comp.submit(show_topic, [topic_state, now_box, filt, page_no], [topic_head, topic_list, follow_btn], api_visibility="private")
        page_no.change(show_topic, [topic_state, now_box, filt, page_no], [topic_head, topic_list, follow_btn], api_visibility="private")

        def on_follow(slug: str) -> tuple[Any, ...]:
            on = h.toggle_follow(core, slug)
            return gr.update(value="Unfollow" if on else "Follow"), h.lists_html(core), h.topics_overview(core)

        follow_btn.click(on_follow, topic_state, [follow_btn, lists, overview], api_visibility="private")

        def on_save(pid: str) -> tuple[Any, ...]:
            if not pid:
                return gr.update(), gr.update(), "Open a paper first."
            on = h.toggle_save(core, pid)
            return h.paper_view(core, pid), h.lists_html(core), f"{'Saved' if on else 'Removed from saved'}."

        save_btn.click(on_save, paper_state, [paper_html, lists, notice], api_visibility="private")

        def topic_turn(q: str, hist: list[dict[str, Any]], slug: str, k: float, since: str, answerer: str):  # type: ignore[no-untyped-def]
            for msgs, src in h.chat_stream(core, q, "topic", slug, hist or [], int(k), since or None, answerer):
                yield msgs, src, ""

        def paper_turn(q: str, hist: list[dict[str, Any]], pid: str, answerer: str):  # type: ignore[no-untyped-def]
            for msgs, src in h.chat_stream(core, q, "paper", pid, hist or [], None, None, answerer):
                yield msgs, src, ""

        topic_q.submit(topic_turn, [topic_q, topic_chat, topic_state, t_k, t_since, t_answerer], [topic_chat, topic_sources, topic_q], api_visibility="private", concurrency_limit=4)
        paper_q.submit(paper_turn, [paper_q, paper_chat, paper_state, p_answerer], [paper_chat, paper_sources, paper_q], api_visibility="private", concurrency_limit=4)

        def on_upload(path: str | None, progress: Any = gr.Progress()) -> tuple[Any, ...]:
            progress(0.1, desc="reading and embedding the PDF")
            pid, msg = h.upload_pdf(core, path)
            progress(1.0)
            if pid is None:
                return gr.update(), gr.update(), gr.update(), f"**{md_text(msg)}**", []
            return gr.update(selected="paper"), pid, h.paper_view(core, pid), md_text(msg), []

        up.upload(on_upload, up, [tabs, paper_state, paper_html, up_msg, paper_chat], api_visibility="private", concurrency_limit=1)

        def on_attach(path: str | None, pid: str) -> tuple[Any, ...]:
            if not pid:
                return gr.update(), "Open a paper first."
            new_pid, msg = h.upload_pdf(core, path, paper_id=pid)
            return (h.paper_view(core, pid) if new_pid else gr.update()), md_text(msg)

        def on_fetch(pid: str) -> tuple[Any, ...]:
            new_pid, msg = h.download_arxiv_pdf(core, pid)
            return (h.paper_view(core, pid) if new_pid else gr.update()), md_text(msg)

        fetch_btn.click(on_fetch, paper_state, [paper_html, attach_msg], api_visibility="private", concurrency_limit=1)
        attach.upload(on_attach, [attach, paper_state], [paper_html, attach_msg], api_visibility="private", concurrency_limit=1)

        def ask_topic(question: str, topic: str) -> dict[str, Any]:
            """Ask about a topic; returns the answer record (as `paperchat ask --json`)."""
            return h.ask_json(core, question, Scope.for_topic(topic))

        def ask_paper(question: str, paper_id: str) -> dict[str, Any]:
            """Ask about one paper; returns the answer record (as `paperchat ask --json`)."""
            return h.ask_json(core, question, Scope.for_paper(paper_id))

        gr.api(ask_topic, api_name="ask_topic", concurrency_limit=4)
        gr.api(ask_paper, api_name="ask_paper", concurrency_limit=4)
        demo.load(show_topic, [topic_state, now_box, filt, page_no], [topic_head, topic_list, follow_btn], api_visibility="private")
        # scripts upload through this endpoint: a File input, so gradio_client sends the bytes
        api_file = gr.File(elem_classes="pc-hidden")
        api_btn = gr.Button("upload", elem_classes="pc-hidden")
        api_out = gr.JSON(elem_classes="pc-hidden")

        def upload_pdf(path: str | None) -> dict[str, Any]:
            pid, msg = h.upload_pdf(core, path)
            return {"paper_id": pid, "message": msg}

        api_btn.click(upload_pdf, api_file, api_out, api_name="upload_pdf", concurrency_limit=1)
    demo.queue(default_concurrency_limit=4, max_size=64)
    demo.paperchat_core = core  # type: ignore[attr-defined]
    return demo


def exposure_auth(settings: Settings, insecure: bool = False) -> tuple[str, str] | None:
    """Gradio auth from PAPERCHAT_AUTH; serving beyond loopback without it is refused unless insecure."""
    from paperchat.errors import ConfigError

    auth = None
    if settings.auth:
        user, _, pw = settings.auth.partition(":")
        if not user or not pw:
            raise ConfigError("PAPERCHAT_AUTH must be user:password", "for example PAPERCHAT_AUTH=alice:s3cret")
        auth = (user, pw)
    if settings.host not in ("127.0.0.1", "localhost", "::1") and auth is None and not insecure:
        raise ConfigError(
            f"refusing to serve on {settings.host} without a password",
            "set PAPERCHAT_AUTH=user:password, or pass --insecure if the network is trusted",
        )
    return auth


def allowed_paths(settings: Settings) -> list[str]:
    """The only folder the app serves files from: its own `<sha256>.pdf` copies (never a PDF's source folder)."""
    from paperchat.ingestion.pdfstore import store_dir

    folder = store_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    return [str(folder.resolve())]


def launch_options(settings: Settings) -> dict[str, Any]:
    """What `demo.launch` needs beyond host and port: the one served folder, the upload size and a cap on
    every other request body (Gradio 6.31 has no request-size option of its own; `max_file_size` only
    limits uploaded files, so a 100 MB question would otherwise be read and parsed whole)."""
    from starlette.middleware import Middleware

    from paperchat.ui.limits import BodyLimit, request_limit_bytes

    return {
        "allowed_paths": allowed_paths(settings),
        "max_file_size": f"{int(settings.max_pdf_mb)}mb",
        "app_kwargs": {"middleware": [Middleware(BodyLimit, max_bytes=request_limit_bytes(settings))]},
    }


def serve(settings: Settings, insecure: bool = False, demo_corpus: bool = True) -> None:
    """Open the library (ingesting the bundled demo corpus on first start) and launch the app on
    settings.host/port (GRADIO_SERVER_PORT honoured); other hosts need PAPERCHAT_AUTH unless insecure."""
    import os

    auth = exposure_auth(settings, insecure)
    port = settings.port or int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    core = h.Core.open(settings)
    core.library.sync_topics()  # opening writes nothing: apply changed topic rules here, once per start
    if demo_corpus:
        from paperchat.demo import ensure_demo

        report = ensure_demo(core.library, show_progress=True)
        if report is not None:
            print(f"demo corpus: {report.papers} papers, {report.chunks_added} chunks added in {report.seconds:.1f} s")
            core.library.ready_lexical()
    from paperchat.ingestion.pdfstore import adopt_legacy_pdfs

    adopted, unlinked = adopt_legacy_pdfs(core.library)  # stores made before the app kept its own copies
    if adopted or unlinked:
        print(f"PDF copies: {adopted} copied into {settings.uploads_dir}; {unlinked} not found or changed (not linked)")
    demo = build_app(settings, core)
    # the app serves its own PDF copies and nothing else (not the folders the PDFs came from)
    demo.launch(server_name=settings.host, server_port=port, auth=auth, footer_links=["api"], **launch_options(settings))
