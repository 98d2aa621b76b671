"""Discovered topics, trending and export through the facade (`paperchat topics discover|show|sample|coverage`,
`--trending`, `paperchat export bibtex`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.settings import Settings
from paperchat.topics import Momentum, momentum
from paperchat.types import Answer, Paper

if TYPE_CHECKING:
    from paperchat.catalog.topics import DiscoveredTopic
    from paperchat.discovery.clusters import DiscoveryReport
    from paperchat.discovery.membership import MembershipReport
    from paperchat.discovery.trending import TopicTrend
    from paperchat.library import Library


@dataclass(frozen=True)
class TopicDetail:
    """One topic, hand-written or discovered: its papers (newest first), how they are counted, momentum."""

    slug: str
    name: str
    paper_ids: list[str]
    how: str
    extra: str
    momentum: Momentum


class DiscoveryOps:
    """The discovery half of `Assistant` (a mixin: it needs `settings` and an open `library`)."""

    settings: Settings
    library: Library

    def trending(self, weeks: int = 4, min_count: int = 10) -> list[TopicTrend]:
        """Every topic ranked by momentum over `weeks`-week windows (those with fewer than `min_count`
        papers in both windows are listed, not ranked)."""
        from paperchat.discovery.trending import trending

        return trending(self.library, weeks=weeks, min_count=min_count)

    def discover(self, n_topics: int | None = None, seed: int = 0) -> DiscoveryReport:
        """Cluster the stored abstracts into topics, label, nest and tag them, and store the result."""
        from paperchat.discovery.clusters import DiscoverySettings, discover

        return discover(self.library, DiscoverySettings(n_topics=n_topics, seed=seed))

    def learn_membership(self) -> MembershipReport:
        """Add to each hand-written topic the papers its rules miss whose nearest neighbours its rules hold."""
        from paperchat.discovery.membership import learn_membership

        return learn_membership(self.library)

    def membership_recall(self, question_sets: list[Path]) -> list[str]:
        """Gold papers of topic question sets inside their topic, by rules and by rules plus learned members."""
        from paperchat.discovery.membership import gold_recall

        return gold_recall(self.library, question_sets)

    def topic_detail(self, slug: str, weeks: int = 4) -> TopicDetail:
        """A hand-written topic (papers by its rules), a discovered one (papers by their tags) or a collection.

        Raises:
            NotFound: no topic has this slug.
        """
        lib = self.library
        t = self.resolve_topic(slug)  # type: ignore[attr-defined]  # TopicPageOps, beside it in Assistant
        dates = [p.date for p in lib.catalog.get_many(t.paper_ids).values() if p.date]
        return TopicDetail(slug, t.name, t.paper_ids, t.how, t.extra, momentum(dates, lib.weekly_counts(), weeks=weeks))

    def papers(self, ids: Sequence[str]) -> dict[str, Paper]:
        """The papers with these ids that are in the library."""
        return self.library.catalog.get_many(ids)

    def discovered_topics(self) -> list[DiscoveredTopic]:
        """The discovered topics, largest first (empty before `discover`)."""
        return self.library.catalog.discovered()

    def topic_samples(self, per_topic: int = 5, seed: int = 0, limit: int | None = None) -> str:
        """A seeded sample of papers per discovered topic, to read by hand."""
        from paperchat.discovery.quality import sample_topics

        return sample_topics(self.library, per_topic, seed, limit)

    def topic_coherence(self) -> dict[str, float]:
        """Mean NPMI of each discovered topic's top phrases and mean cosine of papers to their topic's centre."""
        from paperchat.discovery.quality import coherence

        return coherence(self.library)

    @staticmethod
    def format_trends(trends: list[TopicTrend], limit: int = 30) -> str:
        """The trending table as text."""
        from paperchat.discovery.trending import format_trends

        return format_trends(trends, limit)

    def gold_coverage(self, questions: Path) -> str:
        """How the gold papers of a topic question set fall into the discovered topics."""
        from paperchat.discovery.quality import gold_coverage

        return gold_coverage(self.library, questions)

    def bibtex(self, saved: bool = False, topic: str | None = None, ids: Sequence[str] | None = None,
               since: dt.date | None = None, until: dt.date | None = None) -> tuple[str, int]:
        """(BibTeX of the saved papers, a topic's papers or the given ids, number of entries)."""
        from paperchat.bibtex import select, to_bibtex

        papers = select(self.library, saved=saved, topic=topic, ids=list(ids) if ids else None, since=since, until=until)
        return to_bibtex(papers), len(papers)

    def answer_bibtex(self, answer: Answer) -> tuple[str, int]:
        """(BibTeX of the papers an answer cites, in the order first cited, number of entries); papers removed
        since the answer are left out."""
        from paperchat.bibtex import to_bibtex

        ids = list(dict.fromkeys(c.paper_id for c in answer.citations))
        got = self.library.catalog.get_many(ids)
        papers = [got[i] for i in ids if i in got]
        return to_bibtex(papers), len(papers)
