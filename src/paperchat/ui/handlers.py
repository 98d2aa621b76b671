"""Page handlers: plain functions over the `Assistant` (the core facade), returning HTML/Markdown/records.

They never raise to the page: errors come back as a message in words. HTML comes from the templates in
`ui/templates` (see `render`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant, PdfResult
from paperchat.dates import user_day
from paperchat.errors import PaperchatError
from paperchat.types import Answer, Scope
from paperchat.ui.render import abs_link, answer_markdown, md_plain, md_text, render, sources_panel, weekly_bars

PAGE_SIZE = 20

Core = Assistant  # what the app holds for its whole life (the name older callers and tests use)


def _error(exc: Exception) -> str:
    msg = str(exc) if isinstance(exc, PaperchatError) else f"Something went wrong ({type(exc).__name__}). Please try again."
    return render("error.html", message=msg)


# -- topics -------------------------------------------------------------------------------------


def topics_overview(core: Assistant, query: str = "") -> str:
    """All topics with paper counts and momentum; filtered by name."""
    return render("topics_overview.html", topics=core.topic_summaries(query))


def topic_header(core: Assistant, slug: str, now: str | None = None) -> dict[str, Any]:
    """Name, description, momentum (sentence, figures, chart) and related topics of a topic."""
    page = core.topic_page(slug, now=user_day(now))
    html = render("topic_head.html", page=page, chart=weekly_bars(page.momentum))
    return {"html": html, "momentum": page.momentum, "following": page.following, "total": page.total}


def topic_papers(core: Assistant, slug: str, page: int = 1, filter_text: str = "") -> tuple[str, int, int]:
    """One page of a topic's papers, newest first: (html, total matching, number of pages)."""
    listing = core.topic_papers(slug, page, filter_text, PAGE_SIZE)
    saved = {p.id for p in core.saved()}
    tags = core.paper_tags([p.id for p in listing.papers])
    return render("paper_list.html", listing=listing, names=core.topic_names(), saved=saved, tags=tags, ratings=core.ratings()), listing.total, listing.pages


def toggle_follow(core: Assistant, slug: str) -> bool:
    """Follow or unfollow; returns whether the topic is followed now."""
    return core.toggle_follow(slug)


def toggle_save(core: Assistant, paper_id: str) -> bool:
    """Save or unsave a paper; returns whether it is saved now (PaperchatError when it is unknown)."""
    return core.toggle_save(paper_id)


def lists_html(core: Assistant) -> str:
    """The Following and Saved lists, with what is new in the followed topics since the last visit (the app
    only peeks: `paperchat digest` moves the last visit)."""
    saved = core.saved()
    news = core.digest(peek=True)
    tags = core.paper_tags([p.id for p in saved] + [p.id for t in news.topics for p in t.papers[:10]])
    return render("lists.html", followed=core.followed(), names=core.all_topic_names(), saved=saved, saved_ids={p.id for p in saved},
                  digest=news, collections=core.collections(), tags=tags, ratings=core.ratings())


def rate(core: Assistant, paper_id: str, how: str) -> str:
    """Rate a paper from a link or key: 'up' or 'down'; the same rating again clears it. Returns what happened."""
    want = 1 if how == "up" else -1
    value = 0 if core.ratings().get(paper_id) == want else want
    core.rate(paper_id, value)
    return {1: "More like this", -1: "Not interested", 0: "Rating cleared"}[value] + f": {paper_id}"


def for_you_html(core: Assistant, k: int = 30) -> str:
    """The For you list: new papers ranked by the ratings, each with its reasons."""
    try:
        feed = core.for_you(k=k)
    except PaperchatError as exc:
        return _error(exc)
    papers = [it.paper for it in feed.items]
    return render("for_you.html", feed=feed, papers=papers, names=core.topic_names(), saved={p.id for p in core.saved()},
                  tags=core.paper_tags([p.id for p in papers]), ratings=core.ratings(), reasons={it.paper.id: it.reasons for it in feed.items})


# -- comparison tables ------------------------------------------------------------------------------


def cited_ids(history: list[dict[str, Any]]) -> list[str]:
    """The papers the last answer of a chat cites (its #paper/ID links), in order."""
    import re

    for m in reversed(history or []):
        if m.get("role") == "assistant" and isinstance(m.get("content"), str):
            return list(dict.fromkeys(re.findall(r"#paper/([^/)\s\"']+)", m["content"])))
    return []


def compare_table(core: Assistant, ids: list[str], columns: list[str], sort: str = "", progress: Any = None) -> str:
    """The Compare view's html: the table, with CSV and Markdown download links; an error in words when it
    cannot be built."""
    from paperchat.tables.columns import column_of

    try:
        cols = [column_of(c) for c in columns]
        table = core.comparison(ids, cols, (lambda d, t: progress(d / t, desc=f"cells {d} of {t}")) if progress else None)
    except PaperchatError as exc:
        return _error(exc)
    fresh = sum(1 for c in table.cells.values() if not c.cached)
    return render("compare.html", table=table, rows=table.sorted_by(sort if sort in {c.name for c in cols} else None),
                  fresh=fresh, cached=len(table.cells) - fresh, csv=table.to_csv(), markdown=table.to_markdown() + "\n")


def mark_seen(core: Assistant) -> str:
    """Move the last visit to now (as `paperchat digest` does) and show the lists again: nothing is new."""
    core.digest()
    return lists_html(core)


# -- papers -------------------------------------------------------------------------------------


