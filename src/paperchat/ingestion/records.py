"""arXiv metadata sources: JSONL (listing shape or Kaggle snapshot shape, plain or .gz) and Atom XML."""

from __future__ import annotations

import datetime as dt
import email.utils
import gzip
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperchat.errors import NetworkError
from paperchat.types import Paper

_VERSION = re.compile(r"v\d+$")
_WS = re.compile(r"\s+")
MAX_ABSTRACT_CHARS = 20_000


@dataclass(frozen=True)
class Failure:
    """One input that could not be ingested, with the reason in words."""

    source: str
    reason: str


def _ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _parse_date(value: Any) -> dt.date | None:
    if not value or not isinstance(value, str):
        return None
    value = value.strip()
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        pass
    try:  # "Mon, 2 Apr 2007 19:18:42 GMT" (Kaggle versions[].created)
        return email.utils.parsedate_to_datetime(value).date()
    except (TypeError, ValueError):
        return None


def record_to_paper(rec: dict[str, Any]) -> Paper:
    """Convert one JSON record (either shape) into a Paper; raises ValueError with the reason."""
    if not isinstance(rec, dict):
        raise ValueError("record is not a JSON object")
    pid = rec.get("id")
    if not isinstance(pid, str | int | float) or not str(pid).strip():
        raise ValueError("record has no id")
    pid = _VERSION.sub("", str(pid).strip())
    title = rec.get("title")
    abstract = rec.get("abstract")
    if not isinstance(title, str) or not title.strip():
        raise ValueError("record has no title")
    if not isinstance(abstract, str) or not abstract.strip():
        raise ValueError("record has no abstract")
    if len(abstract) > MAX_ABSTRACT_CHARS:
        raise ValueError(f"abstract is {len(abstract):,} characters (limit {MAX_ABSTRACT_CHARS:,})")
    authors_raw = rec.get("authors")
    if isinstance(authors_raw, list):
        authors = [_ws(str(a)) for a in authors_raw if str(a).strip()]
    elif isinstance(authors_raw, str):  # Kaggle: "A. One, B. Two and C. Three"
        authors = [_ws(a) for a in re.split(r",\s*|\s+and\s+", authors_raw) if a.strip()]
    else:
        authors = []
    cats_raw = rec.get("categories")
    if isinstance(cats_raw, list):
        categories = [str(c) for c in cats_raw]
    elif isinstance(cats_raw, str):
        categories = cats_raw.split()
    else:
        categories = []
    date = _parse_date(rec.get("listing_date"))
    if date is None and isinstance(rec.get("versions"), list) and rec["versions"]:
        first = rec["versions"][0]
        date = _parse_date(first.get("created") if isinstance(first, dict) else None)
    if date is None:
        date = _parse_date(rec.get("published")) or _parse_date(rec.get("update_date"))
    url = rec.get("abs_url") if isinstance(rec.get("abs_url"), str) else ""
    return Paper(
        id=pid,
        title=_ws(title),
        authors=authors,
        abstract=_ws(abstract),
        date=date,
        categories=categories,
        url=url or "",
    )


def read_jsonl(path: Path) -> Iterator[Paper | Failure]:
    """Papers from a JSONL file (plain or .gz), one per line; bad lines come out as Failures."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        fh = opener(path, "rb")
    except OSError as exc:
        yield Failure(str(path), f"cannot open: {exc.strerror or exc}")
        return
    seen: set[str] = set()
    with fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                where = f"{path}:{lineno}"
                if not raw.strip():
                    continue
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
                try:
                    paper = record_to_paper(rec)
                except ValueError as exc:
                    yield Failure(where, str(exc))
                    continue
                if paper.id in seen:
                    yield Failure(where, f"duplicate id {paper.id} (kept the first record)")
                    continue
                seen.add(paper.id)
                yield paper
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            yield Failure(str(path), f"file is damaged: {exc}")


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
            yield record_to_paper(rec)
        except ValueError as exc:
            yield Failure(f"{source} entry {i}", str(exc))


def read_records(path: Path) -> Iterator[Paper | Failure]:
    """Papers from a metadata file, by its extension: .jsonl/.json(.gz) or .xml/.atom."""
    name = path.name.lower()
    if name.endswith((".xml", ".atom")):
        try:
            data = path.read_bytes()
        except OSError as exc:
            yield Failure(str(path), f"cannot open: {exc.strerror or exc}")
            return
        yield from parse_atom(data, str(path))
    else:
        yield from read_jsonl(path)


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


_ARXIV_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z\-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")


def fetch_arxiv_pdf(paper_id: str, dest: Path, max_mb: float, timeout: float = 30.0) -> Path:
    """Download arxiv.org/pdf/<id> into dest (a folder); raises NetworkError when offline, SourceError
    when the id is not an arXiv id or the reply is not a PDF or too large."""
    from paperchat.errors import SourceError

    if not _ARXIV_ID.match(paper_id):
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
