"""The feed half of the facade: what is new in the followed topics (`digest`), following by slug, ratings and
the For you feed ranked by them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.errors import NotFound
from paperchat.settings import Settings

if TYPE_CHECKING:
    from paperchat.catalog.feed import Collection
    from paperchat.digest import Digest
    from paperchat.foryou import ForYou
    from paperchat.importing import ImportReport
    from paperchat.library import Library


class FeedOps:
    """Digest and follows of any kind of topic (a mixin: it needs `settings` and an open `library`)."""

    settings: Settings
    library: Library

    def digest(self, since: dt.date | None = None, peek: bool = False, for_you: bool = False) -> Digest:
        """New papers (first ingested after the last visit, or after the start of day `since`, UTC) in each
        followed topic; the last visit moves to now unless `peek` or `since` is given. `for_you`: each topic's
        papers in the For you model's order instead of newest first."""
        from paperchat.digest import digest

        start = dt.datetime.combine(since, dt.time.min, tzinfo=dt.UTC) if since else None
        got = digest(self.library, start, peek=peek or since is not None)
        if for_you:
            from dataclasses import replace

            from paperchat.foryou import order_by_profile

            got = replace(got, topics=[replace(t, papers=order_by_profile(self.library, t.papers)) for t in got.topics])
        return got

    def rate(self, paper_id: str, value: int) -> None:
        """Rate a paper: +1 "more like this", -1 "not interested", 0 clears the rating.

        Raises:
            NotFound: the paper is not in the library.
        """
        if self.library.catalog.get(paper_id) is None:
            raise NotFound(f"paper {paper_id} is not in the library", "see `paperchat topics show SLUG` for paper ids")
        self.library.catalog.rate(paper_id, value)

    def ratings(self) -> dict[str, int]:
        """Every rated paper: id -> +1 or -1."""
        return self.library.catalog.ratings()

    def for_you(self, since: dt.date | None = None, k: int = 20) -> ForYou:
        """New papers (listed since `since`, else stored since the last visit, else the newest week) ranked by
        a model of this library's ratings, saves, collections and follows, each with its reasons."""
        from paperchat.foryou import for_you

        return for_you(self.library, since=since, k=k)

    def topic_kind(self, slug: str) -> str | None:
        """'rules', 'discovered' or 'collection' for a known topic slug, else None."""
        cat = self.library.catalog
        if slug in self.library.topics.by_slug:
            return "rules"
        if slug in {t.slug for t in cat.discovered()}:
            return "discovered"
        if slug in {c.slug for c in cat.collections()}:
            return "collection"
        return None

    def follow(self, slug: str, on: bool = True) -> None:
        """Follow (or unfollow) a hand-written topic, a discovered topic or a collection.

        Raises:
            NotFound: no topic or collection has this slug (unfollowing an unknown slug is allowed).
        """
        if on and self.topic_kind(slug) is None:
            raise NotFound(f"no topic {slug!r}", "list them with `paperchat topics`, `paperchat topics --trending` or `paperchat import --list`")
        self.library.catalog.follow(slug, on)

    def import_collection(self, path: Path, name: str) -> ImportReport:
        """Import a BibTeX or CSL-JSON file (a Zotero export) as the collection `name` (added to when it
        exists): entries in the store join it, entries with a title and an abstract are ingested and join it,
        the rest (and broken entries, by line) are reported.

        Raises:
            SourceError: the file cannot be read as references.
            InputError: the name is empty or a topic's slug.
        """
        from paperchat.importing import import_collection

        return import_collection(self.library, path, name, self.ingest_papers)  # type: ignore[attr-defined]

    def collections(self) -> list[Collection]:
        """The personal collections, by name."""
        return self.library.catalog.collections()

    def collection_papers(self, slug: str) -> list[str]:
        """Ids of a collection's papers, newest first.

        Raises:
            NotFound: no such collection.
        """
        if slug not in {c.slug for c in self.library.catalog.collections()}:
            raise NotFound(f"no collection {slug!r}", "list them with `paperchat import --list`")
        return self.library.catalog.collection_papers(slug)
