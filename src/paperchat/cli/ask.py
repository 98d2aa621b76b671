"""`paperchat ask`: a question about a topic, a paper, a PDF or everything, answered with citations."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from paperchat.assistant import Assistant
from paperchat.citations import mark_unsupported
from paperchat.cli.common import int_in, open_assistant, settings_from
from paperchat.dates import user_day
from paperchat.errors import InputError, SourceError
from paperchat.tex import plain
from paperchat.text import printable
from paperchat.types import Answer, Scope


def check_args(args: argparse.Namespace) -> None:
    """What can be checked before the library opens: the dates, and that --pdf names a file."""
    since, until = user_day(args.since), user_day(args.until)
    if since and until and since > until:
        raise InputError(f"--since {since} is after --until {until}", "swap the two dates")
    for flag, value in (("--paper", args.paper), ("--topic", args.topic), ("--collection", args.in_collection), ("--pdf", args.pdf)):
        if value is not None and not value.strip():  # `--paper ""` must not fall through to the whole library
            raise InputError(f"{flag} was given an empty value", f"give {flag} a value, or leave it out to ask the whole library")
    if args.weeks and (since or until):
        raise InputError("--weeks cannot be combined with --since or --until", "give either the last N weeks or the dates")
    if args.pdf:
        pdf = Path(args.pdf)
        if pdf.is_dir():
            raise InputError(f"--pdf takes one PDF file, and {args.pdf} is a folder", f"to ingest a folder run: paperchat ingest pdf {args.pdf}")
        if not pdf.is_file():
            raise InputError(f"no such file: {args.pdf}", "check the path")


def scope_of(args: argparse.Namespace, assistant: Assistant) -> Scope:
    """The scope the arguments name; a --pdf is ingested first when it is new."""
    if args.pdf:  # the app's upload route: checked, hashed once, kept as the stored copy, ingested when new
        got = assistant.add_pdf(Path(args.pdf))
        if got.paper is None:
            raise SourceError(f"cannot read {args.pdf}: {got.error or 'nothing was ingested'}", "check the file")
        return Scope.for_paper(got.paper.id)
    if args.paper:
        return Scope.for_paper(args.paper)
    since, until = user_day(args.since), user_day(args.until)
    if args.weeks:
        # "now" is the newest plausible date: one record dated 9999-12-31 must not move the window
        since = assistant.newest_date() - dt.timedelta(weeks=args.weeks)
    if args.topic:
        return Scope.for_topic(args.topic, since, until)
    if args.in_collection:
        return Scope.for_collection(args.in_collection, since, until)
    return Scope(kind="all", since=since, until=until)


def format_answer(ans: Answer) -> str:
    """The answer as text: body, what was searched, coverage and the reference list (LaTeX shown plain)."""
    lines = [plain(mark_unsupported(ans.answer.strip(), ans.statements)), ""]
    if ans.fallback:
        lines.insert(0, f"[{ans.fallback}]")
    if ans.rewritten:
        lines.append(f"searched for: {ans.query}")
    if ans.coverage:
        lines.append(ans.coverage)
    if ans.uncited:
        lines.append("warning: the answer cites no source")
    if ans.statements:
        weak = sum(not st.supported for st in ans.statements)
        lines.append(f"{len(ans.statements) - weak} of {len(ans.statements)} sentences supported by the passages they cite")
    if ans.evidence:
        lines += ["", "Evidence (quoted from the same sources)", plain(ans.evidence)]
    if ans.citations:
        lines.append("")
        lines.append("References")
    for c in ans.citations:
        authors = ", ".join(c.authors[:3]) + (" et al" if len(c.authors) > 3 else "")
        where = f", p. {c.page}" if c.page else ""
        byline = f" {authors}." if authors else ""
        lines.append(f"[{c.n}] {plain(c.title).rstrip('.')}.{byline} {c.date or 'n.d.'}. {c.url}{where} (support {c.support:.2f})")
        lines.append(f'    "{plain(c.quote)}"')
    return printable("\n".join(lines).strip())


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer one question (streamed to the end, then printed with its references, or as JSON)."""
    check_args(args)
    assistant = open_assistant(settings_from(args))
    scope = scope_of(args, assistant)
    history = args.history or []
    if args.json:
        # each citation of a stored PDF's page carries its highlight: the quote's line boxes on that page
        print(json.dumps(assistant.place_citations(assistant.ask(args.question, scope, history, args.k)).to_json()))
        return 0
    final = None
    for item in assistant.stream(args.question, scope, history, args.k):
        if isinstance(item, Answer):
            final = item
    assert final is not None
    print(format_answer(final))
    return 0


def register(sub: Any) -> None:
    """Add `ask`."""
    ask = sub.add_parser("ask", help="ask a question about a topic, a paper, a PDF or everything")
    ask.add_argument("question")
    g = ask.add_mutually_exclusive_group()
    g.add_argument("--topic", help="topic slug")
    g.add_argument("--paper", help="paper id (arXiv id)")
    g.add_argument("--collection", dest="in_collection", help="a personal collection (see `paperchat import`)")
    g.add_argument("--pdf", help="a PDF file (ingested first when new)")
    ask.add_argument("--since", help="only papers from this date (YYYY-MM-DD)")
    ask.add_argument("--until", help="only papers up to this date")
    ask.add_argument("--weeks", type=int_in(1, 5200, "--weeks"), help="only papers of the last N weeks")
    ask.add_argument("--history", action="append", help="an earlier question of the chat (repeatable)")
    ask.add_argument("-k", type=int_in(1, 50, "-k"), help="number of sources (1-50)")
    ask.add_argument("--answerer", help="override PAPERCHAT_ANSWERER")
    ask.add_argument("--json", action="store_true")
    ask.set_defaults(func=cmd_ask)
