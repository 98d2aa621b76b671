"""Abstention by reading: do the best passages hold what the question asks about?

Retrieval always returns something, and on a paper's own topic its cosine is high even when the paper
does not say what is asked ("how many participants" of a user study the paper never ran). The evidence
check reads the best sentences instead:
- coverage: the share of the question's content words (weighted, generic ones down) that the best
  sentence and its neighbours hold, the best over the first few sentences that hold the kind of thing asked;
- absent: the weighted share of the question's words that occur nowhere in the scope (the whole paper, from
  the lexical index), or in none of the passages when the scope's counts are not known;
- missing names: names the question gives ("MS MARCO") that no passage mentions;
- the best sentence's MiniLM similarity to the question;
- asked: the share of the words naming what is asked ("how many *GPU hours*", "what *learning rate*") that the
  best of the first ASKED_TOP ranked sentences holds itself (None when the question names no such thing). A paper
  that discusses the training but never states the learning rate has sentences with "training", none with
  "learning rate": coverage stays high, this does not.
A question is refused when a name it gives is missing, when `coverage + cosine - absent` (less MISFIT
when no sentence read holds the kind of thing asked) falls below the calibrated threshold (`paperchat eval calibrate`, split-half on the dev sets),
or, when turned on, when `asked` is below `answers.refuse_asked_below` (off: it did not carry to held-out questions).
- measured: a question asking for an amount of money ("what did it cost in US dollars", "how much were they paid")
  or a duration ("how many GPU hours", "for how many days") is refused when none of the TOP best sentences states
  one (a currency amount; a number with a time unit). Papers that discuss their compute or annotation without
  stating the dollars or hours are the commonest unanswerable questions in our sets (docs/measured.md, Quality).
- set_value: a question asking for the value of a named setting ("what learning rate", "at what sampling
  temperature", "which optimizer") is refused when none of the SETTING_TOP best sentences gives one (the setting's
  name with a number by it; an optimizer's name). The next commonest: a paper that describes its training but not
  the learning rate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from paperchat.answering.question import ASKED_WEIGHT, Focus, name_like, written_out
from paperchat.answering.select import Scored, term_weights
from paperchat.answering.text import Candidate, names_setting, states
from paperchat.text import Tokenizer
from paperchat.types import Source

TOP = 5  # sentences read for evidence
SETTING_TOP = 8  # sentences read for a setting's value (8 and 10 refuse the same on the choosing sets; 5 refused one answerable)
MISFIT = 0.5  # strength lost when none of them holds the kind of thing asked (no number for "how many")
UNCOUNTED = 0.3  # ... when none of them puts a number before what "how many" asks about ("12 participants")
ASKED_TOP = 3  # sentences read for the asked words (split halves of eval/askpdf_abstain_tune.jsonl: 3 won on both)


@dataclass(frozen=True)
class Evidence:
    """What the best passages hold of the question."""

    coverage: float
    cosine: float
    absent: float
    missing_names: tuple[str, ...]
    fits: bool
    best: Scored | None
    counted: bool = True
    asked: float | None = None
    measured: bool = True  # False when the question asks for money or a duration (`measure`) and none of the best sentences states one
    measure: str = ""
    set_value: bool = True  # False when the question asks for a named setting's value and none of the best sentences gives one
    settings: tuple[str, ...] = ()
    setting_near: Scored | None = None  # the best sentence that names an asked setting (shown when its value is missing)
    reader_top: float | None = None  # the sentence reader's best logit over the sentences it read (None: it did not read)

    @property
    def strength(self) -> float:
        """One number: higher means better evidence (the refusal threshold is set on it)."""
        return self.coverage + self.cosine - self.absent - (0.0 if self.fits else MISFIT) - (0.0 if self.counted else UNCOUNTED)

    def features(self) -> dict[str, object]:
        """The evidence as a flat record (for calibration and reports)."""
        d = asdict(self)
        d.pop("best")
        d.pop("setting_near")
        d["strength"] = round(self.strength, 4)
        return d


def mentioned(name: str, text: str) -> bool:
    """Whether a lower-cased text mentions a name the question gives, as a word or its plural ("GPU": "GPUs"),
    also as the head of a hyphenated word ("GPT" of "GPT-4-judged": "GPT-4", "GPT- 4"), never inside a word
    ("BERT" is not in "RoBERTa") or as its tail ("BERT" is not "Sentence-BERT"); a hyphenated name also with a space
    ("Primer EZ") or by the name in it ("reward-versus-KL": "KL"), its acronym written out ("masked-LM": "masked
    language modeling"); a bare acronym of 3-6 letters also written out ("NLI": "natural language inference"), and a
    name of several words also hyphenated or bracketed ("Chain of Thought": "chain-of-thought")."""
    if " " in name:  # a name of several words ("Chain of Thought"): also hyphenated or with a bracket ("Transformer (big)")
        body = r"[\s(-]*".join(re.escape(p.lower()) for p in name.split())
        return re.search(rf"(?<![\w-]){body}s?(?!\w)", text) is not None
    parts = name.split("-")
    body = r"[\s-]?".join(re.escape(p.lower()) for p in parts)  # "Primer-EZ": also "primer ez"
    if re.search(rf"(?<![\w-]){body}s?(?!\w)", text) is not None:
        return True
    if len(parts) == 1:
        # a bare acronym of 3-6 letters written out by initials, each word of 3 letters or more ("NLI": "natural
        # language inference"); two letters match by chance too often ("LM": "large models")
        if re.fullmatch(r"[A-Z]{3,6}", name):
            return re.search(rf"(?<![\w-]){written_out(name, min_letters=3)}(?!\w)", text) is not None
        return False
    # a compound with an acronym in it, written out by its initials ("masked-LM": "masked language modeling")
    spelled = r"[\s-]?".join(
        written_out(p) if re.fullmatch(r"[A-Z]{2,5}", p) else re.escape(p.lower()) for p in parts
    )
    if spelled != body and re.search(rf"(?<![\w-]){spelled}(?!\w)", text) is not None:
        return True
    if name_like(parts[0]) or parts[0].isupper():  # a name throughout ("M-14B", "C-MTEB"): only as written
        return False
    return any(name_like(p) and mentioned(p, text) for p in parts[1:])  # "reward-versus-KL": its name alone will do


def read(focus: Focus, ranked: Sequence[Scored], cands: Sequence[Candidate], sources: Sequence[Source], scope_df: Mapping[str, int] | None = None) -> Evidence:
    """The evidence the ranked sentences give for the question."""
    if not ranked or not focus.terms:
        return Evidence(0.0, 0.0, 1.0 if focus.terms else 0.0, focus.names, False, None)
    reader_top = max((s.reader for s in ranked if s.reader is not None), default=None)
    if reader_top is not None:  # the checks below were calibrated on the rules' order: read them in it
        ranked = sorted(ranked, key=lambda s: (-(s.rules if s.rules is not None else s.score), s.cand.n, s.cand.position))
    tw = term_weights(focus, cands)
    key = {t: focus.terms[t] for t in tw}  # coverage counts question weight only: rarity is about ranking
    total = sum(key.values()) or 1.0
    fitting = [s for s in ranked[:TOP] if s.fits]
    head = fitting or list(ranked[:TOP])
    coverage = max(sum(key[t] for t in (s.cand.tokens | s.cand.context_tokens) & key.keys()) / total for s in head)
    if scope_df is not None:
        absent = sum(w for t, w in key.items() if scope_df.get(t, 0) == 0) / total
    else:
        seen = frozenset().union(*(c.tokens | c.context_tokens for c in cands))
        absent = sum(w for t, w in key.items() if t not in seen) / total
    text = " ".join(s.text for s in sources).lower()
    missing = tuple(n for n in focus.names if not mentioned(n, text))
    best = head[0]
    counted = not focus.counted or any(s.cand.counted & focus.counted for s in ranked[:TOP])
    measured = not focus.measure or any(states(focus.measure, s.text) for s in ranked[:TOP])
    set_value = not focus.settings or any(s.gives_setting for s in ranked[:SETTING_TOP])
    near = next((s for s in ranked[:SETTING_TOP] if any(names_setting(k, s.text) for k in focus.settings)), None)
    return Evidence(
        round(coverage, 4), round(max(s.cosine for s in head), 4), round(absent, 4), missing, bool(fitting), best, counted,
        asked_cover(focus, ranked), measured, focus.measure, set_value, focus.settings, near, None if reader_top is None else round(reader_top, 4),
    )


def asked_cover(focus: Focus, ranked: Sequence[Scored], top: int = ASKED_TOP) -> float | None:
    """The largest share of the asked words (and of what "how many" counts) that one of the first `top`
    ranked sentences holds in its own words; None when the question names nothing it asks about."""
    asked = {t for t, w in focus.terms.items() if w >= ASKED_WEIGHT} | set(focus.counted)
    if not asked:
        return None
    return round(max((len(asked & s.cand.tokens) / len(asked) for s in ranked[:top]), default=0.0), 4)


@dataclass(frozen=True)
class Refusal:
    """The abstention rule: refuse below `min_strength`, or when the question's names are not found."""

    min_strength: float = 0.0
    names: bool = True
    min_asked: float = 0.0
    measures: bool = True
    settings: bool = False
    min_reader: float | None = None

    def refuse(self, ev: Evidence) -> bool:
        """True when the sources do not answer: a name the question gives is missing, the evidence is weak, no
        sentence read holds what the question asks about, none states the amount of money or the duration asked,
        or none gives a value of the setting asked."""
        thin_asked = ev.asked is not None and ev.asked < self.min_asked
        unset = self.settings and not ev.set_value
        unread = self.min_reader is not None and ev.reader_top is not None and ev.reader_top < self.min_reader
        return (
            (self.names and bool(ev.missing_names)) or ev.strength < self.min_strength or thin_asked
            or (self.measures and not ev.measured) or unset or unread
        )

    def nearest(self, ev: Evidence) -> Scored | None:
        """The sentence to show with the refusal: where the paper speaks of the setting whose value it does not give
        ("We linearly decay the learning rate ..."), else the best sentence read."""
        if self.settings and not ev.set_value and not (self.names and ev.missing_names) and ev.setting_near is not None:
            return ev.setting_near
        return ev.best

    def why(self, ev: Evidence) -> str:
        """The reason shown with the cannot-answer text."""
        if self.names and ev.missing_names:
            return f"the sources never mention {' '.join(ev.missing_names)}"
        if self.measures and not ev.measured:
            return {
                "money": "no passage states an amount of money", "size": "no passage states how many parameters or tokens",
            }.get(ev.measure, "no passage states how long it took")
        if self.settings and not ev.set_value:
            return f"no passage gives the {' or '.join(ev.settings)} used"
        return "no passage says it"


def scope_counts(question: str, focus: Focus, scores: Callable[[str], np.ndarray | None], mask: np.ndarray, tok: Tokenizer) -> dict[str, int]:
    """For each of the focus's terms, how many chunks inside `mask` hold it (`scores` is the lexical index's
    BM25 scoring of a query: a chunk scores above 0 exactly when it holds the query's one term)."""
    out: dict[str, int] = {t: 0 for t in focus.terms}
    words = set()
    for w in re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", question):
        words.update(w.split("-"))
        words.add(w.replace("-", ""))
    for w in sorted(words):
        toks = tok(w)
        if len(toks) != 1 or toks[0] not in out:
            continue
        sc = scores(w)
        if sc is not None:
            out[toks[0]] = max(out[toks[0]], int(np.count_nonzero(np.asarray(sc)[mask] > 0)))
    return out
