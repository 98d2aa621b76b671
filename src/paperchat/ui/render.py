"""HTML pieces of the pages. Every title, author, abstract and answer is escaped: content is data.

Stored text (records, PDFs, answers quoting them) reaches the page only through `esc`/`shown` (HTML) or
`md_text` (Markdown for the chat), and a stored URL becomes a link only through `safe_url` (http/https).
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Sequence
from urllib.parse import quote

from paperchat.citations import CITATION, parse_group
from paperchat.tex import plain
from paperchat.text import is_arxiv_id
from paperchat.topics import Momentum
from paperchat.types import Answer, Paper


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def shown(text: str) -> str:
    """A title, abstract or quote for the page: LaTeX markup as plain text, then escaped."""
    return esc(plain(text))


_MD_SPECIAL = re.compile(r"([\\`\[\]!])")
_SAFE_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f]+", re.IGNORECASE)


def md_text(text: str) -> str:
    """Text for a Markdown message (the chat): HTML escaped, and no link, image or code syntax survives.

    `<`, `>` and `&` become entities, so `<iframe>` or `<img onerror>` show as text; `[`, `]`, `!`,
    backticks and backslashes are backslash-escaped, so `[x](javascript:...)` is not a link.
    """
    return _MD_SPECIAL.sub(r"\\\1", esc(text))


def md_plain(text: str) -> str:
    """The inverse of `md_text` (a shown chat message back to what was typed)."""
    return html.unescape(re.sub(r"\\([\\`\[\]!])", r"\1", text))


def safe_url(url: str | None) -> str:
    """The URL when it is a plain http(s) URL, else "" (javascript:, data:, relative ... never become links)."""
    u = (url or "").strip()
    return u if _SAFE_URL.fullmatch(u) else ""


def abs_link(p: Paper) -> str:
    """The paper's abstract page: built from the id for arXiv ids, else the stored URL when it is http(s)."""
    if is_arxiv_id(p.id):
        return f"https://arxiv.org/abs/{p.id}"
    return safe_url(p.url)


def topic_link(slug: str, name: str) -> str:
    return f'<a class="pc-tag" href="#topic/{esc(slug)}">{esc(name)}</a>'


def paper_link(pid: str, title: str, page: int | None = None) -> str:
    suffix = f"/{page}" if page else ""
    return f'<a class="pc-paper-link" href="#paper/{esc(pid)}{suffix}">{shown(title)}</a>'


def weekly_chart(m: Momentum, width: int = 640, height: int = 120) -> str:
    """An inline SVG bar chart of the topic's papers per week (recent four weeks highlighted)."""
    if not m.weekly:
        return ""
    counts = [c for _, c, _ in m.weekly]
    top = max(max(counts), 1)
    n = len(counts)
    bw = width / n
    recent_start = m.now - dt.timedelta(days=m.now.weekday()) - dt.timedelta(weeks=3)
    bars = []
    for i, (week, c, total) in enumerate(m.weekly):
        h = (height - 18) * c / top
        cls = "pc-bar-recent" if week >= recent_start else "pc-bar"
        bars.append(
            f'<rect class="{cls}" x="{i * bw:.1f}" y="{height - 14 - h:.1f}" width="{max(bw - 1, 1):.1f}" height="{h:.1f}">'
            f"<title>week of {week.isoformat()}: {c} papers ({total} in all)</title></rect>"
        )
    first, last = m.weekly[0][0].isoformat(), m.weekly[-1][0].isoformat()
    return (
        f'<svg class="pc-chart" viewBox="0 0 {width} {height}" role="img" aria-label="papers per week">'
        + "".join(bars)
        + f'<text x="0" y="{height - 2}" class="pc-axis">{first}</text>'
        + f'<text x="{width}" y="{height - 2}" text-anchor="end" class="pc-axis">{last}</text></svg>'
    )


def paper_rows(papers: Sequence[Paper], names: dict[str, str], saved: set[str]) -> str:
    """The latest-papers list: one selectable row per paper (J/K move, Enter opens, S saves)."""
    rows = []
    for p in papers:
        tags = " ".join(topic_link(t, names.get(t, t)) for t in p.topics)
        star = '<span class="pc-saved" title="saved">&#9733;</span>' if p.id in saved else ""
        pdf = '<span class="pc-pdf">PDF</span>' if p.pdf_path else ""
        rows.append(
            f'<div class="pc-row" data-paper="{esc(p.id)}" tabindex="-1">'
            f'<div class="pc-row-title">{star}{paper_link(p.id, p.title)} {pdf}</div>'
            f'<div class="pc-row-meta">{esc(p.date or "")} &middot; {esc(p.short_authors())} &middot; {tags}</div></div>'
        )
    return '<div class="pc-list">' + "".join(rows) + "</div>" if rows else '<p class="pc-empty">No papers match.</p>'


def answer_markdown(ans: Answer) -> str:
    """The answer for the chat: its text escaped (it quotes stored abstracts and PDFs), citations as links
    to the paper view (and page)."""
    by_n = {s.n: s for s in ans.sources}

    def link(m: re.Match[str]) -> str:
        parts = []
        for n in parse_group(m.group(1)):
            s = by_n.get(n)
            if s is None:
                continue
            page = f"/{s.page}" if s.page else ""
            parts.append(f"[[{n}]](#paper/{quote(s.paper_id, safe='/.-_')}{page})")
        return "".join(parts)

    text = plain(ans.answer)
    body, last = [], 0
    for m in CITATION.finditer(text):  # escape the text between citations; the citations become our links
        body.append(md_text(text[last : m.start()]))
        body.append(link(m))
        last = m.end()
    body.append(md_text(text[last:]))
    extra = []
    if ans.fallback:
        extra.append(f"_{md_text(ans.fallback)}_")
    if ans.rewritten:
        extra.append(f"_searched for: {md_text(ans.query)}_")
    if ans.coverage:
        extra.append(f"_{md_text(ans.coverage)}_")
    if ans.uncited:
        extra.append("_warning: this answer cites no source_")
    return "".join(body) + ("\n\n" + "  \n".join(extra) if extra else "")


def sources_panel(ans: Answer) -> str:
    """Each offered source with its passage, page, scores and (when cited) support."""
    cited = {c.n: c for c in ans.citations}
    rows = []
    for s in ans.sources:
        c = cited.get(s.n)
        quote = c.quote if c else s.text[:300] + ("..." if len(s.text) > 300 else "")
        sup = f" &middot; support {c.support:.2f}" if c else ""
        page = f" &middot; p. {s.page}" if s.page else ""
        cls = "pc-source pc-cited" if c else "pc-source"
        rows.append(
            f'<div class="{cls}"><b>[{s.n}]</b> {paper_link(s.paper_id, s.title, s.page)}{page}'
            f' &middot; score {s.score:.4f}{sup}<blockquote>{shown(quote)}</blockquote></div>'
        )
    return '<div class="pc-sources"><h4>Sources</h4>' + "".join(rows) + "</div>" if rows else ""
