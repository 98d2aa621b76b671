"""Topic discovery: fine-grained topics found by clustering the papers' abstract vectors, with tags.

The vectors are the MiniLM abstract vectors already in the store (the lexical snapshot keeps a copy of every
chunk's vector, row-aligned with its ids), so discovery embeds nothing. Clustering is scikit-learn's k-means
on the unit vectors (spherical in effect), seeded, so a re-run on the same corpus gives the same topics.
Labels come from paperchat.discovery.labels. A re-run keeps a surviving topic's slug: old and new topics are
matched by the papers they share (Jaccard of their primary members). Each paper is tagged with its closest
topics by cosine to the centroids, each tag said by the paper (a word of the topic's label in its title or
abstract) unless the paper is very close to the topic; papers ingested later are tagged the same way at
ingest (`tag_papers`). A paper under `min_similarity` to its own cluster's centroid is that cluster's
periphery: it is not tagged with it and not read for its label. A topic's size counts the papers it tags first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from paperchat.catalog import DiscoveredTopic
from paperchat.discovery.labels import LabelSettings, holds_label, label_clusters, label_words
from paperchat.errors import InputError
from paperchat.library import Library

MINIBATCH_ABOVE = 200_000  # papers: above this, MiniBatchKMeans (memory and time linear in the batch)


@dataclass(frozen=True)
class DiscoverySettings:
    """How topics are discovered. Stored with every run."""

    papers_per_topic: int = 100  # the number of topics is papers / this, clipped to [min_topics, max_topics]
    min_topics: int = 2
    max_topics: int = 400
    n_topics: int | None = None  # a fixed number of topics instead
    min_size: int = 5  # smaller clusters are dissolved into their neighbours
    seed: int = 0
    max_tags: int = 4
    # cosine to a topic's centroid below which a paper is not tagged with it: a paper this far from its own
    # cluster's centroid is its periphery (about the farthest 10% on the full store), not counted as a member
    # nor read for the label. Hand-read samples: the stragglers were the papers that fitted no label
    min_similarity: float = 0.70
    tag_margin: float = 0.10  # a 3rd or 4th tag only within this much of the paper's best similarity
    # a tag must be said by the paper: its title or abstract holds a word of the topic's label (see
    # topic_labels.holds_label), unless it is this close to the topic's centroid. Hand-read samples: papers
    # near a topic that never say its label's words were most of the papers that did not fit their label
    label_evidence: bool = True
    evidence_above: float = 0.85
    match_jaccard: float = 0.3  # an old topic's slug survives when a new one shares at least this much of it
    # BLAS/OpenMP threads for k-means: more threads than free cores is ruinous (busy-waiting workers): on a
    # shared 2-core machine, k-means on 17k papers took 8 s with 1 thread and 128 s with 2
    threads: int = 1
    labels: LabelSettings = field(default_factory=LabelSettings)

    def k_for(self, n: int) -> int:
        """Number of topics to cluster n papers into."""
        if self.n_topics:
            return max(1, min(self.n_topics, n))
        return max(self.min_topics, min(self.max_topics, round(n / self.papers_per_topic), n))


@dataclass
class DiscoveryReport:
    """What a discovery run found and how long it took."""

    topics: list[DiscoveredTopic]
    papers: int
    tagged: int
    kept_slugs: int
    seconds: float
    run: dict[str, Any]

    def summary(self) -> str:
        """One line describing the topics found."""
        sizes = sorted((t.size for t in self.topics), reverse=True)
        mid = sizes[len(sizes) // 2] if sizes else 0
        return (
            f"{len(self.topics)} topics over {self.papers} papers (sizes {sizes[-1] if sizes else 0}-{sizes[0] if sizes else 0}, "
            f"median {mid}); {self.tagged} papers tagged; {self.kept_slugs} slugs kept from the last run; {self.seconds:.1f} s"
        )


def abstract_vectors(lib: Library) -> tuple[list[str], np.ndarray]:
    """(paper ids, their abstract vectors) from the lexical snapshot, in catalogue order.

    A paper's abstract chunk id is its abstract_hash, so this picks exactly one vector per paper that has an
    abstract, and no PDF chunk.
    """
    snap = lib.ready_index()
    if snap.vectors is None:
        raise InputError("the search index holds no vectors", "run `paperchat doctor --repair` to rebuild it")
    ids, rows = [], []
    for pid, (abstract_hash, _, _) in sorted(lib.catalog.stored_hashes().items()):
        i = snap.pos.get(abstract_hash) if abstract_hash else None
        if i is not None:
            ids.append(pid)
            rows.append(i)
    return ids, np.ascontiguousarray(snap.vectors[np.asarray(rows, dtype=np.int64)], dtype=np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def cluster(vectors: np.ndarray, k: int, settings: DiscoverySettings) -> np.ndarray:
    """Each vector's cluster (0..k'-1, k' <= k: clusters under min_size are dissolved into the nearest others)."""
    from sklearn.cluster import KMeans, MiniBatchKMeans

    x = _unit(vectors)
    if len(x) > MINIBATCH_ABOVE:
        km: Any = MiniBatchKMeans(n_clusters=k, random_state=settings.seed, batch_size=8192, n_init=3, max_iter=50)
    else:
        km = KMeans(n_clusters=k, random_state=settings.seed, n_init=1, max_iter=100)
    labels = km.fit_predict(x).astype(np.int64)
    centroids = _unit(km.cluster_centers_.astype(np.float32))
    sizes = np.bincount(labels, minlength=k)
    keep = np.flatnonzero(sizes >= min(settings.min_size, max(sizes)))
    if len(keep) < k:  # re-assign the members of dissolved clusters to the nearest kept centroid
        labels = keep[np.argmax(x @ centroids[keep].T, axis=1)]
    # number clusters by size, then by their smallest member, so the numbering does not depend on k-means'
    _, first = np.unique(labels, return_index=True)
    present = np.unique(labels)
    order = sorted(range(len(present)), key=lambda j: (-int(np.sum(labels == present[j])), int(first[j])))
    remap = np.empty(int(labels.max()) + 1, dtype=np.int64)
    remap[present[order]] = np.arange(len(present))
    return remap[labels]


