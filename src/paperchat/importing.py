"""Import a reference list (a Zotero export: BibTeX or CSL-JSON) as a personal collection.

Each entry is read into an `Entry`: its arXiv id when it has one (eprint, an arxiv.org URL, a DOI
10.48550/arXiv.ID, CSL's number/archive_ID "arXiv:ID"), title, abstract, authors, date. Entries whose paper is in
the store join the collection; entries not in the store but with a title and an abstract are ingested as
records (the arXiv id when known, else `ref-<hash of the title>`) and join it; the rest are reported. A broken
BibTeX entry is reported with its line and the others are imported (bibtexparser skips the broken block).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperchat.dates import parse_date
from paperchat.errors import InputError, SourceError
from paperchat.ingestion.streams import not_a_regular_file
from paperchat.tex import plain
from paperchat.text import is_arxiv_id
from paperchat.types import Paper

if TYPE_CHECKING:
    from paperchat.ingestion.plans import IngestReport
    from paperchat.library import Library

Ingest = Callable[[Sequence[Paper]], "IngestReport"]

_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^\s?#]+?)(?:\.pdf)?(?:[?#]|$)", re.I)
_ARXIV_DOI = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/)?10\.48550/arxiv\.(.+)$", re.I)
_VERSION = re.compile(r"v\d+$")
MAX_IMPORT_MB = 50


@dataclass(frozen=True)
class Entry:
    """One reference of the file, as far as it could be read; `where` names it for a report ('refs.bib:12')."""

    where: str
    key: str
    arxiv_id: str | None
    title: str
    abstract: str
    authors: list[str]
    date: str | None

    @property
    def record_id(self) -> str:
        """The id it is stored under when ingested: its arXiv id, else one made from its title."""
        if self.arxiv_id:
            return self.arxiv_id
        return "ref-" + hashlib.sha256(" ".join(self.title.lower().split()).encode()).hexdigest()[:12]


def arxiv_id_of(*candidates: str | None) -> str | None:
    """The first arXiv id (without version) found in eprint / URL / DOI / 'arXiv:ID' texts, or None."""
    for raw in candidates:
        if not raw:
            continue
        text = raw.strip()
        m = _ARXIV_URL.search(text) or _ARXIV_DOI.match(text)
        cand = m.group(1) if m else re.sub(r"^arxiv:\s*", "", text, flags=re.I)
        cand = _VERSION.sub("", cand.strip().rstrip("/"))
        if is_arxiv_id(cand):
            return cand
    return None


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month(text: str) -> int | None:
    """A BibTeX month ('6', 'jun', 'June') as 1-12, else None."""
    t = text.strip().lower()
    if t.isdigit():
        return int(t) if 1 <= int(t) <= 12 else None
    return _MONTHS.index(t[:3]) + 1 if t[:3] in _MONTHS else None


def _clean(text: str) -> str:
    return " ".join(plain(text.replace("{", "").replace("}", "")).split())


def split_authors(field: str) -> list[str]:
    """A BibTeX author list split at the top-level word "and" (a braced "{Smith and Wesson}" is one author)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(field):
        ch = field[i]
        depth += ch == "{"
        depth -= ch == "}" and depth > 0
        if depth == 0 and (m := re.match(r"\s+and\s+", field[i:], re.IGNORECASE)) and i > start:
            out.append(field[start:i])
            i += m.end()
            start = i
            continue
        i += 1
    out.append(field[start:])
    return [a.strip() for a in out if a.strip()]


def _bib_author(name: str) -> str:
    """'Vaswani, Ashish' -> 'Ashish Vaswani'."""
    last, _, first = name.partition(",")
    return _clean(f"{first} {last}" if first.strip() else last)


def read_bibtex(text: str, source: str) -> tuple[list[Entry], list[tuple[str, str]]]:
    """(entries, [(where, why) for each block that could not be parsed]) of a BibTeX file."""
    import bibtexparser

    logging.getLogger("bibtexparser").setLevel(logging.ERROR)  # broken blocks are reported by us, one line each
    lib = bibtexparser.parse_string(text)
    bad = []
    for block in lib.failed_blocks:
        raw = (block.raw or "").strip()
        first = raw.splitlines()[0][:60] if raw else ""
        why = str(getattr(block, "error", "") or "").strip().splitlines()
        bad.append((f"{source}:{(block.start_line or 0) + 1}", f"broken entry {first!r}: {why[0] if why else 'could not be parsed'}"))
    out = []
    for e in lib.entries:
        f = {k.lower(): str(v.value) for k, v in e.fields_dict.items()}
        prefix = f.get("archiveprefix", f.get("eprinttype", "arxiv")).lower()
        eprint = f.get("eprint") if prefix == "arxiv" else None
        year, month = f.get("year", "").strip(), _month(f.get("month", ""))
        date = f.get("date") or (f"{year}-{month:02d}" if year.isdigit() and month else year or None)
        out.append(Entry(
            where=f"{source}:{(e.start_line or 0) + 1}", key=e.key, arxiv_id=arxiv_id_of(eprint, f.get("url"), f.get("doi"), f.get("arxivid")),
            title=_clean(f.get("title", "")), abstract=_clean(f.get("abstract", "")),
            authors=[_bib_author(a) for a in split_authors(f.get("author", "")) if a.strip()], date=date,
        ))
    return out, bad


