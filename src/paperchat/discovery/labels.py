"""Readable labels for clusters of papers: class-based TF-IDF over 1-3-word title phrases, counted in titles
and abstracts.

A phrase is a run of one to three words inside a clause that neither starts nor ends with a stop word or a
word of academic filler ("novel", "results", "propose"), so what is left is mostly noun-ish ("credit
assignment", "mixture of experts", "speculative decoding"). Each cluster is scored against the others the
way BERTopic's c-TF-IDF does; title phrases count twice, and longer phrases get a small bonus, since a
title's bigram reads better as a label than an abstract's single word. The label itself is the distinctive
phrase that the most of the cluster's core papers hold (`_choose_label`), joined by a second phrase when one
alone is held by under half of them. Labels are unique across clusters.
"""

from __future__ import annotations

import functools
import math
import re
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from paperchat.text import STOPWORDS as _STOPWORDS

# words that may sit inside a phrase ("mixture of experts") but never at either end
_INNER = frozenset({"of", "for", "in", "and", "to", "with", "on"})
# words that may not end or start a phrase: stop words and the vocabulary every abstract shares
_FILLER = _STOPWORDS | frozenset(
    """novel new approach approaches method methods framework frameworks results result work works study
    studies task tasks performance state-of-the-art sota existing various different significant significantly
    effective effectively improve improves improved improving improvement improvements achieve achieves
    achieving achieved demonstrate demonstrates demonstrating experiments experimental extensive however
    first one two three four five several many well across can may might must able enable enables
    enabling allow allows introduce introduces introducing present presents evaluate evaluated evaluation
    evaluations outperform outperforms outperforming strong stronger strongly key large small high low
    good better best make makes making provide provides providing often even still yet thus therefore
    furthermore moreover recent recently current currently remains remain lack lacks limited challenge
    challenges challenging problem problems issue issues paper papers propose proposes proposing
    leverage leverages leveraging given specific general generally particular particularly including
    include includes within without whether additionally prior previous respectively compared comparable
    towards toward rather much like etc e.g i.e related via upon despite among need needs needed
    model models llm llms language large-scale effectiveness efficiency robust robustness approach
    address addresses addressing shown show showing consistently substantially notably significantly
    up achieves superior real-world real world code available publicly github https http www com benchmark benchmarks dataset datasets
    data reveal reveals revealing highlight highlights find finds found analysis analyze analyzes""".split()
)
_ADJECTIVE = re.compile(r"(?:al|ic|ive|ous|ary|ual|ed|ing)$|^deep$", re.IGNORECASE)
# single words too general to name a topic alone ("Learning" over an RL cluster)
_GENERAL = frozenset("learning reasoning language languages training generation knowledge text systems agent agents".split())
_CLAUSE = re.compile(r"[.,;:!?()\[\]{}\"“”]|\s-\s|\s—\s")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*")


def phrases(text: str, max_words: int = 3) -> list[tuple[str, str]]:
    """(key, surface form) of every candidate phrase in text; key is lower case."""
    return [(k, f) for k, f, _, _ in _phrases(text, max_words)]


def _phrases(text: str, max_words: int = 3) -> list[tuple[str, str, str, str]]:
    """(key, surface form, word before, word after) of every candidate phrase ('' at a clause's edge)."""
    out: list[tuple[str, str, str, str]] = []
    for clause in _CLAUSE.split(text):
        words = _WORD.findall(clause)
        if not words:
            continue
        lows = [w.lower() for w in words]
        # per word, once: may it start a phrase, end one, or sit inside one
        start = [w not in _FILLER and w not in _INNER and len(w) > 1 for w in lows]
        end = [ok and not w.endswith("ly") for ok, w in zip(start, lows, strict=True)]
        inside = [ok or w in _INNER for ok, w in zip(start, lows, strict=True)]
        keyw = [w.replace("-", " ") for w in lows]  # hyphen or not: one phrase
        last = [w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2:] not in ("ss", "us", "is") else w for w in keyw]
        m = len(lows)
        for i in range(m):
            if not start[i]:
                continue
            for j in range(i + 1, min(i + max_words, m) + 1):
                if j - i > 2 and not inside[j - 2]:
                    break  # a filler word inside: no longer phrase from here reads well either
                if not end[j - 1]:
                    continue
                key = " ".join(keyw[i : j - 1] + [last[j - 1]])  # the last word's plural folded (see _singular)
                out.append((key, " ".join(words[i:j]), lows[i - 1] if i else "", lows[j] if j < m else ""))
    return out