def centroids_of(vectors: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Unit mean vector of each cluster."""
    sums = np.zeros((k, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, _unit(vectors))
    return _unit(sums.astype(np.float32))


def choose_tags(
    sims: np.ndarray,
    slugs: list[str],
    settings: DiscoverySettings,
    own: np.ndarray | None = None,
    says: Callable[[int, int], bool] | None = None,
) -> list[list[tuple[str, float]]]:
    """Each row's tags: its closest topics (up to max_tags) at or above min_similarity; the 3rd and 4th only
    within tag_margin of the best, so a paper squarely in one topic is not padded with distant ones.

    Args:
        own: each row's own cluster, put first when it clears min_similarity (k-means' nearest mean and the
            nearest unit centroid can differ); None at ingest, where the closest centroid comes first.
        says: says(row, topic): whether the paper says a word of the topic's label; a topic it does not
            say is skipped unless the paper is within evidence_above of its centroid (None: no check).
    """
    out: list[list[tuple[str, float]]] = []
    m = min(settings.max_tags, sims.shape[1])
    if m == 0:
        return [[] for _ in range(sims.shape[0])]
    top = np.argsort(-sims, axis=1, kind="stable")[:, :m] if m < sims.shape[1] else np.argsort(-sims, axis=1, kind="stable")
    for r, (row, cand) in enumerate(zip(sims, top, strict=True)):
        order = [int(c) for c in cand]
        if own is not None:
            o = int(own[r])
            order = [o] + [c for c in order if c != o][: m - 1]
        best = max(float(row[c]) for c in order)
        tags: list[tuple[str, float]] = []
        for rank, c in enumerate(order):
            s = float(row[c])
            if s < settings.min_similarity or (len(tags) >= 2 and s < best - settings.tag_margin):
                if rank == 0:
                    continue  # the own cluster is too far: the next closest may still qualify
                break
            if says is not None and s < settings.evidence_above and not says(r, c):
                continue  # the paper never says what the topic's label names
            tags.append((slugs[c], round(s, 4)))
        out.append(tags)
    return out


def _slugify(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:60] or "topic"


def match_slugs(
    new_members: list[set[str]], labels: list[str], old: dict[str, set[str]], reserved: set[str], min_jaccard: float
) -> tuple[list[str], int]:
    """Slugs for new topics: an old topic's slug when they share enough papers (best pairs first), else one made
    from the label that no other topic (old, new or hand-written) holds. Returns (slugs, how many were kept)."""
    pairs = []
    for i, mem in enumerate(new_members):
        for slug, om in old.items():
            inter = len(mem & om)
            if inter:
                jac = inter / len(mem | om)
                if jac >= min_jaccard:
                    pairs.append((-jac, i, slug))
    out: list[str | None] = [None] * len(new_members)
    taken = set(reserved)
    for _, i, slug in sorted(pairs):
        if out[i] is None and slug not in taken:
            out[i] = slug
            taken.add(slug)
    kept = sum(1 for s in out if s is not None)
    taken |= set(old)  # a retired slug is not reused for a different topic
    for i, s in enumerate(out):
        if s is None:
            base = _slugify(labels[i])
            cand, n = base, 2
            while cand in taken:
                cand, n = f"{base}-{n}", n + 1
            out[i] = cand
            taken.add(cand)
    return [str(s) for s in out], kept


def corpus_hash(ids: list[str], vectors: np.ndarray) -> str:
    """Short hash of the paper ids and their vectors, naming a discovery input."""
    h = hashlib.sha256("\n".join(ids).encode())
    h.update(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    return h.hexdigest()[:16]


def discover(lib: Library, settings: DiscoverySettings | None = None) -> DiscoveryReport:
    """Cluster the store's abstracts into topics, label, nest and tag them, and store the result.

    Raises:
        InputError: when the store holds too few papers to cluster.
    """
    from threadpoolctl import threadpool_limits

    s = settings or DiscoverySettings()
    with threadpool_limits(s.threads):
        return _discover(lib, s)


def _discover(lib: Library, s: DiscoverySettings) -> DiscoveryReport:
    t0 = time.perf_counter()
    ids, vectors = abstract_vectors(lib)
    if len(ids) < max(2 * s.min_size, 2):
        raise InputError(f"only {len(ids)} papers with abstracts: too few to find topics", "ingest papers first")
    k = s.k_for(len(ids))
    labels = cluster(vectors, k, s)
    k = int(labels.max()) + 1
    papers = lib.catalog.get_many(ids)
    titles = [papers[i].title for i in ids]
    abstracts = [papers[i].abstract for i in ids]
    cents = centroids_of(vectors, labels, k)
    own = np.einsum("ij,ij->i", _unit(vectors), cents[labels])
    names = {t.name.lower() for t in lib.topics.topics}  # a discovered topic never takes a hand-written one's name
    terms = label_clusters(titles, abstracts, labels, k, s.labels, core=own >= s.min_similarity, reserved=names)
    says = _says([f"{t}\n{a}" for t, a in zip(titles, abstracts, strict=True)], [t[0] for t in terms]) if s.label_evidence else None
    # tags by cluster number first: a topic's members are the papers it tags first (its core, less the papers
    # that do not say its label, plus those whose own cluster they do not say but whose next topic they do)
    sims = _unit(vectors) @ cents.T
    tag_rows = choose_tags(sims, [str(c) for c in range(k)], s, own=labels, says=says)
    members = _first_tagged(ids, tag_rows, k)
    thin = [c for c in range(k) if len(members[c]) < s.min_size]
    if thin:  # clusters left with under min_size papers that say their label: no topic; tag again without them
        sims[:, thin] = -1.0
        tag_rows = choose_tags(sims, [str(c) for c in range(k)], s, own=labels, says=says)
        members = _first_tagged(ids, tag_rows, k)
    reserved = {t.slug for t in lib.topics.topics}
    slugs, kept = match_slugs(members, [t[0] for t in terms], lib.catalog.primary_members(), reserved, s.match_jaccard)
    topics = []
    for c in range(k):
        parents: dict[str, int] = {}
        for pid in members[c]:
            for rule_topic in papers[pid].topics:
                parents[rule_topic] = parents.get(rule_topic, 0) + 1
        parent, count = max(parents.items(), key=lambda kv: (kv[1], kv[0])) if parents else (None, 0)
        share = count / max(len(members[c]), 1)
        topics.append(
            DiscoveredTopic(slugs[c], terms[c][0], parent if share >= 0.25 else None, round(share, 3), len(members[c]), tuple(terms[c]), cents[c])
        )
    topics = [t for c, t in enumerate(topics) if members[c]]
    tags = {pid: [(slugs[int(c)], sim) for c, sim in row] for pid, row in zip(ids, tag_rows, strict=True)}
    seconds = time.perf_counter() - t0
    run = {
        "settings": asdict(s),
        "corpus_hash": corpus_hash(ids, vectors),
        "papers": len(ids),
        "topics": len(topics),
        "embedder": lib.settings.embedder,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seconds": round(seconds, 2),
        "rule_topics_hash": lib.topics.hash,
    }
    with lib.writing():
        lib.catalog.replace_discovered(topics, tags, run)
    return DiscoveryReport(topics, len(ids), sum(1 for t in tags.values() if t), kept, seconds, run)


def _first_tagged(ids: list[str], tag_rows: list[list[tuple[str, float]]], k: int) -> list[set[str]]:
    """Each cluster's members: the papers whose first tag it is (tags named by cluster number)."""
    members: list[set[str]] = [set() for _ in range(k)]
    for pid, row in zip(ids, tag_rows, strict=True):
        if row:
            members[int(row[0][0])].add(pid)
    return members


