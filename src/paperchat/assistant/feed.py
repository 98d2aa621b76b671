"""The feed half of the facade: what is new in the followed topics (`digest`) and following by slug."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.errors import NotFound
from paperchat.settings import Settings

if TYPE_CHECKING:
    from paperchat.catalog_feed import Collection
    from paperchat.digest import Digest
    from paperchat.importing import ImportReport
    from paperchat.library import Library


class FeedOps:
    """Digest and follows of any kind of topic (a mixin: it needs `settings` and an open `library`)."""

    settings: Settings
    library: Library

    def digest(self, since: dt.date | None = None, peek: bool = False) -> Digest:
        """New papers (first ingested after the last visit, or after the start of day `since`, UTC) in each
        followed topic; the last visit moves to now unless `peek` or `since` is given."""
        from paperchat.digest import digest

        start = dt.datetime.combine(since, dt.time.min, tzinfo=dt.UTC) if since else None
        return digest(self.library, start, peek=peek or since is not None)

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