def paper_view(core: Assistant, paper_id: str) -> str:
    """The paper page: title, authors, topics, links (arXiv or the stored URL when http(s), the local PDF
    copy) and abstract."""
    p = core.paper(paper_id)
    if p is None:
        return _error(PaperchatError(f"paper {paper_id} is not in the library"))
    return render(
        "paper.html",
        p=p,
        names=core.topic_names(),
        tags=core.paper_tags([paper_id]).get(paper_id, []),
        saved=core.is_saved(paper_id),
        rating=core.ratings().get(paper_id, 0),
        abs_url=abs_link(p),  # http(s) only: a stored javascript: URL never becomes a link
        local_pdf=core.local_pdf(p),  # the app's own copy, the only PDFs it serves
    )


def viewer(core: Assistant, paper_id: str, page: int = 1, quote: str = "", zoom: float = 1.0) -> tuple[str, int, bool]:
    """The PDF viewer beside AskPDF: (html, page shown, whether the paper has a stored PDF). The page image
    comes from the app's own stored copy; `quote` is highlighted where it can be placed on that page."""
    if not paper_id:
        return "", 1, False
    try:
        view = core.page_view(paper_id, page, quote, zoom)
    except PaperchatError as exc:
        return _error(exc), 1, False
    if view is None:
        return render("viewer.html", view=None, boxes=[]), 1, False
    return render("viewer.html", view=view, boxes=view.boxes_pct()), view.page, True


def _pdf_message(res: PdfResult) -> tuple[str | None, str]:
    p = res.paper
    if res.outcome == "failed" or p is None:
        return None, f"Could not read this PDF: {res.error}"
    if res.outcome == "known":
        return p.id, f"Already in the library: {p.title}"
    if res.outcome == "had_pdf":
        return p.id, "This paper's PDF is already ingested."
    return p.id, f"Ingested {p.title}: {res.chunks_added} new chunks in {res.seconds:.1f} s."


def upload_pdf(core: Assistant, file_path: str | None, paper_id: str | None = None) -> tuple[str | None, str]:
    """Ingest an uploaded PDF (stored by content hash, never by its name); returns (paper id, message).

    A PDF that fails to ingest leaves no stored copy behind.
    """
    if not file_path:
        return None, "Choose a PDF first."
    try:
        return _pdf_message(core.add_pdf(Path(file_path), paper_id))
    except PaperchatError as exc:
        return None, str(exc)


def download_arxiv_pdf(core: Assistant, paper_id: str) -> tuple[str | None, str]:
    """Fetch the paper's PDF from arXiv and ingest it for this paper; offline gives a clear message."""
    if not paper_id:
        return None, "Open a paper first."
    try:
        return _pdf_message(core.fetch_arxiv_pdf(paper_id))
    except PaperchatError as exc:
        return None, str(exc)


# -- chat ---------------------------------------------------------------------------------------


def make_scope(core: Assistant, kind: str, target: str, since: str | None = None) -> Scope:
    """The scope of a chat: one paper, or a topic of any kind (a collection, a discovered topic) from a date
    typed as YYYY-MM-DD."""
    if kind == "paper":
        return Scope.for_paper(target)
    return core.chat_scope(target, since=user_day(since))


def chat_stream(
    core: Assistant, question: str, kind: str, target: str, history: list[dict[str, Any]], k: int | None = None,
    since: str | None = None, answerer: str | None = None,
) -> Iterator[tuple[list[dict[str, Any]], str]]:
    """Stream a chat turn: yields (chat messages, sources panel html). Every message is Markdown-escaped."""
    question = (question or "").strip()
    if not question:
        yield history, ""
        return
    try:  # before the question is echoed anywhere: a huge one is refused, not shown
        core.check_question(question)
    except PaperchatError as exc:
        yield history + [{"role": "assistant", "content": md_text(str(exc))}], ""
        return
    if not target:
        yield history + [{"role": "assistant", "content": "Open a topic or a paper first."}], ""
        return
    msgs = history + [{"role": "user", "content": md_text(question)}, {"role": "assistant", "content": ""}]
    shown_past = [c for m in history if m.get("role") == "user" and isinstance(c := m.get("content"), str)]
    past = [q for q in map(md_plain, shown_past) if len(q) <= core.settings.max_question_chars]
    try:
        text = ""
        for item in core.stream(question, make_scope(core, kind, target, since), past, k, answerer):
            if isinstance(item, Answer):
                msgs[-1]["content"] = answer_markdown(item)
                yield msgs, sources_panel(item, *core.answer_bibtex(item))
                return
            text += item
            msgs[-1]["content"] = md_text(text)
            yield msgs, ""
    except Exception as exc:  # the page never shows a stack trace
        msg = str(exc) if isinstance(exc, PaperchatError) else f"Something went wrong ({type(exc).__name__}). Please try again."
        msgs[-1]["content"] = md_text(msg)
        yield msgs, ""


def ask_json(core: Assistant, question: str, scope: Scope) -> dict[str, Any]:
    """The answer record as JSON (the same shape as `paperchat ask --json`); errors as {"error": message}."""
    try:
        return core.place_citations(core.ask(question, scope)).to_json()  # PDF citations with their boxes
    except PaperchatError as exc:
        return {"error": str(exc)}


def latest_report(results_root: Path) -> str:
    """The newest evaluation report (Markdown) under the results folder, or how to make one."""
    runs = sorted(results_root.glob("*/summary.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    if not runs:
        return f"No evaluation run yet. Run `paperchat eval run --set SET.jsonl --out {results_root}/NAME`."
    folder = runs[0].parent
    md = folder / "report.md"
    if not md.exists():
        from paperchat.evaluation.report import write_report

        write_report(folder)
    return f"Latest run: `{folder}`\n\n" + md.read_text(encoding="utf-8")
