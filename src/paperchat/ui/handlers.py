"""Page handlers: plain functions over a `Core` (library + QA), returning HTML/Markdown/records.

They never raise to the page: errors come back as a message in words.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from paperchat.dates import user_day
from paperchat.errors import PaperchatError
from paperchat.ingestion.pdf import check_pdf_file, sha256_file
from paperchat.ingestion.pdfstore import store_pdf, stored_copy
from paperchat.ingestion.pipeline import Ingester
from paperchat.library import Library
from paperchat.qa import QA, check_question
from paperchat.settings import Settings
from paperchat.topics import momentum
from paperchat.types import Answer, Scope
from paperchat.ui.render import abs_link, answer_markdown, esc, md_plain, md_text, paper_rows, shown, sources_panel, topic_link, weekly_chart

PAGE_SIZE = 20


@dataclass
class Core:
    """What the app holds for its whole life: loaded once at start."""

    settings: Settings
    library: Library
    qa: QA

    @classmethod
    def open(cls, settings: Settings) -> Core:
        lib = Library(settings)
        lib.ready_lexical()
        lib.embedder.embed_query("warm up")  # load the model now, not on the first question
        return cls(settings, lib, QA(lib))


def _error(exc: Exception) -> str:
    msg = str(exc) if isinstance(exc, PaperchatError) else f"Something went wrong ({type(exc).__name__}). Please try again."
    return f'<div class="pc-error">{esc(msg)}</div>'


# -- topics -------------------------------------------------------------------------------------


def topics_overview(core: Core, query: str = "") -> str:
    """All topics with paper counts and momentum; filtered by name."""
    lib = core.library
    counts = lib.catalog.topic_counts()
    weekly = lib.weekly_counts()
    followed = set(lib.catalog.followed())
    cards = []
    for t in lib.topics.topics:
        if query and query.lower() not in (t.name + " " + t.slug).lower():
            continue
        m = momentum(lib.catalog.topic_dates(t.slug), weekly)
        star = ' <span class="pc-following">following</span>' if t.slug in followed else ""
        cards.append(
            f'<div class="pc-card"><h3>{topic_link(t.slug, t.name)}{star}</h3>'
            f'<p class="pc-count">{counts.get(t.slug, 0):,} papers</p><p class="pc-momentum">{esc(m.sentence())}</p></div>'
        )
    return '<div class="pc-cards">' + "".join(cards) + "</div>" if cards else '<p class="pc-empty">No topic matches.</p>'


def topic_header(core: Core, slug: str, now: str | None = None) -> dict[str, Any]:
    """Name, description, momentum (sentence, figures, chart) and related topics of a topic."""
    lib = core.library
    t = lib.topics.get(slug)
    m = momentum(lib.catalog.topic_dates(slug), lib.weekly_counts(), now=user_day(now))
    shared = lib.catalog.shared_papers(slug)
    counts = lib.catalog.topic_counts()
    mine = counts.get(slug, 0)
    related = sorted(
        ((n / max(1, mine + counts.get(o, 0) - n), o) for o, n in shared.items() if n), reverse=True
    )[:5]
    related_html = " ".join(
        f'{topic_link(o, lib.topics.by_slug[o].name)} <span class="pc-dim">({shared[o]} shared)</span>' for _, o in related if o in lib.topics.by_slug
    )
    html = (
        f'<div class="pc-topic-head"><h2>{esc(t.name)}</h2><p>{esc(t.description)}</p>'
        f'<div class="pc-momentum-box"><p class="pc-momentum"><b>{esc(m.sentence())}</b></p>{weekly_chart(m)}'
        f'<p class="pc-dim">Now = {m.now.isoformat()}; weeks run Monday to Sunday; highlighted bars are the last four weeks.</p></div>'
        f'<p><b>Related topics:</b> {related_html or "none yet"}</p></div>'
    )
    return {"html": html, "momentum": m, "following": slug in lib.catalog.followed(), "total": mine}


def topic_papers(core: Core, slug: str, page: int = 1, filter_text: str = "") -> tuple[str, int, int]:
    """One page of a topic's papers, newest first: (html, total matching, number of pages)."""
    lib = core.library
    ids = lib.catalog.topic_papers(slug)
    if filter_text.strip():
        f = filter_text.lower().strip()
        papers_all = lib.catalog.get_many(ids)
        ids = [i for i in ids if f in (papers_all[i].title + " " + " ".join(papers_all[i].authors)).lower()]
    total = len(ids)
    pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
    page = min(max(1, int(page or 1)), pages)
    chunk = ids[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    papers = lib.catalog.get_many(chunk)
    names = {t.slug: t.name for t in lib.topics.topics}
    html = paper_rows([papers[i] for i in chunk if i in papers], names, set(lib.catalog.saved()))
    head = f'<p class="pc-dim">{total:,} papers &middot; page {page} of {pages}</p>'
    return head + html, total, pages


def toggle_follow(core: Core, slug: str) -> bool:
    """Follow or unfollow; returns whether the topic is followed now."""
    on = slug not in core.library.catalog.followed()
    core.library.catalog.follow(slug, on)
    return on


def toggle_save(core: Core, paper_id: str) -> bool:
    on = paper_id not in core.library.catalog.saved()
    if core.library.catalog.get(paper_id) is None:
        raise PaperchatError(f"paper {paper_id} is not in the library")
    core.library.catalog.save(paper_id, on)
    return on


def lists_html(core: Core) -> str:
    """The Following and Saved lists."""
    lib = core.library
    names = {t.slug: t.name for t in lib.topics.topics}
    followed = [topic_link(s, names.get(s, s)) for s in lib.catalog.followed() if s in names]
    saved_ids = lib.catalog.saved()
    papers = lib.catalog.get_many(saved_ids)
    rows = paper_rows([papers[i] for i in saved_ids if i in papers], names, set(saved_ids))
    return (
        f'<h3>Following</h3><p>{" ".join(followed) or "You follow no topic yet."}</p>'
        f"<h3>Saved papers</h3>{rows if saved_ids else '<p class=pc-empty>No saved papers yet: press S on a paper.</p>'}"
    )


# -- papers -------------------------------------------------------------------------------------


def paper_view(core: Core, paper_id: str) -> str:
    lib = core.library
    p = lib.catalog.get(paper_id)
    if p is None:
        return _error(PaperchatError(f"paper {paper_id} is not in the library"))
    names = {t.slug: t.name for t in lib.topics.topics}
    tags = " ".join(topic_link(t, names.get(t, t)) for t in p.topics)
    saved = paper_id in lib.catalog.saved()
    links = []
    abs_url = abs_link(p)  # http(s) only: a stored javascript: URL never becomes a link
    if abs_url:
        links.append(f'<a class="pc-btn" href="{esc(abs_url)}" target="_blank" rel="noopener">{"arXiv" if "arxiv.org/" in abs_url else "Abstract page"}</a>')
    local = stored_copy(p.pdf_path, core.settings)  # the app's own copy, the only PDFs it serves
    if local is not None:
        links.append(f'<a class="pc-btn" href="/gradio_api/file={esc(quote(str(local)))}" target="_blank" rel="noopener">Open paper (local PDF)</a>')
    elif p.pdf_url:
        links.append(f'<a class="pc-btn" href="{esc(p.pdf_url)}" target="_blank" rel="noopener">Open paper (arXiv PDF)</a>')
    note = (
        "AskPDF answers from the full text of this paper."
        if p.pdf_path
        else "No PDF is ingested for this paper: AskPDF answers from the abstract. Add the PDF below (upload it, or download it from arXiv) to ask about the full text."
    )
    return (
        f'<div class="pc-paper" data-paper="{esc(p.id)}"><h2>{shown(p.title)}</h2>'
        f'<p class="pc-row-meta">{esc(", ".join(p.authors))}</p>'
        f'<p class="pc-row-meta">{esc(p.date or "")} &middot; {esc(p.id)} &middot; {tags} {"&#9733; saved" if saved else ""}</p>'
        f'<p class="pc-links">{" ".join(links)}</p><p class="pc-abstract">{shown(p.abstract)}</p><p class="pc-dim">{note}</p></div>'
    )


def upload_pdf(core: Core, file_path: str | None, paper_id: str | None = None) -> tuple[str | None, str]:
    """Ingest an uploaded PDF (stored by content hash, never by its name); returns (paper id, message).

    A PDF that fails to ingest leaves no stored copy behind.
    """
    if not file_path:
        return None, "Choose a PDF first."
    src = Path(file_path)
    stored: Path | None = None
    existed = True
    try:
        check_pdf_file(src, core.settings.max_pdf_mb)
        sha = sha256_file(src)
        known = core.library.catalog.find_by_pdf_sha(sha)
        if known is not None and paper_id in (None, known.id):
            return known.id, f"Already in the library: {known.title}"
        existed = stored_copy(f"{sha}.pdf", core.settings) is not None
        stored = store_pdf(src, sha, core.settings)
        rep = Ingester(core.library).ingest_pdfs([stored], paper_id=paper_id)
    except Exception as exc:  # a failed upload leaves no file behind, whatever failed
        if stored is not None and not existed:
            _drop_unused(core, stored, sha)
        if not isinstance(exc, PaperchatError):
            raise
        return None, str(exc)
    if rep.failures:
        if stored is not None and not existed:
            _drop_unused(core, stored, sha)
        return None, f"Could not read this PDF: {rep.failures[0].reason}"
    pid = rep.paper_ids[0]
    p = core.library.catalog.get(pid)
    return pid, f"Ingested {p.title if p else pid}: {rep.chunks_added} new chunks in {rep.seconds:.1f} s."


def _drop_unused(core: Core, stored: Path, sha: str) -> None:
    """Remove a stored copy that this upload made when no paper refers to it."""
    if core.library.catalog.find_by_pdf_sha(sha) is None:
        stored.unlink(missing_ok=True)


def download_arxiv_pdf(core: Core, paper_id: str) -> tuple[str | None, str]:
    """Fetch the paper's PDF from arXiv and ingest it for this paper; offline gives a clear message."""
    from paperchat.ingestion.records import fetch_arxiv_pdf

    if not paper_id:
        return None, "Open a paper first."
    p = core.library.catalog.get(paper_id)
    if p is None:
        return None, f"paper {paper_id} is not in the library"
    if p.pdf_path:
        return paper_id, "This paper's PDF is already ingested."
    # downloaded into a temporary folder: upload_pdf keeps the one stored copy (uploads/<sha256>.pdf)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = fetch_arxiv_pdf(paper_id, Path(tmp), core.settings.max_pdf_mb)
        except PaperchatError as exc:
            return None, str(exc)
        return upload_pdf(core, str(path), paper_id=paper_id)


# -- chat ---------------------------------------------------------------------------------------


def make_scope(kind: str, target: str, since: str | None = None) -> Scope:
    if kind == "paper":
        return Scope.for_paper(target)
    return Scope.for_topic(target, since=user_day(since))


def chat_stream(core: Core, question: str, kind: str, target: str, history: list[dict[str, Any]], k: int | None = None, since: str | None = None, answerer: str | None = None) -> Iterator[tuple[list[dict[str, Any]], str]]:
    """Stream a chat turn: yields (chat messages, sources panel html). Every message is Markdown-escaped."""
    question = (question or "").strip()
    if not question:
        yield history, ""
        return
    try:  # before the question is echoed anywhere: a huge one is refused, not shown
        check_question(question, core.settings.max_question_chars)
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
        ans_impl = None
        if answerer and answerer != core.settings.answerer:
            from paperchat.providers.answerers import get_answerer

            ans_impl = get_answerer(core.settings, answerer, core.qa.lib.embedder)
        text = ""
        for item in core.qa.stream(question, make_scope(kind, target, since), past, k, ans_impl):
            if isinstance(item, Answer):
                msgs[-1]["content"] = answer_markdown(item)
                yield msgs, sources_panel(item)
                return
            text += item
            msgs[-1]["content"] = md_text(text)
            yield msgs, ""
    except Exception as exc:  # the page never shows a stack trace
        msg = str(exc) if isinstance(exc, PaperchatError) else f"Something went wrong ({type(exc).__name__}). Please try again."
        msgs[-1]["content"] = md_text(msg)
        yield msgs, ""


def ask_json(core: Core, question: str, scope: Scope) -> dict[str, Any]:
    """The answer record as JSON (the same shape as `paperchat ask --json`); errors as {"error": message}."""
    try:
        return core.qa.ask(question, scope).to_json()
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
