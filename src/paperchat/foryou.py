"""For you: new papers ranked by a model of what this researcher rates (`paperchat feed`, the app's For you tab,
`digest --for-you`).

Signals: "more like this" (+1) and "not interested" (-1) ratings, and as positives the saved papers and the
papers of the researcher's collections. The model is an L2-regularised logistic regression over each paper's
abstract vector (MiniLM, from the search index) and one-hot features of its hand-written topics and
discovered-topic tags. Followed topics are its prior: a sample of their papers counts as one rating's worth of
positive evidence, so with no rating the feed follows the follows, and with many ratings the ratings decide.
Papers of the whole library (a seeded sample) are the background negatives: one "more like this" is enough
to rank by. The model is small enough to refit on every request (well under a second for 1,000 ratings: see
`paperchat eval feed`, which prints the fit time).

Reasons come from the model's own evidence: the rated, saved or collected paper nearest to a candidate, and
the candidate's topic or tag with the largest positive weight.
"""

from __future__ import annotations

import datetime as dt
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from paperchat.catalog.feed import LAST_VISIT_KEY, read_visit, utc_now
from paperchat.discovery.clusters import abstract_vectors
from paperchat.types import Paper

if TYPE_CHECKING:
    from paperchat.library import Library

VECTOR_SCALE = 4.0  # unit vectors scaled so their weights are regularised like the one-hot features'
TOPIC_WEIGHT = 1.0  # one-hot value of a topic or tag
C = 1.0  # inverse regularisation strength of the logistic regression
PRIOR_WEIGHT = 1.0  # the followed topics' papers count, all together, as this many positive ratings
PRIOR_SAMPLE = 200  # followed-topic papers sampled as the prior
BACKGROUND = 1000  # library papers sampled as background negatives
NEAR_COSINE = 0.35  # a rated paper closer than this is named as a reason
FEW_RATINGS = 5  # below this many positive signals the feed says more ratings help
WINDOW_DAYS = 7  # the default window when nothing arrived since the last visit


@dataclass(frozen=True)
class Signal:
    """One paper the researcher told us about: label 1 (wants more like it) or 0 (not interested)."""

    paper_id: str
    label: int
    why: str  # "rated up", "saved", "in your collection X", "marked not interested"


def signals(lib: Library) -> list[Signal]:
    """Ratings, saves and collection members; an explicit rating wins over a save or a collection."""
    cat = lib.catalog
    out: dict[str, Signal] = {}
    for c in cat.collections():
        for pid in cat.collection_papers(c.slug):
            out[pid] = Signal(pid, 1, f"in your collection {c.name}")
    for pid in cat.saved():
        out[pid] = Signal(pid, 1, "saved")
    for pid, v in cat.ratings().items():
        out[pid] = Signal(pid, 1 if v > 0 else 0, "rated up" if v > 0 else "marked not interested")
    return list(out.values())


@dataclass
class FeatureSpace:
    """Every paper with an abstract vector: ids, unit vectors, and each paper's topics and tags (slugs)."""

    ids: list[str]
    vectors: np.ndarray
    topics: list[list[str]]
    names: dict[str, str]  # slug -> display name of every hand-written topic, discovered topic and collection
    rule_slugs: frozenset[str] = frozenset()  # the hand-written topics ("topic: X"; the others are tags)
    pos: dict[str, int] = field(init=False)
    vocab: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.pos = {p: i for i, p in enumerate(self.ids)}
        self.vocab = {s: j for j, s in enumerate(sorted({s for ts in self.topics for s in ts}))}

    def matrix(self, rows: np.ndarray) -> np.ndarray:
        """Features of these rows: the scaled vector, then one column per topic or tag."""
        x = np.zeros((len(rows), self.vectors.shape[1] + len(self.vocab)), dtype=np.float32)
        x[:, : self.vectors.shape[1]] = VECTOR_SCALE * self.vectors[rows]
        base = self.vectors.shape[1]
        for r, i in enumerate(rows):
            for s in self.topics[int(i)]:
                x[r, base + self.vocab[s]] = TOPIC_WEIGHT
        return x


def feature_space(lib: Library) -> FeatureSpace:
    """The library's papers as features, kept per library until the search index or the catalogue's topic
    features change (building them reads every abstract vector and tag: about 1.4 s on the 32k store, on every
    rating click before)."""
    key = (lib.ready_index().name, lib.topics.hash, lib.catalog.features_version())
    got = _SPACES.get(lib)
    if got is not None and got[0] == key:
        return got[1]
    space = _build_space(lib)
    _SPACES[lib] = (key, space)
    return space


_SPACES: weakref.WeakKeyDictionary[Library, tuple[tuple[object, ...], FeatureSpace]] = weakref.WeakKeyDictionary()