def _says(texts: list[str], labels: list[str]) -> Callable[[int, int], bool]:
    """says(paper row, topic) for choose_tags: whether the paper's text holds a word of the topic's label."""
    words = [label_words(lab) for lab in labels]
    return lambda r, c: holds_label(words[c], texts[r])


def settings_of_last_run(lib: Library) -> DiscoverySettings:
    """The tagging settings the stored topics were built with (defaults when unrecorded)."""
    raw = lib.catalog.get_meta("discovery")
    base = DiscoverySettings()
    if not raw:
        return base
    rec = json.loads(raw).get("settings", {})
    # a run recorded before label evidence existed tagged without it: new papers are tagged the same way
    kept = {k: rec[k] for k in ("max_tags", "min_similarity", "tag_margin", "evidence_above") if k in rec}
    return DiscoverySettings(**kept, label_evidence=bool(rec.get("label_evidence", False)))


def last_run(lib: Library) -> dict[str, Any] | None:
    """How the stored topics were built (settings, corpus hash, date), or None before the first run."""
    raw = lib.catalog.get_meta("discovery")
    return dict(json.loads(raw)) if raw else None


def tag_ingested(lib: Library, paper_ids: list[str], changed: list[str]) -> int:
    """After an ingest: the nearest discovered topics for new papers and for papers whose abstract changed; a
    paper ingested again unchanged keeps the tags discovery gave it. Returns how many were tagged."""
    again = set(changed)
    return tag_papers(lib, list(changed)) + tag_papers(lib, [p for p in dict.fromkeys(paper_ids) if p not in again], untagged_only=True)


