"""The open library: settings, embedder, vector store, catalogue, lexical index and topics, opened once."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

from paperchat.catalog import Catalog
from paperchat.lexical import LexicalIndex, LexicalSnapshot
from paperchat.providers.embedders import Embedder, get_embedder
from paperchat.settings import Settings
from paperchat.store import TOPIC_PREFIX, VectorStore, topic_key
from paperchat.topics import TopicSet, week_start

WEEKLY_COUNTS_KEY = "weekly_counts"


class Library:
    """Everything a question or a page needs, opened once per process.

    Opening syncs topic membership when the topics file changed since the last run (metadata only).
    """

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder or get_embedder(settings)
        self.topics = TopicSet.load(settings.topics_file)
        self.store = VectorStore(settings, self.embedder)
        self.catalog = Catalog(settings.catalog_path)
        self.lexical = LexicalIndex(settings.lexical_dir)
        self.sync_topics()

    def close(self) -> None:
        self.catalog.close()

    # -- topics ------------------------------------------------------------------------------------

    def sync_topics(self) -> bool:
        """Recompute every paper's topics when the rules changed; returns True when something changed."""
        if self.catalog.get_meta("topics_hash") == self.topics.hash:
            return False
        if self.catalog.count() == 0:
            self.catalog.set_meta("topics_hash", self.topics.hash)
            return False
        memberships = {p.id: self.topics.match(p) for p in self.catalog.iter_papers()}
        self.lexical.mark_dirty()
        slugs = [t.slug for t in self.topics.topics]
        for ids, _docs, metas, _ in list(self.store.iter_all()):
            new_metas = []
            for meta in metas:
                mine = set(memberships.get(str(meta.get("paper_id")), []))
                m = {k: v for k, v in meta.items() if not k.startswith(TOPIC_PREFIX)}
                # Flags are set to False rather than removed: Chroma merges metadata on update.
                for k in meta:
                    if k.startswith(TOPIC_PREFIX):
                        m[k] = False
                for s in slugs:
                    m[topic_key(s)] = s in mine
                new_metas.append(m)
            self.store.update_metadata(ids, new_metas)
        self.catalog.replace_all_topics(memberships)
        self.lexical.rebuild(self.store)
        self.catalog.set_meta("topics_hash", self.topics.hash)
        return True

    # -- corpus-wide counts ---------------------------------------------------------------------------

    def weekly_counts(self) -> dict[dt.date, int]:
        """All new papers per week: the bundled corpus-wide counts when known, else the catalogue's."""
        raw = self.catalog.get_meta(WEEKLY_COUNTS_KEY)
        if raw:
            return {dt.date.fromisoformat(k): int(v) for k, v in json.loads(raw).items()}
        return dict(Counter(week_start(d) for d in self.catalog.topic_dates(None)))

    def set_weekly_counts(self, path: Path) -> None:
        """Record corpus-wide weekly counts ({"YYYY-MM-DD" (Monday): n}) from a JSON file."""
        data = json.loads(path.read_text())
        self.catalog.set_meta(WEEKLY_COUNTS_KEY, json.dumps({str(k): int(v) for k, v in data.items()}))

    def ready_lexical(self) -> LexicalSnapshot:
        """The lexical index, consistent with the store (see LexicalIndex.ensure)."""
        return self.lexical.ensure(self.store)
