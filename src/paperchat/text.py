"""Plain text helpers: word tokens, stop words, sentences, cleaning, arXiv ids, percentiles.

A leaf module: it imports nothing of paperchat's (a test reads its imports), so any layer may use it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

# -- word tokens ------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# English stop words of the search tokenizer (BM25, citation support, the extractive answerer); changing
# them changes every token: bump Tokenizer.VERSION
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    also via using use used based paper propose proposed show shows""".split()
)
# Question words a follow-up leaves out when it leans on the previous turn (query.rewrite_followup).
# Kept apart from STOPWORDS: "papers" is in this one only, and most of STOPWORDS would count as content
# words here; merging them would change which follow-ups get rewritten.
QUESTION_STOPWORDS = frozenset(
    "what which who whom how why when where does do did is are was were the a an of in on for to and or with "
    "by from it its they their this that these those about can could would should use used using paper papers".split()
)


class Tokenizer:
    """Lower-case word tokens, English stop words removed, Snowball-stemmed (PyStemmer). A hyphenated
    word gives its parts and their joined form, so "pre-trained" meets "pretrained" and "long-form" meets
    "long form"."""

    VERSION = "2"  # bump when tokens change: a snapshot built with another version is rebuilt

    def __init__(self) -> None:
        import Stemmer

        self._stem = Stemmer.Stemmer("english")

    def __call__(self, text: str) -> list[str]:
        """Lower-cased, stemmed tokens of a text, stopwords dropped (hyphenated words also joined)."""
        words: list[str] = []
        for w in _TOKEN.findall(text.lower()):
            if "-" not in w:
                if w not in STOPWORDS:
                    words.append(w)
                continue
            parts = [p for p in w.split("-") if p]
            words.extend(p for p in parts if p not in STOPWORDS)
            words.append("".join(parts))
        return list(self._stem.stemWords(words))

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokens of each text."""
        return [self(t) for t in texts]


# -- sentences --------------------------------------------------------------------------------------

_ABBREV = re.compile(r"\b(?:e\.g|i\.e|et al|Fig|Figs|Eq|Eqs|Sec|Tab|vs|cf|approx|resp|No)\.$", re.I)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"'])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage; does not split after e.g., et al., Fig. and the like."""
    parts = [p for block in re.split(r"\n\s*\n", text.strip()) for p in _SPLIT.split(block.strip())]
    out: list[str] = []
    for p in parts:
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {p}"
        else:
            out.append(p)
    return [s.strip() for s in out if s.strip()]


# -- cleaning ---------------------------------------------------------------------------------------

_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"}
_HYPHEN_BREAK = re.compile(r"(\w)[-\u00ad\u2010]\s*\n\s*([a-z])")
_SOFT_HYPHEN = re.compile("\u00ad")
_SPACES = re.compile(r"[ \t\f\v\u00a0\u2000-\u200b\u202f\u205f\u3000]+")
_NEWLINES = re.compile(r"\s*\n\s*")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")


def clean_text(text: str) -> str:
    """Clean extracted text: ligatures, hyphenation at line ends, control characters, runs of whitespace.

    Line breaks become single spaces; the result has no leading or trailing whitespace.
    """
    for lig, repl in _LIGATURES.items():
        text = text.replace(lig, repl)
    text = unicodedata.normalize("NFKC", text)
    text = _CONTROL.sub(" ", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # "cor-\npus" -> "corpus" (only when the next line starts in lower case: keeps "GPT-\n4").
    text = _HYPHEN_BREAK.sub(r"\1\2", text)
    text = _SOFT_HYPHEN.sub("", text)
    text = _NEWLINES.sub(" ", text)
    text = _SPACES.sub(" ", text)
    return text.strip()


def normalize_for_match(text: str) -> str:
    """Loose form for comparing quotes with chunks: cleaned, hyphen breaks removed, lower case."""
    text = clean_text(text)
    text = re.sub(r"(\w)- (\w)", r"\1\2", text)
    return re.sub(r"\s+", " ", text).lower().strip()


# Terminal escape sequences (CSI "ESC [ ... letter", OSC "ESC ] ... BEL/ST", and two-byte "ESC x"), control
# characters other than tab and line breaks (C0, DEL, C1), bidirectional overrides, and lone surrogates
# (valid as JSON escapes, but not encodable as UTF-8: they would fail the whole batch at the store).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
_SPACING = re.compile(r"[\x0b\x0c\x1c-\x1f\x85]")  # vertical tab, form feed, separators, NEL: they separate words
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def strip_control(text: str) -> str:
    """Remove terminal escape sequences and control characters (tab and line breaks kept); a lone surrogate
    becomes U+FFFD. The rest of the text is left exactly as it was."""
    if text.isprintable():
        return text
    text = _ESCAPES.sub("", text)
    text = _SPACING.sub(" ", text)
    text = _CONTROLS.sub("", text)
    return _SURROGATES.sub("\ufffd", text)


def printable(text: object) -> str:
    """Text safe to print on a terminal: `strip_control` of its str()."""
    return strip_control(str(text))


# -- arXiv ids --------------------------------------------------------------------------------------

# new style (2301.01234) and old style (cs/0101001, math.AG/0101001), without the version
ARXIV_ID = re.compile(r"(?:\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})")
_ARXIV_VERSIONED = re.compile(ARXIV_ID.pattern + r"(?:v\d+)?")


def is_arxiv_id(value: str, versioned: bool = False) -> bool:
    """True for new-style (2301.01234) and old-style (cs/0101001) arXiv ids; with `versioned`, a
    version suffix (v2) is allowed too."""
    return bool((_ARXIV_VERSIONED if versioned else ARXIV_ID).fullmatch(value))


# -- numbers ----------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank q-th percentile (a value of the list, no interpolation); None for no values."""
    if not values:
        return None
    s = sorted(values)
    idx = min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))
    return s[idx]
