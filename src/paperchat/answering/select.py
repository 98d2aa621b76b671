"""Query-focused sentence selection: which sentences of the retrieved passages answer the question.

Each candidate sentence is scored by
- the question's content words it contains, each weighed by its rarity among the candidates (a word in
  every passage tells sentences apart less than one in two of them) and generic question words weighed down;
- the same words in its neighbouring sentences, a little (an answer sentence often leaves its subject to
  the sentence before);
- its MiniLM similarity to the question (answers put in other words), when an embedder is given;
- whether it holds the kind of thing asked for (a number for "how many", a name for "which model"), and for a
  question asking a setting's value ("what learning rate"), whether it gives one;
- the rank retrieval gave its passage, a little.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from paperchat.answering.combine import Combiner
from paperchat.answering.question import Focus
from paperchat.answering.text import Candidate, satisfies, states_setting

if TYPE_CHECKING:
    from paperchat.types import Embedder

MAX_EMBEDDED = 24  # candidates embedded per question, the best by words first (askpdf_dev: 24 and 48 rank the same)
READ_TOP = 32  # candidates the sentence reader reads per question, the best by the rules first

# The trained sentence reader (paperchat.reader): (question, sentences, their neighbours) -> one logit each
SentenceScorer = Callable[[str, Sequence[str], Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Weights:
    """How the parts of a sentence's score add up (chosen on askpdf_dev halves, see evaluation/calibrate)."""

    lexical: float = 1.0
    context: float = 0.25
    cosine: float = 1.0
    fits: float = 0.2
    counts: float = 0.15  # "how many X": a number right before X
    misfit: float = -0.4
    rank: float = 0.15
    fragment: float = -0.15
    setting: float = 0.5  # "what learning rate ...": a sentence that gives a value of the setting asked (text.states_setting)


@dataclass
class Scored:
    """A candidate with its score and the parts of it."""

    cand: Candidate
    score: float
    lexical: float
    context: float
    cosine: float
    fits: bool
    gives_setting: bool = False  # it gives a value of a setting the question asks for (text.states_setting)
    reader: float | None = None  # the sentence reader's logit (above 0: it answers), when the reader read it
    rules: float | None = None  # the rules' score, when the reader's replaced it in `score`

    @property
    def text(self) -> str:
        """The sentence's text."""
        return self.cand.text


def term_weights(focus: Focus, cands: Sequence[Candidate]) -> dict[str, float]:
    """Each focus term's weight: its question weight times its IDF among the candidate sentences."""
    n = len(cands)
    df = {t: 0 for t in focus.terms}
    for c in cands:
        for t in c.tokens & focus.terms.keys():
            df[t] += 1
    return {t: w * math.log(1.0 + (n + 1) / (df[t] + 0.5)) for t, w in focus.terms.items()}


def rank(
    focus: Focus,
    cands: Sequence[Candidate],
    embedder: Embedder | None = None,
    weights: Weights = Weights(),
    known: frozenset[str] = frozenset(),
    reader: SentenceScorer | None = None,
    reader_mix: float = 0.0,
    reorder: bool = True,
    combine: Combiner | None = None,
) -> list[Scored]:
    """The candidates scored against the question, best first; `known` names (the paper's title's) do not
    answer a "which model" question. With a `reader`, the rules' best READ_TOP are read by it and ranked by its
    logit (plus `reader_mix` times the rules' score; or by the fitted `combine` of the logit and the rules'
    parts), ahead of the rest; with `reorder` False they keep the rules' order and only carry the logit (for the
    refusal check)."""
    if not cands or not focus.terms:
        return []
    tw = term_weights(focus, cands)
    total = sum(tw.values()) or 1.0
    lex = [sum(tw[t] for t in c.tokens & tw.keys()) / total for c in cands]
    ctx = [sum(tw[t] for t in (c.context_tokens - c.tokens) & tw.keys()) / total for c in cands]
    order = sorted(range(len(cands)), key=lambda i: (-(lex[i] + 0.5 * ctx[i]), cands[i].n, cands[i].position))
    cos = [0.0] * len(cands)
    if embedder is not None:
        head = order[:MAX_EMBEDDED]
        vecs = embedder.embed([cands[i].text for i in head])
        sims = vecs @ embedder.embed_query(focus.question)
        for i, s in zip(head, np.asarray(sims, dtype=float), strict=True):
            cos[i] = float(s)
    out: list[Scored] = []
    for i, c in enumerate(cands):
        fits = satisfies(focus.kind, c.text, known | frozenset(focus.names))
        gives = bool(focus.settings) and any(states_setting(k, c.text) for k in focus.settings)
        score = (
            weights.lexical * lex[i]
            + weights.context * ctx[i]
            + weights.cosine * cos[i]
            + (weights.fits if fits and focus.kind != "any" else 0.0)
            + (weights.counts if focus.kind == "number" and c.counted & (focus.counted or {t for t, w in focus.terms.items() if w >= 1.0}) else 0.0)
            + (weights.misfit if not fits else 0.0)
            + weights.rank / c.n
            + (weights.fragment if c.fragment else 0.0)
            + (weights.setting if gives else 0.0)
        )
        out.append(Scored(c, score, lex[i], ctx[i], cos[i], fits, gives))
    out.sort(key=lambda s: (-s.score, s.cand.n, s.cand.position))
    if reader is not None and out:
        top = out[:READ_TOP]
        where = {(c.n, c.position): j for j, c in enumerate(cands)}
        contexts = [neighbours_of(cands, where[(sc.cand.n, sc.cand.position)]) for sc in top]
        logits = reader(focus.question, [sc.text for sc in top], contexts)
        if not reorder:
            return [replace(sc, reader=float(lg)) for sc, lg in zip(top, logits, strict=True)] + out[READ_TOP:]
        read = [replace(sc, reader=float(lg), rules=sc.score) for sc, lg in zip(top, logits, strict=True)]
        if combine is not None:
            scores = list(combine.scores([combine_row(sc) for sc in read]))
        else:
            scores = [float(lg) + reader_mix * sc.score for sc, lg in zip(top, logits, strict=True)]
        read = [replace(sc, score=float(v)) for sc, v in zip(read, scores, strict=True)]
        read.sort(key=lambda s: (-s.score, s.cand.n, s.cand.position))
        out = read + out[READ_TOP:]
    return out


def combine_row(sc: Scored) -> dict[str, object]:
    """A read sentence's parts as the combiner's features take them (scripts/reader_capture.py writes the same)."""
    return {"reader": sc.reader, "rules": sc.rules, "lexical": sc.lexical, "context": sc.context, "cosine": sc.cosine, "fits": sc.fits,
            "gives": sc.gives_setting, "n": sc.cand.n, "fragment": sc.cand.fragment, "text": sc.cand.text, "page": sc.cand.page}


def neighbours_of(cands: Sequence[Candidate], i: int) -> str:
    """The sentences before and after candidate i in its source (what the reader reads beside it, in training too)."""
    c = cands[i]
    prev = cands[i - 1].text if i > 0 and cands[i - 1].n == c.n else ""
    nxt = cands[i + 1].text if i + 1 < len(cands) and cands[i + 1].n == c.n else ""
    return " ".join(f"{prev} {nxt}".split())