def _singular(word: str) -> str:
    """A crude plural fold for matching only ("agents" and "agent" are one phrase; the shown form is the
    most common one as written)."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "es", "s", "ed", "al")
_LABEL_GLUE = frozenset({"and", "of", "for", "in", "the", "to", "with", "on", "a", "an"})
_LABEL_PART = re.compile(r"[A-Za-z0-9]+")


def _stem(word: str) -> str:
    """A crude suffix strip for matching a label's words in a paper ("Failures" ~ "failure", "Recognition" ~
    "recognizing"): a final plural "s" of an acronym is folded too ("GNNs" ~ "GNN")."""
    w = word.lower()
    for suf in _SUFFIXES:
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return _singular(w)


def label_words(label: str) -> tuple[str, ...]:
    """The stems of a label's words but "and", "of" and the like, hyphenated words split ("Tool-Use Agents" ->
    ("tool", "use", "agent")). Any one of them counts (`holds_label`): the general ones too, since leaving them
    out cost more fitting papers than misfits on the hand-read samples."""
    return tuple(dict.fromkeys(_stem(w) for w in _LABEL_PART.findall(label) if w.lower() not in _LABEL_GLUE))


@functools.lru_cache(maxsize=4096)
def _label_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for a label's words: a stem of five letters or more matches any word beginning with its first
    five; a four-letter one any word beginning with it and at most five letters longer ("fail": "failed",
    "failures"; "caus": "causality"); a shorter one (mostly acronyms) itself or its plural ("gnn": "GNNs";
    "rag" is not "ragged"). Never inside a word."""
    alts = [
        re.escape(w[:5]) if len(w) >= 5 else re.escape(w) + (r"[a-z]{0,5}\b" if len(w) == 4 else r"(?:s|es)?\b")
        for w in words
    ]
    return re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(alts) + ")", re.IGNORECASE)


def holds_label(words: tuple[str, ...], text: str) -> bool:
    """Whether a text says one of a label's words (`label_words`; see `_label_pattern` for the matching). An
    empty label holds everywhere."""
    if not words:
        return True
    return _label_pattern(words).search(text) is not None


@dataclass(frozen=True)
class LabelSettings:
    """How labels are chosen."""

    title_weight: float = 2.0  # a phrase in the title counts this much more than one in the abstract only
    length_bonus: float = 0.6  # score times (1 + bonus * (words - 1)): readable phrases over single words
    min_cover: float = 0.08  # a label phrase must occur in at least this share of the cluster's papers
    min_df: int = 3  # phrases in fewer titles of the whole corpus are never candidates
    n_terms: int = 8  # phrases kept per topic (the label is the first)
    fragment: float = 0.6  # a phrase this often next to one same word is part of a longer one ("learning with verifiable")
    label_cover: float = 0.15  # the label must occur in this share of the topic's papers (when any phrase does)
    multi_cover: float = 0.25  # ... and holds at least this share of the papers the single word holds
    single_word: float = 2.0  # a one-word label only when it scores this many times the best longer phrase
    # the label is the distinctive phrase held by the most core papers (see _choose_label); 0 = the older rule
    min_lift: float = 5.0  # a label phrase is this many times more common in the topic than in the corpus
    word_lift: float = 8.0  # ... and a single word this many times ("Speech", not "Word" or "English")
    relaxed_lift: float = 0.4  # ... times these bars when no phrase clears them
    label_pool: int = 12  # the label is one of this many best phrases by c-TF-IDF
    pair_pool: int = 8  # ... and a second phrase joined to it one of this many
    word_second: float = 0.3  # a lone word joined as the second phrase must be held by this share of the core
    phrase_bonus: float = 0.2  # coverage times (1 + bonus) for a phrase of two or more words: a longer phrase wins a near tie
    pair_below: float = 0.5  # a label held by fewer of the core papers than this is joined by a second phrase
    pair_gain: float = 0.1  # ... when that phrase adds at least this share of the core ("Narrative and Story")
    by_coverage: bool = True


