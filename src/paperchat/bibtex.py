"""BibTeX export: saved papers, a topic's papers in a window, or any list of paper ids (e.g. an answer's
citations), as @misc entries in arXiv's recommended shape (eprint, archivePrefix, primaryClass).

Text is kept in UTF-8 (biblatex and modern BibTeX read it); the characters that BibTeX gives a meaning to
(& % $ # _ and unbalanced braces) are escaped, so any title survives a round trip through a parser.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import quote

from paperchat.errors import NotFound
from paperchat.library import Library
from paperchat.text import STOPWORDS as _STOPWORDS
from paperchat.types import Paper, is_arxiv_id

_SPECIAL = re.compile(r"([&%$#_])")


_BACKSLASH = "\x00"  # a backslash of the text while the specials are escaped (the text's NULs are dropped first)


def escape(text: str) -> str:
    """Text safe inside a braced BibTeX field: specials escaped, every backslash of the text written as
    `\\textbackslash{}` (so `\\input{...}` or `\\write18{...}` in a title is printed, never run by LaTeX), braces
    balanced (unmatched ones dropped)."""
    text = " ".join(text.replace("\x00", "").replace("\\", _BACKSLASH).split())
    text = _SPECIAL.sub(r"\\\1", text).replace(_BACKSLASH, "\\textbackslash{}")
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                continue
            depth -= 1
        out.append(ch)
    s = "".join(out)
    # close what was left open, from the right: drop the last unmatched opening braces
    while depth:
        i = s.rfind("{")
        s = s[:i] + s[i + 1 :]
        depth -= 1
    return s.rstrip("\\")


_AND = re.compile(r"\band\b", re.IGNORECASE)


def _author(name: str) -> str:
    """One author; a name with the word "and" in it ("Smith and Wesson") is braced, so it stays one author."""
    text = escape(name)
    return "{" + text + "}" if _AND.search(text) else text


def _url(url: str) -> str:
    """A URL percent-encoded outside RFC 3986's characters, so no brace, backslash or space can end the field or
    start a new entry (`https://x.org/a}},@misc{pwn,...` stays one URL); `%` is escaped for LaTeX."""
    return quote(url.strip(), safe=":/?#[]!$&'()*+,;=%-._~@").replace("%", "\\%")


def _ascii_word(text: str) -> str:
    word = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]", "", word)


def cite_key(paper: Paper) -> str:
    """First author's surname, year, first long title word: 'vaswani2017attention'."""
    surname = _ascii_word(paper.authors[0].split()[-1]) if paper.authors and paper.authors[0].split() else "anon"
    year = str(paper.date.year) if paper.date else ""
    words = [_ascii_word(w) for w in paper.title.split()]
    first = next((w for w in words if len(w) > 3 and w.lower() not in _STOPWORDS), "")
    return (surname + year + first).lower() or _ascii_word(paper.id) or "paper"


def entry(paper: Paper, key: str) -> str:
    """One @misc entry."""
    fields = [("title", "{" + escape(paper.title) + "}")]
    if paper.authors:
        fields.append(("author", " and ".join(_author(a) for a in paper.authors)))
    if paper.date:
        fields += [("year", str(paper.date.year)), ("month", paper.date.strftime("%b").lower())]
    if is_arxiv_id(paper.id):
        fields += [("eprint", paper.id), ("archivePrefix", "arXiv")]
        if paper.categories:
            fields.append(("primaryClass", escape(paper.categories[0])))
    if paper.abs_url:
        fields.append(("url", _url(paper.abs_url)))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@misc{{{key},\n{body}\n}}\n"


def to_bibtex(papers: Iterable[Paper]) -> str:
    """Entries for the papers, with cite keys made unique (a, b, ... appended)."""
    seen: dict[str, int] = {}
    out = []
    for p in papers:
        base = cite_key(p)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(entry(p, base if n == 0 else f"{base}{chr(ord('a') + n - 1) if n <= 26 else n}"))
    return "\n".join(out)


def select(
    lib: Library, saved: bool = False, topic: str | None = None, ids: list[str] | None = None,
    since: dt.date | None = None, until: dt.date | None = None,
) -> list[Paper]:
    """The papers to export: saved ones, a topic's (hand-written by rules, discovered by tags, a collection's
    members), or given ids;
    since/until narrow any of them by date.

    Raises:
        NotFound: an unknown topic or paper id.
    """
    chosen: list[str] = []
    if saved:
        chosen += lib.catalog.saved()
    if topic:
        if topic in lib.topics.by_slug:
            chosen += lib.catalog.topic_papers(topic, since, until)
        elif topic in {t.slug for t in lib.catalog.discovered()}:
            chosen += lib.catalog.tagged_papers(topic)
        elif topic in {c.slug for c in lib.catalog.collections()}:
            chosen += lib.catalog.collection_papers(topic)
        else:
            raise NotFound(f"no topic {topic!r}", "list topics with `paperchat topics` or `paperchat topics --trending`")
    chosen += ids or []
    papers = lib.catalog.get_many(chosen)
    missing = [i for i in ids or [] if i not in papers]
    if missing:
        raise NotFound(f"not in the store: {', '.join(missing[:5])}", "check the ids (arXiv ids without version)")
    out = [papers[i] for i in dict.fromkeys(chosen) if i in papers]
    return [p for p in out if (since is None or (p.date and p.date >= since)) and (until is None or (p.date and p.date <= until))]