def tag_papers(lib: Library, paper_ids: list[str], settings: DiscoverySettings | None = None, untagged_only: bool = False) -> int:
    """Tag papers with their closest discovered topics (the ingest hook); returns how many were tagged.

    Cheap: one query when nothing was discovered yet, else one product of the new papers' vectors with the
    centroids. The papers' own cluster is not known here, so the closest centroid comes first.

    Args:
        untagged_only: leave papers that already have tags as they are (ingest: a paper ingested again keeps
            the tags discovery gave it, which put its own cluster first; a repaired catalogue keeps the tags
            restored from the mirror).
    """
    if not paper_ids or not lib.catalog.has_discovered():
        return 0
    if untagged_only:
        have = lib.catalog.tags_of(paper_ids)
        paper_ids = [p for p in paper_ids if p not in have]
        if not paper_ids:
            return 0
    s = settings or settings_of_last_run(lib)
    topics = lib.catalog.discovered()
    snap = lib.ready_index()
    if snap.vectors is None:
        return 0
    hashes = lib.catalog.hashes(paper_ids)
    rows = [(pid, snap.pos[h[0]]) for pid, h in hashes.items() if h[0] and h[0] in snap.pos]
    if not rows:
        return 0
    cents = np.stack([t.centroid for t in topics])
    sims = _unit(snap.vectors[[r for _, r in rows]].astype(np.float32)) @ cents.T
    says = None
    if s.label_evidence:
        papers = lib.catalog.get_many([pid for pid, _ in rows])
        says = _says([f"{papers[pid].title}\n{papers[pid].abstract}" if pid in papers else "" for pid, _ in rows], [t.label for t in topics])
    chosen = choose_tags(sims, [t.slug for t in topics], s, says=says)
    lib.catalog.set_tags({pid: tags for (pid, _), tags in zip(rows, chosen, strict=True)})
    return sum(1 for t in chosen if t)
