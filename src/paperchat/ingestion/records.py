"""arXiv metadata sources: JSONL (listing shape or Kaggle snapshot shape, plain or .gz) and Atom XML."""

from __future__ import annotations

import gzip
import json
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperchat.dates import EARLIEST, is_plausible, parse_date
from paperchat.errors import NetworkError
from paperchat.ingestion.streams import first_byte, lines, not_a_regular_file, open_binary
from paperchat.text import is_arxiv_id, strip_control
from paperchat.types import Paper

_VERSION = re.compile(r"v\d+$")
_WS = re.compile(r"\s+")
MAX_ABSTRACT_CHARS = 20_000


@dataclass(frozen=True)
class Failure:
    """One input that could not be ingested, with the reason in words. `kept`: a note about an input that
    was stored all the same (for example without its implausible date); it does not fail the run."""

    source: str
    reason: str
    kept: bool = False


MAX_TITLE_CHARS = 1_000
MAX_AUTHOR_CHARS = 300
MAX_AUTHORS = 10_000  # a few reports list over 3,000 authors (2507.06261 has 3,303)
MAX_ID_CHARS = 64
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_JSON_ARRAY_BYTES = 256 * 1024 * 1024
MAX_ATOM_BYTES = 64 * 1024 * 1024
# arXiv ids (new style, old style "hep-th/9901001") and our own ids ("pdf-<sha12>"): no other path separators
_ID_OK = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._:\-]*|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})$")


def _ws(text: str) -> str:
    return _WS.sub(" ", strip_control(text)).strip()


def _text_field(rec: dict[str, Any], key: str) -> str:
    value = rec.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"record has no {key}")
    return value


def _paper_id(rec: dict[str, Any]) -> str:
    raw = rec.get("id")
    if isinstance(raw, bool | int | float):
        # a JSON number loses digits: 2503.10 is read as 2503.1, a different paper
        raise ValueError(f"id {raw!r} is a JSON number, which may have lost digits (2503.10 reads as 2503.1); write ids as strings, e.g. \"id\": \"2503.10\"")
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("record has no id")
    pid = _VERSION.sub("", raw.strip())
    if len(pid) > MAX_ID_CHARS:
        raise ValueError(f"id is {len(pid):,} characters (limit {MAX_ID_CHARS})")
    if not _ID_OK.match(pid):
        raise ValueError(f"id {strip_control(pid)[:40]!r} has characters an id may not have (letters, digits, . _ : - only)")
    return pid


def _safe_url(url: Any, pid: str) -> str:
    """An http(s) link for the paper: arXiv's own for arXiv ids, else the record's when it is http(s)."""
    if is_arxiv_id(pid):
        return f"https://arxiv.org/abs/{pid}"
    if isinstance(url, str) and re.match(r"^https?://[^\s<>\"']+$", url.strip(), re.I):
        return url.strip()
    return ""


def record_to_paper(rec: dict[str, Any]) -> Paper:
    """Convert one JSON record (either shape) into a Paper; raises ValueError with the reason.

    Control characters and terminal escapes are stripped from the text fields (the rest is kept as is);
    ids must be strings of id characters; links other than http(s) are dropped.
    """
    if not isinstance(rec, dict):
        raise ValueError("record is not a JSON object")
    pid = _paper_id(rec)
    title = _ws(_text_field(rec, "title"))
    abstract = _ws(_text_field(rec, "abstract"))
    if not title:
        raise ValueError("record has no title")
    if not abstract:
        raise ValueError("record has no abstract")
    if len(title) > MAX_TITLE_CHARS:
        raise ValueError(f"title is {len(title):,} characters (limit {MAX_TITLE_CHARS:,})")
    if len(abstract) > MAX_ABSTRACT_CHARS:
        raise ValueError(f"abstract is {len(abstract):,} characters (limit {MAX_ABSTRACT_CHARS:,})")
    authors_raw = rec.get("authors")
    if isinstance(authors_raw, list):
        authors = [_ws(str(a)) for a in authors_raw if isinstance(a, str | int | float) and str(a).strip()]
    elif isinstance(authors_raw, str):  # Kaggle: "A. One, B. Two and C. Three"
        authors = [_ws(a) for a in re.split(r",\s*|\s+and\s+", authors_raw) if a.strip()]
    else:
        authors = []
    authors = [a for a in authors if a]
    if len(authors) > MAX_AUTHORS:
        raise ValueError(f"record lists {len(authors):,} authors (limit {MAX_AUTHORS:,})")
    longest = max((len(a) for a in authors), default=0)
    if longest > MAX_AUTHOR_CHARS:
        raise ValueError(f"an author name is {longest:,} characters (limit {MAX_AUTHOR_CHARS})")
    cats_raw = rec.get("categories")
    if isinstance(cats_raw, list):
        categories = [_ws(str(c)) for c in cats_raw][:50]
    elif isinstance(cats_raw, str):
        categories = strip_control(cats_raw).split()[:50]
    else:
        categories = []
    date = parse_date(rec.get("listing_date"))
    if date is None and isinstance(rec.get("versions"), list) and rec["versions"]:
        first = rec["versions"][0]
        date = parse_date(first.get("created") if isinstance(first, dict) else None)
    if date is None:
        date = parse_date(rec.get("published")) or parse_date(rec.get("update_date"))
    return Paper(
        id=pid,
        title=title,
        authors=authors,
        abstract=abstract,
        date=date,
        categories=categories,
        url=_safe_url(rec.get("abs_url"), pid),
    )


