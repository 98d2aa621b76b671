"""What the edges need without an open library: question checks, answerer names, topic-rule previews and
the data-dir doctor."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.assistant.records import TopicPreview
from paperchat.errors import PaperchatError
from paperchat.settings import Settings
from paperchat.types import Paper

if TYPE_CHECKING:
    from paperchat.doctor import Health, RepairReport
    from paperchat.providers.answerers import Answerer

REPAIR = "paperchat doctor --repair"


def check_question(question: str, settings: Settings) -> None:
    """Refuse a question over settings.max_question_chars before any work is done (InputError)."""
    from paperchat.qa import check_question as check

    check(question, settings.max_question_chars)


def resolve_answerer(settings: Settings, name: str | None = None) -> Answerer:
    """The answerer named `name` (default settings.answerer): 'extractive', 'openai:<model>' or 'local'.

    Raises:
        ConfigError: an unknown name (the message lists the choices) or a missing key.
    """
    from paperchat.providers.answerer_factory import get_answerer

    return get_answerer(settings, name)


def llm_model(name: str) -> str | None:
    """The model of an 'openai:<model>' answerer name; None for every other name (even invalid ones)."""
    from paperchat.providers.answerer_factory import parse_answerer

    try:
        spec = parse_answerer(name)
    except PaperchatError:
        return None
    return spec.model if spec.kind == "openai" else None


def preview_topics(settings: Settings, records: Path, sample: int, seed: int = 0) -> TopicPreview:
    """Apply the topic rules to a metadata file (no ingest): counts and a seeded sample per topic."""
    from paperchat.ingestion.records import read_records
    from paperchat.topics import TopicSet

    ts = TopicSet.load(settings.topics_file)
    papers = [p for p in read_records(records) if isinstance(p, Paper)]
    members = {p.id: ts.match(p) for p in papers}
    counts = Counter(t for v in members.values() for t in v)
    rng = random.Random(seed)
    samples: dict[str, list[tuple[str, str, list[str]]]] = {}
    for t in ts.topics:
        mine = [p for p in papers if t.slug in members[p.id]]
        samples[t.slug] = [(p.id, p.title, sorted(set(ts.explain(p, t.slug)))) for p in rng.sample(mine, min(sample, len(mine)))]
    return TopicPreview(len(papers), sum(1 for v in members.values() if v), {t.slug: counts.get(t.slug, 0) for t in ts.topics}, samples)


def check_data_dir(settings: Settings) -> Health:
    """Check that the catalogue, the vector store and the search index agree (opens each part on its own)."""
    from paperchat import doctor

    return doctor.check(settings)


def repair_data_dir(settings: Settings) -> RepairReport:
    """Move damaged files aside, re-embed missing chunks, drop orphans and rebuild the search index."""
    from paperchat import doctor

    return doctor.repair(settings)


def pdf_folder(settings: Settings) -> Path:
    """The one folder of stored PDF copies (`<sha256>.pdf`), the only files the app serves; made when missing."""
    from paperchat.ingestion.pdfstore import store_dir

    folder = store_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
