"""HTML pieces of the pages, from the Jinja2 templates in `ui/templates` (autoescaped), and the Markdown of
the chat. Every title, author, abstract and answer is escaped: content is data.

Stored text (records, PDFs, answers quoting them) reaches the page only through a template (autoescaped),
`esc` or `md_text` (Markdown for the chat), and a stored URL becomes a link only through `safe_url`
(http/https).
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from paperchat.assistant import Momentum
from paperchat.citations import CITATION, mark_unsupported, parse_group
from paperchat.tex import plain
from paperchat.types import Answer, Paper, is_arxiv_id


def esc(text: object) -> str:
    """HTML-escaped text (quotes too)."""
    return html.escape(str(text), quote=True)


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


@dataclass(frozen=True)
class _Bar:
    """One bar of the weekly chart, its geometry already formatted."""

    cls: str
    x: str
    y: str
    w: str
    h: str
    week: str
    count: int
    total: int


@dataclass(frozen=True)
class _Chart:
    """The weekly chart of a topic: its size, bars and first and last week."""

    width: int
    height: int
    bars: list[_Bar]
    first: str
    last: str


def weekly_bars(m: Momentum, width: int = 640, height: int = 120) -> _Chart | None:
    """The bars of the weekly chart (recent four weeks highlighted); None when there is no week."""
    if not m.weekly:
        return None
    top = max(max(c for _, c, _ in m.weekly), 1)
    bw = width / len(m.weekly)
    recent_start = m.now - dt.timedelta(days=m.now.weekday()) - dt.timedelta(weeks=3)
    bars = []
    for i, (week, c, total) in enumerate(m.weekly):
        h = (height - 18) * c / top
        cls = "pc-bar-recent" if week >= recent_start else "pc-bar"
        bars.append(_Bar(cls, f"{i * bw:.1f}", f"{height - 14 - h:.1f}", f"{max(bw - 1, 1):.1f}", f"{h:.1f}", week.isoformat(), c, total))
    return _Chart(width, height, bars, m.weekly[0][0].isoformat(), m.weekly[-1][0].isoformat())


def render(template: str, **context: Any) -> str:
    """A page piece from `ui/templates/<template>` (autoescaped: stored text never becomes markup)."""
    return _env().get_template(template).render(**context).strip()


@functools.cache
def _env() -> Any:
    from jinja2 import Environment, PackageLoader

    env = Environment(loader=PackageLoader("paperchat.ui", "templates"), autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["plain"] = plain  # LaTeX markup as plain text; autoescape escapes the result
    env.filters["commas"] = lambda n: f"{n:,}"
    env.filters["urlquote"] = lambda v: quote(str(v))
    return env


def link_title(text: str, limit: int = 1000) -> str:
    """Text for a Markdown link title (inside double quotes): one line, cut at `limit`, escaped as `md_text`
    does (quotes become entities, backslashes are doubled), so it can neither end the title nor add markup."""
    one = " ".join(plain(text).split())
    return md_text(one[:limit] + ("..." if len(one) > limit else ""))


def answer_markdown(ans: Answer) -> str:
    """The answer for the chat: its text escaped (it quotes stored abstracts and PDFs), citations as links
    to the paper view (and page)."""
    by_n = {s.n: s for s in ans.sources}
    quotes = {c.n: c.quote for c in ans.citations}

    def link(m: re.Match[str]) -> str:
        parts = []
        for n in parse_group(m.group(1)):
            s = by_n.get(n)
            if s is None:
                continue
            page = f"/{s.page}" if s.page else ""
            # the quote as the link's title: hovering shows it, and a click hands it to the viewer
            parts.append(f'[[{n}]](#paper/{quote(s.paper_id, safe="/.-_")}{page} "{link_title(quotes.get(n) or s.text)}")')
        return "".join(parts)

    text = plain(mark_unsupported(ans.answer, ans.statements))
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
    if ans.statements:
        weak = sum(not st.supported for st in ans.statements)
        extra.append(f"_{len(ans.statements) - weak} of {len(ans.statements)} sentences supported by the passages they cite_")
    evidence = f"\n\n**Evidence** (quoted from the same sources)\n\n{md_text(plain(ans.evidence))}" if ans.evidence else ""
    return "".join(body) + ("\n\n" + "  \n".join(extra) if extra else "") + evidence


def sources_panel(ans: Answer, bibtex: str = "", cited_papers: int = 0) -> str:
    """Each offered source with its passage, page, scores and (when cited) support; with `bibtex`, a button
    under the answer that downloads the BibTeX of the papers it cites (a data: link: no file is written)."""
    cited = {c.n: c for c in ans.citations}
    rows = []
    for s in ans.sources:
        c = cited.get(s.n)
        quote_text = c.quote if c else s.text[:300] + ("..." if len(s.text) > 300 else "")
        # a click on the row highlights the cited sentence, or (uncited) the whole passage
        rows.append({"source": s, "cited": c, "quote": quote_text, "passage": c.quote if c else s.text})
    return render("sources.html", rows=rows, bibtex=bibtex, cited_papers=cited_papers)