def _checked(paper: Paper, where: str) -> Iterator[Paper | Failure]:
    """The paper, preceded by a note when its date is implausible (it is then stored without one)."""
    if paper.date is not None and not is_plausible(paper.date):
        yield Failure(
            where,
            f"date {paper.date.isoformat()} is not plausible (before {EARLIEST.year} or after tomorrow); "
            "stored without a date (left out of momentum and date windows)",
            kept=True,
        )
        paper = paper.model_copy(update={"date": None})
    yield paper


def _read_json_array(path: Path) -> Iterator[Paper | Failure]:
    """Papers from a JSON array of records (a pretty-printed .json file), up to MAX_JSON_ARRAY_BYTES."""
    size = path.stat().st_size
    if size > MAX_JSON_ARRAY_BYTES:
        yield Failure(
            str(path),
            f"this is a JSON array of {size / 1e6:.0f} MB, too big to read at once; convert it to JSON Lines "
            f"(one record per line), e.g. jq -c '.[]' {path.name} > records.jsonl",
        )
        return
    try:
        with open_binary(path) as fh:
            data = fh.read(MAX_JSON_ARRAY_BYTES + 1)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        yield Failure(str(path), f"file is damaged: {exc}")
        return
    if len(data) > MAX_JSON_ARRAY_BYTES:
        yield Failure(str(path), "this JSON array expands to more than 256 MB; convert it to JSON Lines (jq -c '.[]')")
        return
    try:
        records = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        yield Failure(str(path), f"invalid UTF-8 at byte {exc.start}")
        return
    except (json.JSONDecodeError, RecursionError) as exc:
        why = f"{exc.msg} at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        yield Failure(str(path), f"this looks like a JSON array but is malformed: {why}")
        return
    if not isinstance(records, list):
        yield Failure(str(path), "expected a JSON array of records or JSON Lines (one record per line)")
        return
    seen: set[str] = set()
    for i, rec in enumerate(records, start=1):
        yield from _one_record(rec, f"{path} record {i}", seen)


def _one_record(rec: Any, where: str, seen: set[str]) -> Iterator[Paper | Failure]:
    try:
        paper = record_to_paper(rec)
    except ValueError as exc:
        yield Failure(where, str(exc))
        return
    if paper.id in seen:
        yield Failure(where, f"duplicate id {paper.id} (kept the first record)")
        return
    seen.add(paper.id)
    yield from _checked(paper, where)


def read_jsonl(path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Paper | Failure]:
    """Papers from a JSONL file (plain or .gz), one per line; bad lines come out as Failures.

    Read as a stream with a line-length limit; a JSON array file is read as one (see `read_records`).
    """
    try:
        fh = open_binary(path)
    except OSError as exc:
        yield Failure(str(path), f"cannot open: {exc.strerror or exc}")
        return
    seen: set[str] = set()
    produced = False
    with fh:
        try:
            for item in lines(fh, str(path), max_line_bytes, Failure):
                produced = True
                if isinstance(item, Failure):
                    yield item
                    continue
                lineno, raw = item
                where = f"{path}:{lineno}"
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield Failure(where, f"invalid UTF-8 at byte {exc.start}")
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    yield Failure(where, f"malformed JSON: {exc.msg} at column {exc.colno}")
                    continue
                except RecursionError:
                    yield Failure(where, "malformed JSON: nested too deeply")
                    continue
                yield from _one_record(rec, where, seen)
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            yield Failure(str(path), f"file is damaged: {exc}")
            return
    if not produced:
        yield Failure(str(path), "no records in the file (it is empty or holds only blank lines)")


_ATOM = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}


