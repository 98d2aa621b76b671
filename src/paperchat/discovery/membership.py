"""Membership that generalises: a hand-written topic's keyword rules are seeds, and the papers' vectors add
the papers the rules miss.

A paper outside a topic's rules joins it when at least `min_share` of its `neighbours` nearest papers (cosine
over the MiniLM abstract vectors, the paper itself left out) are rule members. Read locally like this, a paper
joins a topic only from inside a neighbourhood the rules already fill; a classifier trained on the rule matches
(logistic regression, 5-fold) and a centroid bar were tried against it on hand-read samples and gave way to
it (see docs/topics.md). A topic whose definition says `learn = false` gains nothing (retrieval papers
beside RAG ones read alike to the vectors). Learned members are stored apart from the rule members
(`paper_topics_learned`), so every count can say which membership it uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from paperchat.discovery.clusters import abstract_vectors
from paperchat.library import Library


@dataclass(frozen=True)
class MembershipSettings:
    """How the vectors decide membership beyond the rules."""

    neighbours: int = 20  # nearest papers read per paper
    min_share: float = 0.75  # ... of which at least this share must be rule members (chosen on hand-read samples)
    batch: int = 2048  # rows of the similarity product at a time (memory: batch x papers floats)
    threads: int = 1  # BLAS threads (see DiscoverySettings.threads)


@dataclass
class MembershipReport:
    """Per topic: rule members, learned members added."""

    rules: dict[str, int]
    gained: dict[str, int]
    settings: MembershipSettings

    def lines(self) -> list[str]:
        """One line per topic."""
        return [f"{slug:<24} rules {self.rules[slug]:6d}  +{self.gained.get(slug, 0):5d} by neighbours" for slug in self.rules]


def neighbour_shares(vectors: np.ndarray, member: np.ndarray, settings: MembershipSettings) -> np.ndarray:
    """For each row, the share of its `neighbours` nearest other rows (cosine) that are members, one column
    per topic (member: papers x topics booleans)."""
    x = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    x = x.astype(np.float32)
    n, k = len(x), min(settings.neighbours, len(x) - 1)
    out = np.zeros((n, member.shape[1]), dtype=np.float32)
    if k <= 0:
        return out
    for a in range(0, n, settings.batch):
        sims = x[a : a + settings.batch] @ x.T
        rows = np.arange(sims.shape[0])
        sims[rows, a + rows] = -2.0  # a paper is not its own neighbour
        near = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        out[a : a + settings.batch] = member[near].mean(axis=1)
    return out


def learn_membership(lib: Library, settings: MembershipSettings | None = None) -> MembershipReport:
    """Find each hand-written topic's learned members and store them (replacing the last run's)."""
    from threadpoolctl import threadpool_limits


    s = settings or MembershipSettings()
    topics = list(lib.topics.topics)
    ids, vectors = abstract_vectors(lib)
    rules = lib.catalog.rule_members()
    member = np.array([[pid in rules.get(t.slug, ()) for t in topics] for pid in ids], dtype=np.float32)
    with threadpool_limits(s.threads):
        shares = neighbour_shares(vectors, member, s)
    learned: dict[str, dict[str, float]] = {}
    for j, t in enumerate(topics):
        if not t.learn:
            continue
        rows = np.flatnonzero((member[:, j] == 0) & (shares[:, j] >= s.min_share))
        learned[t.slug] = {ids[i]: round(float(shares[i, j]), 3) for i in rows}
    with lib.writing():
        lib.catalog.replace_learned(learned, {"neighbours": s.neighbours, "min_share": s.min_share, "papers": len(ids)})
    return MembershipReport(
        {t.slug: int(member[:, j].sum()) for j, t in enumerate(topics)}, {k: len(v) for k, v in learned.items()}, s
    )


def gold_recall(lib: Library, question_sets: list[Path]) -> list[str]:
    """How many of the question sets' gold papers are inside their question's topic, by rules and by rules
    plus learned members (each gold paper counted once per topic)."""
    gold: dict[str, set[str]] = {}
    for path in question_sets:
        for raw in path.read_text().splitlines():
            if raw.strip():
                q = json.loads(raw)
                if q.get("topic"):
                    gold.setdefault(q["topic"], set()).update(q.get("gold_papers", []))
    learned = lib.catalog.learned_members()
    members = lib.catalog.rule_members()
    lines, tot, by_rules, by_both = [], 0, 0, 0
    for slug, papers in sorted(gold.items()):
        rules = papers & members.get(slug, set())
        both = rules | (papers & learned.get(slug, set()))
        tot, by_rules, by_both = tot + len(papers), by_rules + len(rules), by_both + len(both)
        lines.append(f"{slug:<24} gold {len(papers):3d}  rules {len(rules):3d}  rules+neighbours {len(both):3d}")
    lines.append(f"{'all':<24} gold {tot:3d}  rules {by_rules:3d}  rules+neighbours {by_both:3d}")
    return lines
