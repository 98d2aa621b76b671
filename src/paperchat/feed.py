"""Live updates from the arXiv API (`paperchat update`): the newest papers of the configured categories since
the newest date in the store, asked for politely and ingested one page at a time.

Polite: one request every `arxiv_delay_s` seconds (arXiv asks for 3), a User-Agent that names the app,
retries with exponential backoff (and arXiv's Retry-After) on a cut connection, a timeout or a 429/5xx; none on
connection refused or a failed DNS lookup, which mean this machine is offline and are said at once.

All or nothing per page: a page is read whole and parsed before anything of it is written, so a connection
cut midway (or a page that is not XML) stores nothing of that page; pages before it stay stored, and a rerun
finishes the job: it reaches back to the unfinished run's date (kept in the catalogue until a run ends), and
ingest skips what is stored by id and content hash. Paging (sortBy=submittedDate,
descending) stops at the first page holding an entry older than the newest stored date (less a few days of
overlap: the store keeps listing dates, the API gives submission dates), at the end of the results, or at
`arxiv_max_papers` entries.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paperchat import __version__
from paperchat.dates import parse_date, plausible
from paperchat.errors import NetworkError, SourceError
from paperchat.ingestion.records import Failure, parse_atom
from paperchat.settings import Settings
from paperchat.topics import week_start
from paperchat.types import Paper

if TYPE_CHECKING:
    from paperchat.ingestion.plans import IngestReport
    from paperchat.library import Library

USER_AGENT = f"paperchat/{__version__} (research assistant; paperchat update, one request per 3 s)"
OVERLAP_DAYS = 3  # listing dates (stored) run a day or more behind submission dates (the API's): overlap, dedup is free
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 120.0
MAX_PAGE_BYTES = 64 * 2**20  # a page of 2,000 entries is about 10 MB
_NS = {"a": "http://www.w3.org/2005/Atom", "os": "http://a9.com/-/spec/opensearch/1.1/"}
PENDING_KEY = "update_pending_since"  # the `since` of a run that has not finished (cleared when it does)
RERUN = "nothing of the failed page was stored; run `paperchat update` again to finish"
Ingest = Callable[[Sequence[Paper | Failure]], "IngestReport"]


@dataclass
class UpdateReport:
    """What one `update` run did: pages read, entries seen, papers new to the store, why paging stopped."""

    since: dt.date | None
    categories: list[str]
    pages: int = 0
    entries: int = 0
    new: int = 0
    known: int = 0
    older: int = 0
    tagged: int = 0
    chunks_added: int = 0
    failed: list[Failure] = field(default_factory=list)
    stopped: str = ""
    seconds: float = 0.0
    new_ids: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: counts, and why it stopped."""
        since = self.since.isoformat() if self.since else "the start (empty store)"
        return (
            f"{self.new} new papers, {self.known} already stored, {self.older} older than {since} "
            f"from {self.entries} entries on {self.pages} page(s) of {' OR '.join(self.categories)}; "
            f"{self.tagged} tagged, {len(self.failed)} failed; stopped: {self.stopped}; {self.seconds:.1f} s"
        )

    def to_json(self) -> dict[str, object]:
        """The report as a JSON-ready dict."""
        return {
            "since": self.since.isoformat() if self.since else None, "categories": self.categories, "pages": self.pages,
            "entries": self.entries, "new": self.new, "known": self.known, "older": self.older, "tagged": self.tagged,
            "chunks_added": self.chunks_added, "failed": [{"source": f.source, "reason": f.reason} for f in self.failed],
            "stopped": self.stopped, "seconds": round(self.seconds, 3), "new_ids": self.new_ids,
        }


def _offline(exc: BaseException) -> bool:
    """Connection refused or a failed name lookup: this machine (or the host) is not reachable; no retry."""
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, ConnectionRefusedError | socket.gaierror)


class _SameHost(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the host asked (http -> https allowed); another host is an error, not a
    silent move of the feed to wherever a server points it (issue 33, case 9)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> urllib.request.Request | None:
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (new.hostname or "").lower() != (old.hostname or "").lower():
            raise SourceError(f"the arXiv API at {old.netloc} redirected to another host ({new.netloc})", "check PAPERCHAT_ARXIV_API_URL")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameHost)