def _display(forms: Counter[str]) -> str:
    """The most common surface form, with lower-case words capitalised ("credit assignment in RL" ->
    "Credit Assignment in RL"); acronyms and mixed case ("GRPO", "LoRA") are kept as written."""
    form = forms.most_common(1)[0][0]
    words = [w if (w in _INNER or not w.islower()) else w[:1].upper() + w[1:] for w in form.split()]
    return " ".join(words)


def label_clusters(
    titles: Sequence[str],
    abstracts: Sequence[str],
    labels: np.ndarray,
    k: int,
    settings: LabelSettings | None = None,
    core: np.ndarray | None = None,
    reserved: set[str] | None = None,
) -> list[list[str]]:
    """For each cluster 0..k-1, its best phrases (display form, best first); the first is unique across clusters.

    Args:
        titles, abstracts: the papers' text, aligned with labels.
        labels: each paper's cluster.
        k: number of clusters.
        core: which papers to read (a cluster's core: papers near its centroid); all when None. The label
            names what the core shares, so a cluster's stragglers do not pull it toward their own words.
        reserved: labels no cluster may take (lower case): the hand-written topics' names, so a discovered
            topic is never shown under the same name as a hand-written one.
    """
    from scipy import sparse

    s = settings or LabelSettings()
    if core is not None:
        keep = [int(i) for i in np.flatnonzero(core)]
        titles = [titles[i] for i in keep]
        abstracts = [abstracts[i] for i in keep]
        labels = labels[keep]
    # The vocabulary is the phrases of titles: labels are shown as titles write them, and it bounds memory
    # (a corpus's abstracts hold millions of distinct 1-3-word runs; its titles far fewer).
    title_df: Counter[str] = Counter()
    title_keys = []
    for title in titles:
        ks = {k for k, _ in phrases(title)}
        title_keys.append(ks)
        title_df.update(ks)
    vocab = {key: i for i, key in enumerate(sorted(k for k, n in title_df.items() if n >= s.min_df))}
    del title_df
    rows_any, cols_any, rows_t, cols_t = array("i"), array("i"), array("i"), array("i")
    for r, (tks, abstract) in enumerate(zip(title_keys, abstracts, strict=True)):
        seen_t = {vocab[key] for key in tks if key in vocab}
        seen = seen_t | {c for key, _ in phrases(abstract) if (c := vocab.get(key)) is not None}
        rows_any.extend([r] * len(seen))
        cols_any.extend(seen)
        rows_t.extend([r] * len(seen_t))
        cols_t.extend(seen_t)
    del title_keys
    n, v = len(titles), len(vocab)
    x_any = sparse.csr_matrix((np.ones(len(rows_any), np.float32), (rows_any, cols_any)), shape=(n, v))
    x_title = sparse.csr_matrix((np.ones(len(rows_t), np.float32), (rows_t, cols_t)), shape=(n, v))
    onehot = sparse.csr_matrix((np.ones(n, np.float32), (np.arange(n), labels)), shape=(n, k))
    cover = (onehot.T @ x_any).toarray() if v else np.zeros((k, 0), np.float32)  # papers per cluster with t
    df = np.asarray(x_any.sum(axis=0)).ravel()  # papers in the corpus with t
    tf = cover + (s.title_weight - 1.0) * (onehot.T @ x_title).toarray()
    keys = [""] * v
    for key, c in vocab.items():
        keys[c] = key
    words = np.array([key.count(" ") + 1 for key in keys], dtype=np.float32)
    sizes = np.bincount(labels, minlength=k).astype(np.float32)
    tf_norm = tf / np.maximum(tf.sum(axis=1, keepdims=True), 1.0)
    avg = tf.sum() / max(k, 1)
    idf = np.log1p(avg / np.maximum(tf.sum(axis=0), 1.0))
    score = tf_norm * idf * (1.0 + s.length_bonus * (words - 1.0))
    ok = cover >= np.maximum(s.min_cover * sizes[:, None], 2.0)
    score = np.where(ok, score, 0.0)
    ranked = [[int(c) for c in np.argsort(-score[i], kind="stable")[: 10 * s.n_terms] if score[i, c] > 0] for i in range(k)]
    cands = {keys[c] for r in ranked for c in r}
    forms, frag = _forms_and_fragments(titles, cands, s.fragment)
    ranked = [[c for c in r if keys[c] not in frag] for r in ranked]
    show = {c: _display(forms[keys[c]]) for r in ranked for c in r}
    used: set[str] = set(reserved or ())
    out: list[list[str]] = [[] for _ in range(k)]
    # strongest clusters choose first, so a shared phrase goes to the cluster it describes best
    order = sorted(range(k), key=lambda i: -(score[i, ranked[i][0]] if ranked[i] else 0.0))
    for i in order:
        every = list(dict.fromkeys(show[c] for c in ranked[i]))
        terms = _dedupe(every)
        # a label is a phrase seen in titles, of two or more words unless one word is far ahead
        titled = {show[c]: float(score[i, c]) for c in ranked[i]}
        held = {show[c]: float(cover[i, c]) for c in ranked[i]}
        # the label must hold a fair share of the topic's papers, or it names a corner of it (measured: labels
        # held by under a fifth of a topic's papers fitted about half of a sample of them)
        enough = [t for t in every if held[t] >= s.label_cover * sizes[i]]
        free = [t for t in enough or every if t.lower() not in used]
        # a longer phrase only when it holds a fair part of the papers the single word holds
        multi = [t for t in free if " " in t and held[t] >= s.multi_cover * held[free[0]]]
        label = free[0] if free else None
        if s.by_coverage and ranked[i]:
            picked = _choose_label(ranked[i], cover[i], sizes[i], df, n, x_any[np.flatnonzero(labels == i)], show, used, s)
            label = picked or label
        elif free and " " not in free[0]:
            # an adjective alone ("Clinical", "Agentic") says little: a phrase built on it says more
            built = [t for t in every if " " in t and t.lower() not in used and free[0].lower() in t.lower().split()]
            if _ADJECTIVE.search(free[0]) and (built or multi):
                label = built[0] if built else multi[0]
            elif multi and titled[free[0]] < s.single_word * titled[multi[0]]:
                label = multi[0]
        if label is None:
            label = f"{terms[0] if terms else 'Topic'} ({i + 1})"
        used.add(label.lower())
        out[i] = [label] + [t for t in terms if t != label][: s.n_terms - 1]
    return out


