"""Reading discovered topics: seeded samples of papers beside each label, coherence numbers, and how the
gold papers of a question set fall into topics (to judge by hand whether a gold paper's topic fits its
question)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from paperchat.catalog import DiscoveredTopic
from paperchat.discovery.labels import npmi_coherence, phrases
from paperchat.library import Library
from paperchat.text import printable


def sample_topics(lib: Library, per_topic: int = 5, seed: int = 0, limit: int | None = None, primary: bool = True) -> str:
    """Each topic's label, parent, size and top phrases, then `per_topic` of its papers picked with `seed`
    (its primary members: papers whose best tag it is; all tagged papers with primary=False)."""
    rng = random.Random(seed)
    topics = lib.catalog.discovered()
    if limit is not None:
        topics = rng.sample(topics, min(limit, len(topics)))
    lines = []
    for t in topics:
        ids = sorted(lib.catalog.tagged_papers(t.slug, primary=primary))
        picked = rng.sample(ids, min(per_topic, len(ids)))
        papers = lib.catalog.get_many(picked)
        lines.append(f"\n## {t.label}  [{t.slug}]  {t.size} papers, under {t.parent or '-'} ({t.parent_share:.0%})")
        lines.append(f"   phrases: {'; '.join(t.terms)}")
        for pid in picked:
            lines.append(printable(f"   - {pid} | {papers[pid].title[:110]}"))
    return "\n".join(lines)


def coherence(lib: Library, top: int = 5) -> dict[str, float]:
    """Mean NPMI of each topic's top phrases over the corpus (paper-level co-occurrence), and the mean cosine of
    papers to their own topic's centroid; each as the mean over topics."""
    topics = lib.catalog.discovered()
    want = {p.lower(): i for t in topics for i, p in enumerate(t.terms[:top])}
    keys = {_key(p) for p in want}
    docs: dict[str, set[int]] = {k: set() for k in keys}
    n = 0
    for n, paper in enumerate(lib.catalog.iter_papers(), start=1):
        for key, _ in phrases(f"{paper.title}. {paper.abstract}"):
            if key in docs:
                docs[key].add(n)
    npmi = [npmi_coherence([docs[_key(p)] for p in t.terms[:top]], max(n, 1)) for t in topics]
    return {"npmi": round(float(np.mean(npmi)), 3) if npmi else 0.0, "topics": len(topics), "papers": n}


def _key(phrase: str) -> str:
    found = phrases(phrase)
    return max(found, key=lambda kf: len(kf[0]))[0] if found else phrase.lower()


def gold_coverage(lib: Library, questions: Path) -> str:
    """For each question of a topic question set, its gold papers' tags (labels), to judge by hand whether a
    tag's label fits the question; ends with how many gold papers have at least one tag."""
    by_slug: dict[str, DiscoveredTopic] = {t.slug: t for t in lib.catalog.discovered()}
    lines = []
    gold_n = tagged = 0
    for raw in questions.read_text().splitlines():
        if not raw.strip():
            continue
        q = json.loads(raw)
        tags = lib.catalog.tags_of(q.get("gold_papers", []))
        lines.append(printable(f"\n? [{q.get('topic', '-')}] {q['question'][:160]}"))
        for pid in q.get("gold_papers", []):
            gold_n += 1
            mine = tags.get(pid, [])
            tagged += bool(mine)
            shown = "; ".join(f"{by_slug[s].label} ({sc:.2f})" for s, sc in mine if s in by_slug) or "(no tags)"
            lines.append(printable(f"   {pid}: {shown}"))
    lines.append(f"\n{tagged} of {gold_n} gold papers carry at least one tag")
    return "\n".join(lines)