def parse_atom(xml_text: str | bytes, source: str = "atom") -> Iterator[Paper | Failure]:
    """Papers from an arXiv API (Atom) response."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        yield Failure(source, f"not a valid Atom XML response: {exc}")
        return
    for i, entry in enumerate(root.findall("a:entry", _ATOM), start=1):
        id_url = (entry.findtext("a:id", "", _ATOM) or "").strip()
        pid = id_url.split("/abs/")[-1] if "/abs/" in id_url else id_url
        primary = entry.find("arxiv:primary_category", _ATOM)
        cats = [c.get("term", "") for c in entry.findall("a:category", _ATOM)]
        if primary is not None and primary.get("term") in cats:
            cats.remove(primary.get("term", ""))
            cats.insert(0, primary.get("term", ""))
        rec = {
            "id": pid,
            "title": entry.findtext("a:title", "", _ATOM),
            "abstract": entry.findtext("a:summary", "", _ATOM),
            "authors": [a.findtext("a:name", "", _ATOM) for a in entry.findall("a:author", _ATOM)],
            "categories": [c for c in cats if c],
            "published": entry.findtext("a:published", "", _ATOM),
            "abs_url": f"https://arxiv.org/abs/{_VERSION.sub('', pid)}" if pid else "",
        }
        try:
            paper = record_to_paper(rec)
        except ValueError as exc:
            yield Failure(f"{source} entry {i}", str(exc))
            continue
        yield from _checked(paper, f"{source} entry {i}")


def read_records(path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Paper | Failure]:
    """Papers from a metadata file, by its extension: .jsonl/.json(.gz) or .xml/.atom. A file whose
    first character is `[` is read as a JSON array of records (a pretty-printed .json file)."""
    name = path.name.lower()
    problem = not_a_regular_file(path)
    if problem:
        yield Failure(str(path), problem)
        return
    if name.endswith((".xml", ".atom")):
        try:
            with open(path, "rb") as fh:  # bounded: a 1 GB Atom file is refused, not parsed into memory
                data = fh.read(MAX_ATOM_BYTES + 1)
        except OSError as exc:
            yield Failure(str(path), f"cannot open: {exc.strerror or exc}")
            return
        if len(data) > MAX_ATOM_BYTES:
            yield Failure(
                str(path),
                f"this Atom file is over {MAX_ATOM_BYTES // 2**20} MB (an arXiv API page of 2,000 entries is about 5 MB); ask the API for smaller pages",
            )
            return
        yield from parse_atom(data, str(path))
        return
    try:
        array = first_byte(path) == b"[" and not _lines_of_json(path)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        yield Failure(str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}")
        return
    yield from (_read_json_array(path) if array else read_jsonl(path, max_line_bytes))


def _lines_of_json(path: Path) -> bool:
    """Whether a file that starts with `[` is JSON Lines after all: its first line is a whole JSON value and
    more lines follow (a JSONL file whose first line is an array; a pretty-printed array's first line is `[`
    alone, a one-line array has no second line). Its valid lines are then ingested and the array line reported."""
    with open_binary(path) as fh:
        first = fh.readline(DEFAULT_MAX_LINE_BYTES + 1)
        rest = fh.read(4096)
    if not rest.strip() or len(first) > DEFAULT_MAX_LINE_BYTES:
        return False
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return False
    return True


ARXIV_API = "http://export.arxiv.org/api/query"


def _http_get(url: str, timeout: float, limit: int | None, failure: str, fix: str) -> bytes:
    """GET a URL (at most `limit` + 1 bytes); NetworkError saying `failure (reason)` and `fix` when it fails."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers={"User-Agent": "paperchat (research assistant)"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - fixed arxiv.org hosts
            data: bytes = resp.read() if limit is None else resp.read(limit + 1)
            return data
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise NetworkError(f"{failure} ({getattr(exc, 'reason', exc)})", fix) from exc


def fetch_arxiv(query: str, max_results: int = 100, timeout: float = 20.0) -> bytes:
    """Call the arXiv API; raises NetworkError with what to do when it cannot be reached."""
    import urllib.parse

    url = f"{ARXIV_API}?" + urllib.parse.urlencode(
        {"search_query": query, "start": 0, "max_results": max_results, "sortBy": "submittedDate"}
    )
    return _http_get(
        url, timeout, None, "cannot reach the arXiv API at export.arxiv.org",
        "check the network, or save a response and run: paperchat ingest arxiv --file response.xml",
    )


def fetch_arxiv_pdf(paper_id: str, dest: Path, max_mb: float, timeout: float = 30.0) -> Path:
    """Download arxiv.org/pdf/<id> into dest (a folder); raises NetworkError when offline, SourceError
    when the id is not an arXiv id or the reply is not a PDF or too large."""
    from paperchat.errors import SourceError

    if not is_arxiv_id(paper_id, versioned=True):
        raise SourceError(f"{paper_id} is not an arXiv id", "upload the PDF instead")
    url = f"https://arxiv.org/pdf/{paper_id}"
    limit = int(max_mb * 1024 * 1024)
    data = _http_get(url, timeout, limit, f"cannot download {url}; this machine looks offline", "download the PDF in a browser and upload it here")
    if len(data) > limit:
        raise SourceError(f"{url} is larger than {max_mb:g} MB", "raise PAPERCHAT_MAX_PDF_MB or upload a smaller file")
    if not data.startswith(b"%PDF"):
        raise SourceError(f"{url} did not return a PDF", "upload the PDF instead")
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"arxiv-{paper_id.replace('/', '_')}.pdf"
    out.write_bytes(data)
    return out