def _choose_label(
    ranked: list[int],
    cover: np.ndarray,
    size: float,
    df: np.ndarray,
    n: int,
    rows: object,
    show: dict[int, str],
    used: set[str],
    s: LabelSettings,
) -> str | None:
    """The label that the most of a cluster's papers fit: among its distinctive phrases (c-TF-IDF's best, at
    least min_lift times as common in the cluster as in the corpus, not an adjective alone), the one held by
    the largest share of the cluster's papers, a longer phrase winning a near tie. When even that one is held
    by fewer than pair_below of them, the phrase that adds the most papers is joined to it ("Narrative and
    Story"), since the cluster then shares one of two things rather than one. Hand-read samples of the full
    store: labels chosen by c-TF-IDF score alone were held by 40% of their cores and fitted about 62% of
    sampled papers (a specific phrase naming a corner: "Clinical Decision-Making" over clinical NLP at large).
    """
    from scipy import sparse

    assert isinstance(rows, sparse.csr_matrix)
    size = max(size, 1.0)
    cands: list[tuple[float, int, str]] = []
    for c in ranked[: s.label_pool]:
        name = show[c]
        share = float(cover[c]) / size
        lift = share / max(float(df[c]) / max(n, 1), 1e-9)
        bar = s.min_lift if " " in name else s.word_lift
        # under the bar a phrase still counts, discounted (a broad topic, LLM agents, has no phrase far more
        # common in it than elsewhere); under relaxed_lift of it, or a word too general alone, not at all
        word = " " not in name and not name.isupper()  # a lone word (not an acronym) must clear its bar in full
        if lift < (bar if word else s.relaxed_lift * bar) or (word and (_ADJECTIVE.search(name) or name.lower() in _GENERAL)):
            continue
        fit = share * (1.0 + (s.phrase_bonus if " " in name else 0.0)) * min(1.0, lift / bar) ** 0.5
        cands.append((fit, c, name))
    if not cands:
        return None
    cands.sort(key=lambda t: -t[0])
    _, best, name = cands[0]
    share = float(cover[best]) / size
    free = next((nm for _, _, nm in cands if nm.lower() not in used), None)
    taken = name.lower() in used  # another topic holds it: a second phrase tells the two apart
    if (share >= s.pair_below and not taken) or len(cands) < 2:
        return free if taken else name
    top = set(ranked[: s.pair_pool])  # the second phrase from the topic's very best
    # ... and a phrase or an acronym: a lone word beside a phrase mostly reads as noise ("Layout and Executable")
    # (a lone word only to tell apart two topics that share their best phrase, and only one that a fair share of
    # the topic's papers hold: "Speech and Hours" named a corner)
    cols = [
        c for _, c, nm in cands[1:]
        if c in top and not _overlaps(nm, name)
        and (" " in nm or nm.isupper() or (taken and float(cover[c]) >= s.word_second * size))
    ]
    if not cols:
        return free if taken else name
    held = rows[:, [best] + cols].toarray() > 0
    gains = (held[:, 1:] & ~held[:, :1]).sum(axis=0) / size
    j = int(np.argmax(gains))
    if gains[j] < s.pair_gain and not taken:
        return name
    second = show[cols[j]]
    pair = f"{name} and {second}" if cover[best] >= cover[cols[j]] else f"{second} and {name}"
    if pair.lower() not in used:
        return pair
    return free if taken else name


