"""The small records the facade returns, beside our own types (`paperchat.types`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from paperchat.topics import Momentum
from paperchat.types import Paper


@dataclass(frozen=True)
class TopicSummary:
    """One topic of the overview: its size, momentum and whether it is followed."""

    slug: str
    name: str
    papers: int
    chunks: int
    following: bool
    momentum: Momentum


@dataclass(frozen=True)
class RelatedTopic:
    """A topic sharing papers with another one."""

    slug: str
    name: str
    shared: int


@dataclass(frozen=True)
class TopicPage:
    """What a topic page shows above its paper list."""

    slug: str
    name: str
    description: str
    momentum: Momentum
    related: list[RelatedTopic]
    following: bool
    total: int
    kind: str = "rules"  # 'rules', 'discovered' or 'collection'


@dataclass(frozen=True)
class PaperList:
    """One page of a topic's papers, newest first."""

    papers: list[Paper]
    total: int
    page: int
    pages: int


@dataclass(frozen=True)
class PdfResult:
    """What adding one PDF did. `outcome`: 'added' (ingested now), 'known' (the same bytes are already
    stored) or 'had_pdf' (the paper already has its PDF); `paper` is None only when it failed (`error`)."""

    outcome: Literal["added", "known", "had_pdf", "failed"]
    paper: Paper | None = None
    chunks_added: int = 0
    seconds: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class TopicPreview:
    """The topic rules applied to a metadata file without ingesting it (`paperchat topics --check`)."""

    papers: int
    in_any: int
    counts: dict[str, int]
    samples: dict[str, list[tuple[str, str, list[str]]]]  # slug -> (id, title, matched phrases)
