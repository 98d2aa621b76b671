"""`paperchat` command line: parse, build Settings, call one function, print its result.

Errors print one line and exit non-zero; ingest exits 0 (all fine), 1 (some inputs failed) or 2 (nothing
could be ingested).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.errors import PaperchatError
from paperchat.settings import Settings

if TYPE_CHECKING:
    from paperchat.types import Scope


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    return Settings(**overrides)


def _library(settings: Settings):  # type: ignore[no-untyped-def]
    from paperchat.library import Library

    lib = Library(settings)
    for line in lib.warnings:  # the store and the catalogue disagree: say so, once, before anything else
        print(f"paperchat: warning: {line}", file=sys.stderr)
    return lib


def _print_report(report, as_json: bool) -> int:  # type: ignore[no-untyped-def]
    from paperchat.text import printable

    if as_json:
        print(json.dumps(report.to_json()))
    else:
        failures = report.failures
        notes = [f for f in report.failed if f.kept]
        print(
            f"{report.papers} papers, {report.chunks_added} chunks added, {report.chunks_skipped} already stored, "
            f"{report.chunks_removed} removed, {len(failures)} failed, {report.seconds:.1f} s"
            + (f", {len(notes)} notes" if notes else "")
        )
        for src, what in report.stored[:50]:
            print(printable(f"  {src}: {what}"))
        if len(report.stored) > 50:
            print(f"  ... and {len(report.stored) - 50} more files stored")
        for label, items in (("failed", failures), ("note", notes)):
            for f in items[:50]:
                print(printable(f"  {label}: {f.source}: {f.reason}"), file=sys.stderr)
            if len(items) > 50:
                print(f"  ... and {len(items) - 50} more", file=sys.stderr)
    return int(report.exit_code)


def _int_in(lo: int, hi: int, what: str):  # type: ignore[no-untyped-def]
    """An argparse type: an integer in [lo, hi], with a message that says the range."""

    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {value!r}") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{what} must be between {lo:,} and {hi:,}, not {n:,}")
        return n

    return parse


def cmd_ingest(args: argparse.Namespace) -> int:
    from paperchat.ingestion.pipeline import Ingester, IngestReport
    from paperchat.ingestion.records import Failure, fetch_arxiv, parse_atom, read_records
    from paperchat.progress import make_progress

    settings = _settings(args)
    lib = _library(settings)
    show = False if args.json else None
    if args.kind == "demo":
        from paperchat.demo import ensure_demo

        rep = ensure_demo(lib, show_progress=show)
        return _print_report(rep or IngestReport(), args.json)
    if args.kind == "pdf":
        from paperchat.ingestion.pdf import find_pdfs

        folders = [p for p in args.paths if Path(p).is_dir()]
        if folders:
            found, _ = find_pdfs([Path(p) for p in folders])
            print(f"reading {len(found)} PDF file(s) from {', '.join(folders)}", file=sys.stderr)
        update, close = make_progress(None, "PDFs", enabled=show)
        try:
            rep = Ingester(lib, progress=update).ingest_pdfs([Path(p) for p in args.paths], paper_id=args.paper_id)
        finally:
            close()
        return _print_report(rep, args.json)
    if args.kind == "arxiv":
        if args.file:
            items = list(parse_atom(Path(args.file).read_bytes(), args.file))
        elif args.query:
            items = list(parse_atom(fetch_arxiv(args.query, args.max_results), "arXiv API"))
        else:
            raise PaperchatError("give --query or --file", "for example: paperchat ingest arxiv --query 'cat:cs.CL AND all:retrieval'")
        return _print_report(Ingester(lib).ingest_records(items), args.json)
    # abstracts: one or more JSONL files
    report = IngestReport()
    for p in args.paths:
        path = Path(p)
        if not path.is_file():
            report.failed.append(Failure(str(path), "no such file"))
            continue
        update, close = make_progress(None, enabled=show)  # no counting pass: the file is read once, as a stream
        try:
            max_line = int(settings.max_record_line_mb * 1024 * 1024)
            report.merge(Ingester(lib, progress=update).ingest_records(read_records(path, max_line)))
        finally:
            close()
    return _print_report(report, args.json)


def cmd_topics(args: argparse.Namespace) -> int:
    from paperchat.text import printable

    if args.action or args.trending:  # discovered topics and momentum: paperchat.cli_topics
        from paperchat.cli_topics import cmd_topics_more

        return cmd_topics_more(args)
    settings = _settings(args)
    if args.check:
        # apply the rules to a metadata file without ingesting it: counts and a sample to read by hand
        import random
        from collections import Counter

        from paperchat.ingestion.records import read_records
        from paperchat.topics import TopicSet
        from paperchat.types import Paper

        ts = TopicSet.load(settings.topics_file)
        papers = [p for p in read_records(Path(args.check)) if isinstance(p, Paper)]
        members = {p.id: ts.match(p) for p in papers}
        counts = Counter(t for v in members.values() for t in v)
        print(f"{len(papers)} papers, {sum(1 for v in members.values() if v)} in at least one topic")
        rng = random.Random(args.seed)
        for t in ts.topics:
            mine = [p for p in papers if t.slug in members[p.id]]
            print(f"\n## {t.slug}: {counts.get(t.slug, 0)} papers")
            for p in rng.sample(mine, min(args.sample, len(mine))):
                print(printable(f"- {p.id} | {p.title[:100]} | {', '.join(sorted(set(ts.explain(p, t.slug))))[:60]}"))
        return 0
    lib = _library(settings)
    counts = lib.catalog.topic_counts()
    chunk_counts = {t.slug: len(lib.store.ids_in_topic(t.slug)) for t in lib.topics.topics}
    rows = [
        {"slug": t.slug, "name": t.name, "papers": counts.get(t.slug, 0), "chunks": chunk_counts[t.slug]}
        for t in lib.topics.topics
    ]
    if args.json:
        print(json.dumps({"topics": rows, "papers": lib.catalog.count(), "chunks": lib.store.count()}))
        return 0
    width = max(len(r["name"]) for r in rows) if rows else 10
    print(f"{'topic':<{width}}  {'slug':<22} {'papers':>7} {'chunks':>7}")
    for r in rows:
        print(printable(f"{r['name']:<{width}}  {r['slug']:<22} {r['papers']:>7} {r['chunks']:>7}"))
    print(f"{'all':<{width}}  {'':<22} {lib.catalog.count():>7} {lib.store.count():>7}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from paperchat.ingestion.pipeline import Ingester

    lib = _library(_settings(args))
    n = Ingester(lib).remove_paper(args.paper)
    if n < 0:
        raise PaperchatError(f"paper {args.paper} is not in the store", "list papers with `paperchat topics` or check the id")
    print(f"removed paper {args.paper} ({n} chunks)")
    return 0


def _check_ask(args: argparse.Namespace) -> None:
    """What can be checked before the library opens: the dates, and that --pdf names a file."""
    from paperchat.dates import user_day

    since, until = user_day(args.since), user_day(args.until)
    if since and until and since > until:
        raise PaperchatError(f"--since {since} is after --until {until}", "swap the two dates")
    if args.weeks and (since or until):
        raise PaperchatError("--weeks cannot be combined with --since or --until", "give either the last N weeks or the dates")
    if args.pdf:
        pdf = Path(args.pdf)
        if pdf.is_dir():
            raise PaperchatError(f"--pdf takes one PDF file, and {args.pdf} is a folder", f"to ingest a folder run: paperchat ingest pdf {args.pdf}")
        if not pdf.is_file():
            raise PaperchatError(f"no such file: {args.pdf}", "check the path")


def _scope(args: argparse.Namespace, lib) -> Scope:  # type: ignore[no-untyped-def]
    from paperchat.dates import plausible, user_day
    from paperchat.ingestion.pipeline import Ingester
    from paperchat.types import Scope

    if args.pdf:
        rep = Ingester(lib).ingest_pdfs([Path(args.pdf)])
        if rep.failures or not rep.paper_ids:
            reason = rep.failures[0].reason if rep.failures else "nothing was ingested"
            raise PaperchatError(f"cannot read {args.pdf}: {reason}", "check the file")
        return Scope.for_paper(rep.paper_ids[0])
    if args.paper:
        return Scope.for_paper(args.paper)
    since, until = user_day(args.since), user_day(args.until)
    if args.weeks:
        # "now" is the newest plausible date: one record dated 9999-12-31 must not move the window
        newest = max(plausible(lib.catalog.topic_dates(None)), default=dt.date.today())
        since = newest - dt.timedelta(weeks=args.weeks)
    if args.topic:
        return Scope.for_topic(args.topic, since, until)
    return Scope(kind="all", since=since, until=until)


def format_answer(ans) -> str:  # type: ignore[no-untyped-def]
    """The answer as text: body, what was searched, coverage and the reference list (LaTeX shown plain)."""
    from paperchat.tex import plain

    from paperchat.text import printable

    lines = [plain(ans.answer.strip()), ""]
    if ans.fallback:
        lines.insert(0, f"[{ans.fallback}]")
    if ans.rewritten:
        lines.append(f"searched for: {ans.query}")
    if ans.coverage:
        lines.append(ans.coverage)
    if ans.uncited:
        lines.append("warning: the answer cites no source")
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
    from paperchat.qa import QA
    from paperchat.types import Answer

    _check_ask(args)
    settings = _settings(args)
    if args.answerer:
        settings = settings.model_copy(update={"answerer": args.answerer})
    lib = _library(settings)
    scope = _scope(args, lib)
    qa = QA(lib)
    history = args.history or []
    if args.json:
        print(json.dumps(qa.ask(args.question, scope, history, args.k).to_json()))
        return 0
    final = None
    for item in qa.stream(args.question, scope, history, args.k):
        if isinstance(item, Answer):
            final = item
    assert final is not None
    print(format_answer(final))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from paperchat.ui.app import serve

    serve(_settings(args), insecure=args.insecure, demo_corpus=not args.no_demo)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paperchat", description="Research assistant over papers.")
    p.add_argument("--data-dir", help="data directory (default: PAPERCHAT_DATA_DIR or ./.paperchat)")
    sub = p.add_subparsers(dest="command", required=True)

    ing = sub.add_parser("ingest", help="ingest abstracts, PDFs, arXiv API results or the demo corpus")
    ing_sub = ing.add_subparsers(dest="kind", required=True)
    a = ing_sub.add_parser("abstracts", help="arXiv metadata JSONL (listing or Kaggle shape, .gz ok)")
    a.add_argument("paths", nargs="+")
    pdf = ing_sub.add_parser("pdf", help="PDF files or folders")
    pdf.add_argument("paths", nargs="+")
    pdf.add_argument("--paper-id", help="attach the PDF to this paper id (one file only)")
    ax = ing_sub.add_parser("arxiv", help="arXiv API: a live query or a saved Atom response")
    ax.add_argument("--query", help="arXiv search_query, e.g. 'cat:cs.CL AND abs:retrieval'")
    ax.add_argument("--file", help="a saved Atom XML response")
    ax.add_argument("--max-results", type=_int_in(1, 2000, "--max-results"), default=100)
    ing_sub.add_parser("demo", help="the bundled demo corpus")
    for sp in (a, pdf, ax, ing_sub.choices["demo"]):
        sp.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    ing.set_defaults(func=cmd_ingest)

    t = sub.add_parser("topics", help="each topic with its paper and chunk counts")
    t.add_argument("--json", action="store_true")
    t.add_argument("--check", metavar="JSONL", help="apply the topic rules to a metadata file (no ingest): counts and a sample")
    t.add_argument("--sample", type=_int_in(0, 10_000, "--sample"), default=20, help="with --check: papers listed per topic")
    t.add_argument("--seed", type=int, default=0, help="with --check: sample seed")
    from paperchat.cli_topics import add_topic_arguments

    add_topic_arguments(t)
    t.set_defaults(func=cmd_topics)

    r = sub.add_parser("remove", help="remove a paper and its chunks")
    r.add_argument("--paper", required=True)
    r.set_defaults(func=cmd_remove)

    ask = sub.add_parser("ask", help="ask a question about a topic, a paper, a PDF or everything")
    ask.add_argument("question")
    g = ask.add_mutually_exclusive_group()
    g.add_argument("--topic", help="topic slug")
    g.add_argument("--paper", help="paper id (arXiv id)")
    g.add_argument("--pdf", help="a PDF file (ingested first when new)")
    ask.add_argument("--since", help="only papers from this date (YYYY-MM-DD)")
    ask.add_argument("--until", help="only papers up to this date")
    ask.add_argument("--weeks", type=_int_in(1, 5200, "--weeks"), help="only papers of the last N weeks")
    ask.add_argument("--history", action="append", help="an earlier question of the chat (repeatable)")
    ask.add_argument("-k", type=_int_in(1, 50, "-k"), help="number of sources (1-50)")
    ask.add_argument("--answerer", help="override PAPERCHAT_ANSWERER")
    ask.add_argument("--json", action="store_true")
    ask.set_defaults(func=cmd_ask)

    from paperchat.cli_tools import add_tool_parsers

    add_tool_parsers(sub)

    from paperchat.cli_export import add_export_parser

    add_export_parser(sub)

    sv = sub.add_parser("serve", help="start the app (ingests the bundled demo corpus on first start)")
    sv.add_argument("--insecure", action="store_true", help="allow serving beyond 127.0.0.1 without PAPERCHAT_AUTH")
    sv.add_argument("--no-demo", action="store_true", help="do not ingest the bundled demo corpus")
    sv.set_defaults(func=cmd_serve)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "kind", None) == "pdf" and args.paper_id and len(args.paths) != 1:
        parser.error("--paper-id needs exactly one PDF")
    try:
        return int(args.func(args))
    except PaperchatError as exc:
        from paperchat.text import printable

        print(printable(f"paperchat: error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("paperchat: interrupted; run the same command again to finish (nothing is lost)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
