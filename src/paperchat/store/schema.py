"""How a chunk is kept in Chroma: its metadata (paper id, kind, page, date as yyyymmdd, one flag per topic), read
back as our `StoredChunk` and `Chunk`, and a scope as a Chroma filter. Only the store package reads or writes
these keys."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from paperchat.types import Chunk, ChunkKind, Scope

TOPIC_PREFIX = "topic_"  # the store's schema: only this module reads or writes these keys
GET_PAGE = 5000


def topic_key(slug: str) -> str:
    """The metadata key of a topic's flag."""
    return TOPIC_PREFIX + slug


def date_int(date: dt.date | None) -> int:
    """A date as the yyyymmdd integer the store and the search index keep (0 for none)."""
    return int(date.strftime("%Y%m%d")) if date else 0


def date_of(value: Any) -> dt.date | None:
    """A stored yyyymmdd date back as a date (None for 0 or a value that is no date)."""
    raw = int(value or 0)
    try:
        return dt.date(raw // 10000, raw // 100 % 100, raw % 100) if raw else None
    except ValueError:  # not written by date_int
        return None


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the store holds it: the chunk, its paper's date and the topics it is flagged with."""

    id: str
    paper_id: str
    kind: ChunkKind
    text: str = ""  # empty when an iteration left the texts out
    page: int | None = None
    start: int = 0
    end: int = 0
    date: dt.date | None = None
    topics: tuple[str, ...] = ()

    @classmethod
    def of(cls, chunk: Chunk, date: dt.date | None, topics: Sequence[str]) -> StoredChunk:
        """A chunk to store, with its paper's date and topics."""
        return cls(
            id=chunk.id, paper_id=chunk.paper_id, kind=chunk.kind, text=chunk.text, page=chunk.page,
            start=chunk.start, end=chunk.end, date=date, topics=tuple(topics),
        )

    @property
    def chunk(self) -> Chunk:
        """Our Chunk (without date and topics)."""
        return Chunk(id=self.id, paper_id=self.paper_id, text=self.text, kind=self.kind, page=self.page, start=self.start, end=self.end)


@dataclass(frozen=True)
class StoredBatch:
    """One page of an iteration over the store: chunks and, when asked for, their vectors (row-aligned)."""

    chunks: list[StoredChunk]
    vectors: np.ndarray | None = None  # float32, one row per chunk

    @property
    def ids(self) -> list[str]:
        """The chunk ids, in order."""
        return [c.id for c in self.chunks]


def metadata_of(c: StoredChunk) -> dict[str, Any]:
    """The Chroma metadata of a chunk: paper id, kind, page, date and its topic flags."""
    meta: dict[str, Any] = {
        "paper_id": c.paper_id,
        "kind": c.kind,
        "page": c.page or 0,
        "start": c.start,
        "end": c.end,
        "date": date_int(c.date),
    }
    for t in c.topics:
        meta[topic_key(t)] = True
    return meta


def stored_of(cid: str, text: str | None, meta: Mapping[str, Any]) -> StoredChunk:
    """A stored chunk read back from its id, text and metadata."""
    return StoredChunk(
        id=cid,
        paper_id=str(meta.get("paper_id", "")),
        kind=cast(ChunkKind, meta.get("kind", "abstract")),
        text=text or "",
        page=int(meta.get("page") or 0) or None,
        start=int(meta.get("start", 0)),
        end=int(meta.get("end", 0)),
        date=date_of(meta.get("date")),
        topics=tuple(k[len(TOPIC_PREFIX) :] for k, v in meta.items() if k.startswith(TOPIC_PREFIX) and v),
    )


def chunk_of(cid: str, text: str, meta: Mapping[str, Any]) -> Chunk:
    """Our Chunk from its id, text and metadata."""
    page = int(meta.get("page") or 0)
    return Chunk(
        id=cid,
        paper_id=str(meta["paper_id"]),
        text=text,
        kind=meta.get("kind", "abstract"),
        page=page or None,
        start=int(meta.get("start", 0)),
        end=int(meta.get("end", 0)),
    )


def scope_where(scope: Scope) -> dict[str, Any] | None:
    """The Chroma metadata filter of a scope (None: everything)."""
    clauses: list[dict[str, Any]] = []
    if scope.kind == "topic" and scope.topic:
        clauses.append({topic_key(scope.topic): True})
    if scope.kind == "paper" and scope.paper_id:
        clauses.append({"paper_id": scope.paper_id})
    if scope.since:
        clauses.append({"date": {"$gte": date_int(scope.since)}})
    if scope.until:
        clauses.append({"date": {"$lte": date_int(scope.until)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def with_kind(clause: dict[str, Any], kind: ChunkKind | None) -> dict[str, Any]:
    """A Chroma filter narrowed to one kind of chunk (abstract or pdf) when given."""
    return clause if kind is None else {"$and": [clause, {"kind": kind}]}