def _overlaps(a: str, b: str) -> bool:
    """Whether one phrase holds a word of the other ("Aspect Sentiment" and "Sentiment Classification"), or
    is the other's acronym ("QA" and "Question Answering")."""
    wa = [_singular(w) for w in re.split(r"[\s-]+", a.lower()) if w and w not in _INNER]
    wb = [_singular(w) for w in re.split(r"[\s-]+", b.lower()) if w and w not in _INNER]
    if set(wa) & set(wb):
        return True
    short, long_ = (a, wb) if len(wa) == 1 else (b, wa) if len(wb) == 1 else ("", [])
    return bool(short) and short.rstrip("s").isupper() and short.lower().rstrip("s") == "".join(w[0] for w in long_)


def _forms_and_fragments(titles: Sequence[str], keys: set[str], share: float) -> tuple[dict[str, Counter[str]], set[str]]:
    """For the candidate phrases: their surface forms in titles, and which of them are mostly a piece of one
    longer phrase (in at least `share` of their title occurrences the same word comes right before, or right
    after: "learning with verifiable" of "reinforcement learning with verifiable rewards")."""
    forms: dict[str, Counter[str]] = {}
    before: dict[str, Counter[str]] = {}
    after: dict[str, Counter[str]] = {}
    for text in titles:
        for key, surf, b, a in _phrases(text):
            if key in keys:
                forms.setdefault(key, Counter())[surf] += 1
                before.setdefault(key, Counter())[b] += 1
                after.setdefault(key, Counter())[a] += 1
    frag = set()
    for key, fs in forms.items():
        n = sum(fs.values())
        for side in (before[key], after[key]):
            word, c = side.most_common(1)[0]
            if word and word not in _INNER and c >= share * n and n >= 3:
                frag.add(key)
    return forms, frag


def _dedupe(terms: list[str]) -> list[str]:
    """Drop a phrase that another, better-ranked phrase contains or is contained in ("RL" after "agentic RL")."""
    kept: list[str] = []
    for t in terms:
        low = f" {t.lower()} "
        if any(f" {k.lower()} " in low or low in f" {k.lower()} " for k in kept):
            continue
        kept.append(t)
    return kept


def npmi_coherence(term_docs: list[set[int]], n_docs: int) -> float:
    """Mean normalised PMI over pairs of a topic's terms (each term given as the set of papers holding it);
    1 when the terms always occur together, 0 when independent, -1 when never together."""
    vals = []
    for a in range(len(term_docs)):
        for b in range(a + 1, len(term_docs)):
            pa, pb = len(term_docs[a]) / n_docs, len(term_docs[b]) / n_docs
            pab = len(term_docs[a] & term_docs[b]) / n_docs
            if pa == 0 or pb == 0:
                continue
            if pab == 0:
                vals.append(-1.0)
                continue
            vals.append(math.log(pab / (pa * pb)) / -math.log(pab) if pab < 1 else 1.0)
    return float(np.mean(vals)) if vals else 0.0