def _build_space(lib: Library) -> FeatureSpace:
    """The library's papers as features (abstract vectors from the search index, topics from the catalogue)."""
    ids, vectors = abstract_vectors(lib)
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    rules = lib.catalog.rule_members()
    by_paper: dict[str, list[str]] = {}
    for slug, members in rules.items():
        for pid in members:
            by_paper.setdefault(pid, []).append(slug)
    for pid, tags in lib.catalog.tags_of(ids).items():
        by_paper.setdefault(pid, []).extend(s for s, _ in tags)
    names = {t.slug: t.name for t in lib.topics.topics}
    names.update({t.slug: t.label for t in lib.catalog.discovered()})
    names.update({c.slug: c.name for c in lib.catalog.collections()})
    return FeatureSpace(ids, vectors, [sorted(set(by_paper.get(p, []))) for p in ids], names, frozenset(rules))


def followed_members(lib: Library, followed: list[str]) -> set[str]:
    """The papers of the followed topics: hand-written by their rules, discovered by tags, collections."""
    cat = lib.catalog
    discovered = {t.slug for t in cat.discovered()}
    collections = {c.slug for c in cat.collections()}
    out: set[str] = set()
    for slug in followed:
        if slug in collections:
            out.update(cat.collection_papers(slug))
        elif slug in discovered:
            out.update(cat.tagged_papers(slug))
        else:
            out.update(cat.topic_papers(slug))
    return out


@dataclass
class Model:
    """A fitted profile: `score` ranks rows of the feature space; `reasons` explains one."""

    space: FeatureSpace
    signals: list[Signal]
    followed: list[str]
    weights: np.ndarray | None  # None: nothing to learn from (no positive signal, no follow)
    bias: float
    fit_ms: float
    positives: np.ndarray  # rows of the positive signals (for "close to ...")

    @property
    def n_positive(self) -> int:
        """How many positive signals the model learned from."""
        return sum(1 for s in self.signals if s.label == 1)

    def score(self, rows: np.ndarray) -> np.ndarray:
        """Higher is more likely wanted; zeros when there is nothing to learn from."""
        if self.weights is None or not len(rows):
            return np.zeros(len(rows), dtype=np.float32)
        return self.space.matrix(rows) @ self.weights + self.bias

    def reasons(self, row: int, limit: int = 2) -> list[str]:
        """Why this paper ranks where it does, in words (at most `limit`)."""
        out: list[str] = []
        sp = self.space
        pos_signals = [s for s in self.signals if s.label == 1 and s.paper_id in sp.pos]
        if len(self.positives):
            sims = sp.vectors[self.positives] @ sp.vectors[row]
            best = int(np.argmax(sims))
            if sims[best] >= NEAR_COSINE:
                out.append(f"close to {pos_signals[best].paper_id}, {_which(pos_signals[best].why)}")
        if self.weights is not None:
            base = sp.vectors.shape[1]
            scored = [(float(self.weights[base + sp.vocab[s]]), s) for s in sp.topics[row]]
            scored = [(w, s) for w, s in scored if w > 0]
            if scored:
                w, s = max(scored)
                name = sp.names.get(s, s)
                kind = "topic" if s in sp.rule_slugs else "tag"
                out.append(f"in {name}, which you follow" if s in self.followed else f"{kind}: {name}")
        if not out and set(sp.topics[row]) & set(self.followed):
            s = sorted(set(sp.topics[row]) & set(self.followed))[0]
            out.append(f"in {sp.names.get(s, s)}, which you follow")
        return out[:limit]


def _which(why: str) -> str:
    """'which you rated up', 'which you saved', 'which is in your collection X'."""
    return f"which is {why}" if why.startswith("in ") else f"which you {why}"


def fit(space: FeatureSpace, sigs: list[Signal], followed: list[str], followed_ids: set[str], seed: int = 0, exclude: set[str] | None = None) -> Model:
    """Fit the profile. Positives: the positive signals (weight 1 each) and a sample of the followed topics'
    papers (PRIOR_WEIGHT together); negatives: the negative signals (weight 1 each) and a background sample of
    the library (as much weight as all positives together). `exclude`: rows never sampled (a test window)."""
    from sklearn.linear_model import LogisticRegression

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    known = {s.paper_id for s in sigs} | (exclude or set())
    pos = np.asarray([space.pos[s.paper_id] for s in sigs if s.label == 1 and s.paper_id in space.pos], dtype=np.int64)
    neg = np.asarray([space.pos[s.paper_id] for s in sigs if s.label == 0 and s.paper_id in space.pos], dtype=np.int64)
    prior_pool = np.asarray(sorted(space.pos[p] for p in followed_ids - known if p in space.pos), dtype=np.int64)
    prior = rng.choice(prior_pool, size=min(PRIOR_SAMPLE, len(prior_pool)), replace=False) if len(prior_pool) else prior_pool
    if not len(pos) and not len(prior):
        return Model(space, sigs, followed, None, 0.0, (time.perf_counter() - t0) * 1000, pos)
    taken = set(pos.tolist()) | set(neg.tolist()) | set(prior.tolist()) | {space.pos[p] for p in known if p in space.pos}
    pool = np.asarray(
        [i for i in rng.choice(len(space.ids), size=min(len(space.ids), BACKGROUND + len(taken)), replace=False) if int(i) not in taken][:BACKGROUND],
        dtype=np.int64,
    )
    rows = np.concatenate([pos, prior, neg, pool])
    y = np.concatenate([np.ones(len(pos) + len(prior)), np.zeros(len(neg) + len(pool))])
    prior_w = PRIOR_WEIGHT / max(len(prior), 1)
    pos_total = len(pos) + (PRIOR_WEIGHT if len(prior) else 0.0)
    w = np.concatenate([np.ones(len(pos)), np.full(len(prior), prior_w), np.ones(len(neg)), np.full(len(pool), pos_total / max(len(pool), 1))])
    if not len(pool) and not len(neg):  # a library of rated papers only: nothing to contrast with
        return Model(space, sigs, followed, None, 0.0, (time.perf_counter() - t0) * 1000, pos)
    clf = LogisticRegression(C=C, max_iter=300)
    clf.fit(space.matrix(rows).astype(np.float64), y, sample_weight=w)
    return Model(space, sigs, followed, clf.coef_[0].astype(np.float32), float(clf.intercept_[0]), (time.perf_counter() - t0) * 1000, pos)


