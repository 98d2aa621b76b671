"""Topic pages of every kind through the facade: hand-written topics (papers by their rules), discovered topics
(papers by their tags) and personal collections (papers by membership) share one page, one paper list and one
chat; `resolve_topic` says which kind a slug is and which papers it holds."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from paperchat.assistant.records import PaperList, RelatedTopic, TopicPage
from paperchat.errors import NotFound
from paperchat.settings import Settings
from paperchat.topics import momentum
from paperchat.types import Scope

if TYPE_CHECKING:
    from paperchat.library import Library

TopicKind = Literal["rules", "discovered", "collection"]


@dataclass(frozen=True)
class TopicMembers:
    """A topic of any kind: its name, a description for its page, how its papers are counted, the papers."""

    slug: str
    name: str
    kind: TopicKind
    description: str
    how: str
    extra: str
    paper_ids: list[str]  # newest first


class TopicPageOps:
    """Pages, paper lists, chat scopes and tags for topics of every kind (a mixin: it needs `settings` and an
    open `library`)."""

    settings: Settings
    library: Library

    def topic_names(self) -> dict[str, str]:
        """Slug -> name of every hand-written topic, in the topics file's order."""
        return {t.slug: t.name for t in self.library.topics.topics}

    def all_topic_names(self) -> dict[str, str]:
        """Slug -> name of every topic a page can show: hand-written ones (in the topics file's order), then the
        collections (by name), then the discovered topics (largest first)."""
        cat = self.library.catalog
        names = self.topic_names()
        names.update({c.slug: c.name for c in cat.collections() if c.slug not in names})
        names.update({t.slug: t.label for t in cat.discovered() if t.slug not in names})
        return names

    def resolve_topic(self, slug: str, learned: bool = True) -> TopicMembers:
        """The topic with this slug, of whichever kind, with its papers (newest first); a hand-written topic's
        include the papers `paperchat topics learn` added unless `learned` is False (its page counts by its rules).

        Raises:
            NotFound: no hand-written or discovered topic and no collection has this slug.
        """
        lib = self.library
        cat = lib.catalog
        if slug in lib.topics.by_slug:
            t = lib.topics.by_slug[slug]
            ids, how = cat.topic_papers(slug), "by its keyword rules"
            gained = (cat.learned_members().get(slug, set()) if learned else set()) - set(ids)
            if gained:  # `paperchat topics learn` has run: the papers the rules miss that their neighbours hold
                dated = cat.get_many(list(gained) + ids)
                ids = sorted(dated, key=lambda i: (dated[i].date or dt.date.min, i), reverse=True)
                how = f"by its keyword rules and {len(gained)} papers whose nearest neighbours they hold"
            return TopicMembers(slug, t.name, "rules", t.description, how, "", ids)
        found = {t.slug: t for t in cat.discovered()}
        if slug in found:
            d = found[slug]
            under = lib.topics.by_slug[d.parent].name if d.parent in lib.topics.by_slug else ""
            desc = "A fine-grained topic found in the corpus" + (f", under {under}" if under else "")
            desc += f"; its papers speak of {'; '.join(d.terms[:4])}." if d.terms else "."
            extra = f"\nunder: {d.parent or '-'} ({d.parent_share:.0%} of its papers)\nphrases: {'; '.join(d.terms)}"
            how = "by tags (papers whose 2-4 closest topics include it)"
            return TopicMembers(slug, d.label, "discovered", desc, how, extra, cat.tagged_papers(slug))
        cols = {c.slug: c for c in cat.collections()}
        if slug in cols:
            c = cols[slug]
            desc = f"Your collection, imported from {c.source}. Questions search only its papers."
            return TopicMembers(slug, c.name, "collection", desc, "as a personal collection", f"\nimported from: {c.source}",
                                cat.collection_papers(slug))
        raise NotFound(f"no topic {slug!r}", "list them with `paperchat topics --trending`, `paperchat import --list` or run `paperchat topics discover`")

    def chat_scope(self, slug: str, since: dt.date | None = None) -> Scope:
        """What "Ask about this topic" searches: a hand-written topic's scope (its rules as a prior), or a hard
        filter on a collection's or a discovered topic's papers; an unknown slug gets the topic scope (and its
        error when asked).
        """
        cat = self.library.catalog
        if slug in self.library.topics.by_slug:
            return Scope.for_topic(slug, since=since)
        if slug in {c.slug for c in cat.collections()}:
            return Scope.for_collection(slug, since=since)
        if slug in {t.slug for t in cat.discovered()}:
            return Scope.for_discovered(slug, since=since)
        return Scope.for_topic(slug, since=since)

    def topic_page(self, slug: str, now: dt.date | None = None) -> TopicPage:
        """Name, description, momentum (as of `now`, else the newest date) and up to five related topics,
        ranked by the Jaccard overlap of their papers with this one's; for any kind of topic.

        Raises:
            NotFound: no such topic.
        """
        lib = self.library
        cat = lib.catalog
        t = self.resolve_topic(slug, learned=False)  # momentum and size by the rules, as the page says
        following = slug in cat.followed()
        if t.kind == "rules":
            m = momentum(cat.topic_dates(slug), lib.weekly_counts(), now=now)
            shared = cat.shared_papers(slug)
            counts = cat.topic_counts()
        elif t.kind == "discovered":  # counted in SQL: a large topic's papers are not loaded for a count
            dates, shared_d = cat.tagged_overview(slug)
            m = momentum(dates, lib.weekly_counts(), now=now)
            shared = Counter(shared_d)
            counts = cat.topic_counts() | cat.tag_counts()
        else:
            papers = cat.get_many(t.paper_ids)
            m = momentum([p.date for p in papers.values() if p.date], lib.weekly_counts(), now=now)
            # related: the hand-written and discovered topics its papers also belong to
            shared = Counter(s for p in papers.values() for s in p.topics)
            shared.update(s for tags in cat.tags_of(t.paper_ids).values() for s, _ in tags if s != slug)
            counts = cat.topic_counts() | cat.tag_counts()
        mine = len(t.paper_ids)
        ranked = sorted(((n / max(1, mine + counts.get(o, 0) - n), o) for o, n in shared.items() if n), reverse=True)[:5]
        names = self.all_topic_names()
        related = [RelatedTopic(o, names[o], shared[o]) for _, o in ranked if o in names]
        return TopicPage(slug, t.name, t.description, m, related, following, mine, t.kind)

    def topic_papers(self, slug: str, page: int = 1, filter_text: str = "", page_size: int = 20) -> PaperList:
        """One page of a topic's papers (any kind), newest first, filtered by words of the title or authors.

        Raises:
            NotFound: no such topic.
        """
        cat = self.library.catalog
        ids = self.resolve_topic(slug, learned=False).paper_ids
        if filter_text.strip():
            f = filter_text.lower().strip()
            every = cat.get_many(ids)
            ids = [i for i in ids if f in (every[i].title + " " + " ".join(every[i].authors)).lower()]
        total = len(ids)
        pages = max(1, (total + page_size - 1) // page_size)
        page = min(max(1, int(page or 1)), pages)
        shown = ids[(page - 1) * page_size : page * page_size]
        got = cat.get_many(shown)
        return PaperList([got[i] for i in shown if i in got], total, page, pages)

    def paper_tags(self, paper_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
        """Each paper's fine-grained tags (discovered topics) as (slug, label), best first; untagged papers are
        left out."""
        cat = self.library.catalog
        tags = cat.tags_of(paper_ids)
        if not tags:
            return {}
        labels = {t.slug: t.label for t in cat.discovered()}
        return {pid: [(s, labels[s]) for s, _ in ts if s in labels] for pid, ts in tags.items()}