def read_csl_json(text: str, source: str) -> tuple[list[Entry], list[tuple[str, str]]]:
    """(entries, problems) of a CSL-JSON file (a list of items, as Zotero exports it).

    Raises:
        SourceError: the file is not JSON, or not a list of items.
    """
    try:
        items: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{source} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", "export it again as CSL JSON or BibTeX") from exc
    except RecursionError as exc:  # a deeply nested file (thousands of levels): no CSL export looks like that
        raise SourceError(f"{source} is JSON nested too deeply to be a CSL export", "export the collection again as CSL JSON or BibTeX") from exc
    if isinstance(items, dict) and isinstance(items.get("items"), list):
        items = items["items"]
    if not isinstance(items, list):
        raise SourceError(f"{source} is JSON but not a list of CSL items", "export the collection as CSL JSON")
    out, bad = [], []
    for i, it in enumerate(items, start=1):
        where = f"{source} item {i}"
        if not isinstance(it, dict):
            bad.append((where, "not a JSON object"))
            continue
        authors = [_clean(f"{a.get('given', '')} {a.get('family', '')}" if "family" in a else str(a.get("literal", "")))
                   for a in it.get("author", []) if isinstance(a, dict)]
        parts = (it.get("issued") or {}).get("date-parts") if isinstance(it.get("issued"), dict) else None
        date = (
            "-".join(f"{int(x):02d}" for x in parts[0])
            if parts and parts[0] and all(isinstance(x, int | str) and str(x).isdigit() for x in parts[0]) else None
        )
        out.append(Entry(
            where=where, key=str(it.get("id", i)),
            arxiv_id=arxiv_id_of(*(str(it.get(k) or "") for k in ("archive_ID", "number", "URL", "DOI"))),
            title=_clean(str(it.get("title", ""))), abstract=_clean(str(it.get("abstract", ""))),
            authors=[a for a in authors if a], date=date,
        ))
    return out, bad


def read_references(path: Path) -> tuple[list[Entry], list[tuple[str, str]]]:
    """Entries of a .bib or CSL .json file (by extension, else by its first character).

    Raises:
        SourceError: missing, unreadable or too large, or not a reference file.
    """
    problem = not_a_regular_file(path)
    if problem:
        raise SourceError(problem, "give the path of a .bib or CSL .json export")
    try:
        size = path.stat().st_size
        if size > MAX_IMPORT_MB * 1024 * 1024:
            raise SourceError(f"{path} is {size / 1e6:.0f} MB (limit {MAX_IMPORT_MB} MB)", "split the export")
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise SourceError(f"no such file: {path}", "give the path of a .bib or CSL .json export") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read {path} ({exc})", "export it again as UTF-8 BibTeX or CSL JSON") from exc
    name = path.name.lower()
    if name.endswith(".json") or (not name.endswith(".bib") and text.lstrip()[:1] in "[{"):
        return read_csl_json(text, path.name)
    if "@" not in text:
        raise SourceError(f"{path} holds no BibTeX entry", "give a .bib or CSL .json export")
    return read_bibtex(text, path.name)


def entry_record(e: Entry) -> dict[str, Any]:
    """The JSON record ingest reads for an entry that is not in the store (record_to_paper's shape)."""
    rec: dict[str, Any] = {"id": e.record_id, "title": e.title, "abstract": e.abstract, "authors": e.authors}
    day = parse_date(e.date, month=True)  # a year alone is no date: it would put the paper in January's counts
    if day is not None:
        rec["published"] = day.isoformat()
    return rec


@dataclass
class ImportReport:
    """What an import did: the collection, its size, and every entry that did not join it, with why."""

    slug: str
    name: str
    entries: int = 0
    in_store: int = 0
    ingested: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (where, why): broken or not importable
    size: int = 0

    def summary(self) -> str:
        """One line of counts."""
        return (
            f"collection {self.slug!r}: {self.size} papers ({self.in_store} already in the store, {len(self.ingested)} ingested "
            f"from their abstracts) of {self.entries} entries; {len(self.problems)} reported"
        )


def slugify(name: str) -> str:
    """A collection's slug from its name: lower case, digits and hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60]


def import_collection(lib: Library, path: Path, name: str, ingest: Ingest) -> ImportReport:
    """Read a reference file and make (or add to) the collection `name`.

    Raises:
        SourceError: the file cannot be read as references.
        InputError: the name is empty or is the slug of a topic.
    """
    from paperchat.ingestion.records import record_to_paper

    slug = slugify(name)
    if not slug:
        raise InputError(f"{name!r} is no collection name", "give a name with letters or digits, e.g. --collection my-reading")
    if slug in lib.topics.by_slug or slug in {t.slug for t in lib.catalog.discovered()}:
        raise InputError(f"{slug!r} is already a topic", "choose another --collection name")
    entries, problems = read_references(path)
    rep = ImportReport(slug, name.strip(), entries=len(entries) + len(problems), problems=list(problems))
    known = lib.catalog.get_many(e.record_id for e in entries if e.title or e.arxiv_id)
    members: list[str] = []
    todo: list[Paper] = []
    for e in entries:
        if e.record_id in known and (e.arxiv_id or e.title):
            members.append(e.record_id)
        elif e.title and e.abstract:
            try:
                todo.append(record_to_paper(entry_record(e)))
            except ValueError as exc:
                rep.problems.append((e.where, f"{e.key}: {exc}"))
        else:
            what = f"arXiv {e.arxiv_id} is not in the store" if e.arxiv_id else "no arXiv id"
            rep.problems.append((e.where, f"{e.key}: {what} and no abstract to ingest it from (add it with `paperchat ingest`, then import again)"))
    rep.in_store = len(members)
    if todo:
        done = ingest(todo)
        stored = set(done.paper_ids) - {f.source for f in done.failures}
        rep.ingested = [p.id for p in todo if p.id in stored]
        rep.problems += [(f.source, f.reason) for f in done.failures]
        members += rep.ingested
    rep.size = lib.catalog.save_collection(slug, rep.name, path.name, members)
    return rep