@dataclass(frozen=True)
class Item:
    """One ranked paper with its score and reasons."""

    paper: Paper
    score: float
    reasons: list[str]


@dataclass(frozen=True)
class ForYou:
    """The ranked new papers, the window they came from and what the model learned from."""

    items: list[Item]
    basis: str  # where the window came from
    candidates: int
    positives: int
    negatives: int
    followed: int
    fit_ms: float

    def headline(self) -> str:
        """'30 new papers (the newest 7 days ...); ranked by 2 liked, 1 not-interested and 1 followed'."""
        if not self.positives and not self.followed:
            learn = "nothing rated or followed yet: newest first. Rate a paper (more like this / not interested) or follow a topic"
        else:
            learn = f"ranked by {self.positives} liked, {self.negatives} not-interested and {self.followed} followed"
        return f"{self.candidates} new papers ({self.basis}); {learn}"

    def hint(self) -> str:
        """Advice when the model has little to go on ('' otherwise)."""
        if self.positives < FEW_RATINGS:
            return f"{self.positives} positive rating{'s' if self.positives != 1 else ''} so far: five or more help the ranking."
        return ""


def window(lib: Library, since: dt.date | None = None, now: dt.datetime | None = None) -> tuple[list[str], str]:
    """The papers the feed ranks: listed on or after `since` when given; else those stored since the last
    visit; else (nothing new, or no visit yet) the newest WINDOW_DAYS days of listings in the library."""
    cat = lib.catalog
    if since is not None:
        return cat.papers_between(since), f"listed since {since.isoformat()}"
    until = now or utc_now()
    visit = read_visit(cat.get_meta(LAST_VISIT_KEY), until)
    if visit is not None:
        ids = list(cat.added_between(visit, until))
        if ids:
            return ids, f"stored since your last visit, {visit.astimezone(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}"
    dates = cat.date_counts()
    if not dates:
        return [], "the library is empty"
    newest = max(dates)
    start = newest - dt.timedelta(days=WINDOW_DAYS - 1)
    return cat.papers_between(start, newest), f"the newest {WINDOW_DAYS} days in the library, {start.isoformat()} to {newest.isoformat()}"


def for_you(lib: Library, since: dt.date | None = None, k: int = 20, ids: list[str] | None = None, basis: str = "") -> ForYou:
    """New papers (or the given `ids`) ranked by the profile fitted on this library's signals; papers already
    rated, saved or collected are left out."""
    if ids is None:
        ids, basis = window(lib, since)
    sigs = signals(lib)
    known = {s.paper_id for s in sigs}
    followed = lib.catalog.followed()
    space = feature_space(lib)
    model = fit(space, sigs, followed, followed_members(lib, followed))
    cand = [p for p in ids if p not in known]
    rows = np.asarray([space.pos[p] for p in cand if p in space.pos], dtype=np.int64)
    papers = lib.catalog.get_many(cand)
    scores = model.score(rows)
    dates = [papers[space.ids[int(r)]].date or dt.date.min for r in rows]
    # by score, then newest first (the order a feed without a model has)
    order = sorted(range(len(rows)), key=lambda j: (-float(scores[j]), -dates[j].toordinal(), space.ids[int(rows[j])]))
    items = [Item(papers[space.ids[int(rows[j])]], float(scores[j]), model.reasons(int(rows[j]))) for j in order[:k]]
    neg = sum(1 for s in sigs if s.label == 0)
    return ForYou(items, basis, len(cand), model.n_positive, neg, len(followed), model.fit_ms)


def order_by_profile(lib: Library, papers: list[Paper]) -> list[Paper]:
    """These papers in the profile's order (the digest's `--for-you`); unchanged when nothing is learned."""
    if not papers:
        return papers
    got = for_you(lib, ids=[p.id for p in papers], k=len(papers), basis="digest")
    rank = {it.paper.id: j for j, it in enumerate(got.items)}
    return sorted(papers, key=lambda p: rank.get(p.id, len(rank)))