def _within(seconds: float, call: Callable[[], bytes]) -> bytes:
    """`call()` with a deadline on the whole of it: a socket timeout bounds each read, so a server that sends a
    header line every 5 s, or trickles its body, never trips it. The call runs in a daemon thread; at the deadline
    it is abandoned (its socket times out on its own) and TimeoutError raised here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as is
            box["error"] = exc

    worker = threading.Thread(target=run, name="paperchat-arxiv-get", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no complete answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    value: bytes = box["value"]
    return value


class ArxivClient:
    """GET with arXiv's manners: a fixed pause between requests, a User-Agent, retries with backoff.

    Args:
        settings: arxiv_delay_s, arxiv_retries and arxiv_timeout_s are read.
        sleep: the pause (tests pass their own).
    """

    def __init__(self, settings: Settings, sleep: Callable[[float], None] = time.sleep) -> None:
        self.delay = settings.arxiv_delay_s
        self.retries = settings.arxiv_retries
        self.timeout = settings.arxiv_timeout_s
        self.sleep = sleep
        self._last: float | None = None
        self.requests = 0

    def _fetch(self, req: urllib.request.Request, host: str) -> bytes:
        """One request, its body bounded; a redirect to another host is refused (`_SameHost`)."""
        with _OPENER.open(req, timeout=self.timeout) as resp:
            body: bytes = resp.read(MAX_PAGE_BYTES + 1)
            if len(body) > MAX_PAGE_BYTES:
                raise SourceError(f"the arXiv API at {host} sent a page over {MAX_PAGE_BYTES // 2**20} MB", "lower PAPERCHAT_ARXIV_PAGE_SIZE")
            length = resp.headers.get("Content-Length", "")
            if length.isdigit() and len(body) < int(length):  # a bounded read returns a cut body without a word
                raise http.client.IncompleteRead(body, int(length) - len(body))
            return body

    def _wait_turn(self, at_least: float = 0.0) -> None:
        wait = max(at_least, 0.0 if self._last is None else self.delay - (time.monotonic() - self._last))
        if wait > 0:
            self.sleep(wait)

    def get(self, url: str) -> bytes:
        """The whole body of a 200 answer.

        Raises:
            NetworkError: offline (at once), or still failing after the retries.
            SourceError: an HTTP error that a retry does not mend (400, 404 ...).
        """
        host = urllib.parse.urlsplit(url).netloc
        backoff = 0.0
        for attempt in range(self.retries + 1):
            self._wait_turn(backoff)
            self._last = time.monotonic()
            self.requests += 1
            req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            try:
                return _within(self.timeout, lambda r=req: self._fetch(r, host))  # type: ignore[misc]
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRY_STATUS:
                    raise SourceError(
                        f"the arXiv API at {host} answered HTTP {exc.code} {exc.reason}", "check PAPERCHAT_ARXIV_API_URL and PAPERCHAT_ARXIV_CATEGORIES"
                    ) from exc
                error: BaseException = exc
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                backoff = min(float(retry_after), MAX_RETRY_AFTER_S) if retry_after and retry_after.strip().isdigit() else 0.0
            except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
                if _offline(exc):
                    raise NetworkError(
                        f"cannot reach the arXiv API at {host}: this machine looks offline ({getattr(exc, 'reason', exc)})",
                        "nothing was changed; run `paperchat update` again when online",
                    ) from exc
                error, backoff = exc, 0.0
            backoff = max(backoff, self.delay * 2**attempt)
        what = (
            f"HTTP {error.code}" if isinstance(error, urllib.error.HTTPError)
            else f"{type(error).__name__}: {getattr(error, 'reason', error) or 'connection cut'}"
        )
        raise NetworkError(f"the arXiv API at {host} failed {self.retries + 1} times ({what})", RERUN)


def page_url(settings: Settings, start: int) -> str:
    """The API query for one page of the newest papers in the configured categories."""
    query = " OR ".join(f"cat:{c}" for c in settings.arxiv_categories)
    params = {"search_query": query, "start": start, "max_results": settings.arxiv_page_size, "sortBy": "submittedDate", "sortOrder": "descending"}
    return f"{settings.arxiv_api_url}?{urllib.parse.urlencode(params)}"


def read_page(data: bytes, where: str) -> tuple[list[Paper | Failure], int, int | None]:
    """(papers and failures, number of entries, opensearch:totalResults) of one Atom page.

    Raises:
        SourceError: the page is not XML, not an Atom feed, or arXiv's error entry.
    """
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise SourceError(f"the arXiv API's {where} is not XML ({exc}; it begins {data[:40]!r})", RERUN) from exc
    if root.tag != f"{{{_NS['a']}}}feed":
        raise SourceError(f"the arXiv API's {where} is XML but not an Atom feed (root <{root.tag}>)", RERUN)
    entries = root.findall("a:entry", _NS)
    for e in entries:  # arXiv reports a bad query as a feed with one entry whose id is .../api/errors#...
        if "/api/errors" in (e.findtext("a:id", "", _NS) or ""):
            raise SourceError(f"the arXiv API refused the query: {(e.findtext('a:summary', '', _NS) or '').strip()}", "check PAPERCHAT_ARXIV_CATEGORIES")
    total_text = (root.findtext("os:totalResults", "", _NS) or "").strip()
    total = int(total_text) if total_text.isdigit() else None
    return list(parse_atom(data, where)), len(entries), total


def newest_date(lib: Library) -> dt.date | None:
    """The newest plausible paper date in the store, or None when it holds none."""
    return max(plausible(lib.catalog.topic_dates(None)), default=None)


def update(lib: Library, settings: Settings, ingest: Ingest, client: ArxivClient | None = None) -> UpdateReport:
    """Fetch the newest papers of `settings.arxiv_categories` page by page and ingest each page whole.

    Args:
        lib: the open library (read for the newest date and what is stored).
        settings: the arxiv_* settings.
        ingest: stores one page's papers (the facade's ingest: dedup, topics, tags).
        client: the HTTP client (made from settings when None).

    Raises:
        NetworkError: offline, or a page still failing after retries (earlier pages stay stored).
        SourceError: a page that is not Atom XML, or the API refused the query.
    """
    t0 = time.perf_counter()
    client = client or ArxivClient(settings)
    newest = newest_date(lib)
    since = newest - dt.timedelta(days=OVERLAP_DAYS) if newest else None
    # a run cut short stored its newest pages only: the next one reaches back as far as that one meant to
    pending = lib.catalog.get_meta(PENDING_KEY)
    if pending == "none":
        since = None
    elif pending and (left := parse_date(pending)) is not None:
        since = min(left, since) if since else left
    rep = UpdateReport(since=since, categories=list(settings.arxiv_categories))
    start = 0
    deadline = time.monotonic() + settings.arxiv_run_timeout_s
    while True:
        where = f"page {rep.pages + 1} (start={start})"
        if time.monotonic() > deadline:
            rep.stopped = f"ran PAPERCHAT_ARXIV_RUN_TIMEOUT_S={settings.arxiv_run_timeout_s:g} s; run `paperchat update` again for the rest"
            rep.seconds = time.perf_counter() - t0
            return rep  # the pending mark stays: the next run reaches back as far as this one meant to
        try:
            items, n_entries, total = read_page(client.get(page_url(settings, start)), where)
        except (NetworkError, SourceError) as exc:
            if rep.pages:
                exc.message += f", after {rep.new} new papers from {rep.pages} earlier page(s) were stored"
            raise
        rep.pages += 1
        room = max(0, settings.arxiv_max_papers - start)
        if n_entries > room:  # a server that ignores max_results: no more than the run may read
            items, n_entries = items[:room], room
        rep.entries += n_entries
        papers = [p for p in items if isinstance(p, Paper)]
        keep = [p for p in papers if since is None or p.date is None or p.date >= since]
        rep.older += len(papers) - len(keep)
        if rep.pages == 1:  # written once a page is in hand: a run that fails before it changes nothing
            lib.catalog.set_meta(PENDING_KEY, since.isoformat() if since else "none")
        known = lib.catalog.hashes(p.id for p in keep)
        page = ingest([*keep, *(f for f in items if isinstance(f, Failure))])
        rep.failed.extend(page.failures)
        stored = set(page.paper_ids)
        rep.new_ids += [p.id for p in keep if p.id not in known and p.id in stored]
        rep.new = len(rep.new_ids)
        rep.known += sum(1 for p in keep if p.id in known)
        rep.chunks_added += page.chunks_added
        start += n_entries
        if n_entries == 0:
            rep.stopped = "no more entries" if rep.pages > 1 else "the feed is empty"
        elif len(keep) < len(papers):
            rep.stopped = f"reached papers older than {since}"
        elif total is not None and start >= total:
            rep.stopped = f"end of the results ({total})"
        elif start >= settings.arxiv_max_papers:
            rep.stopped = f"read PAPERCHAT_ARXIV_MAX_PAPERS={settings.arxiv_max_papers} entries"
        if rep.stopped:
            break
    lib.catalog.delete_meta(PENDING_KEY)
    rep.tagged = len(lib.catalog.tags_of(rep.new_ids)) if rep.new_ids else 0
    if rep.new_ids:
        extend_weekly_counts(lib)
    rep.seconds = time.perf_counter() - t0
    return rep


EXTENDED_KEY = "weekly_counts_extended_from"


def extend_weekly_counts(lib: Library) -> None:
    """Keep momentum's denominator current after an update: when the store carries bundled corpus-wide weekly
    counts (the demo), the weeks after them are counted from the catalogue (recounted on every update)."""
    from paperchat.library import WEEKLY_COUNTS_KEY

    raw = lib.catalog.get_meta(WEEKLY_COUNTS_KEY)
    if not raw:
        return  # no bundled counts: momentum counts the catalogue already
    counts = {dt.date.fromisoformat(k): int(v) for k, v in json.loads(raw).items()}
    ext = lib.catalog.get_meta(EXTENDED_KEY)
    first = dt.date.fromisoformat(ext) if ext else max(counts, default=dt.date.min) + dt.timedelta(days=7)
    mine = Counter(week_start(d) for d in plausible(lib.catalog.topic_dates(None)) if week_start(d) >= first)
    if not mine:
        return
    counts = {w: n for w, n in counts.items() if w < first} | dict(mine)
    lib.catalog.set_meta(WEEKLY_COUNTS_KEY, json.dumps({w.isoformat(): n for w, n in sorted(counts.items())}))
    lib.catalog.set_meta(EXTENDED_KEY, first.isoformat())
