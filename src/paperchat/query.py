"""Reading a search question before it is searched: the sides of a many-sided question (`aspects`), each
searched on its own for topic questions, and a follow-up made self-contained without an LLM
(`rewrite_followup`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from paperchat.text import QUESTION_STOPWORDS as _STOP

_EITHER = re.compile(r"^(?P<head>.+?),?\s+either\s+(?P<a>.+?)\s+or\s+(?P<b>.+)$", re.I)
_CLAUSES = re.compile(
    r",\s*(?:and|but|or)\s+|;\s*|\?\s+|\s+and\s+(?=(?:what|which|how|when|where|why|whether|do|does|did|is|are|can|if)\b)", re.I
)
_AND = re.compile(r"\s+and\s+", re.I)


_GENERIC = frozenset("researchers methods approaches techniques proposed work works systems have has been recent existing ways so".split())


def _content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9][a-z0-9-]*", text.lower()) if w not in _STOP and w not in _GENERIC and len(w) > 1]


def aspects(question: str, max_parts: int = 4) -> list[str]:
    """The sides of a many-sided question, each searchable on its own; [] for a one-sided question.

    "compressed context for RAG, either as shorter text or as soft embeddings" gives the head with each
    alternative; "When does X help, and what benchmarks examined Y?" gives its two clauses; "techniques that
    reduce overthinking and make models produce shorter chains" gives the two sides of the "and" when each
    has at least two content words. Every part must have two content words; at most `max_parts`.
    """
    q = question.strip().rstrip("?").strip()
    m = _EITHER.match(q)
    if m:
        parts = [f"{m['head']} {m['a']}", f"{m['head']} {m['b']}"]
    else:
        parts = [c for c in _CLAUSES.split(q) if c and c.strip()]
        if len(parts) < 2:
            sides = _AND.split(q)
            parts = sides if len(sides) >= 2 and all(len(_content_words(x)) >= 2 for x in sides) else []
    parts = [x.strip(" ,") for x in parts if len(_content_words(x)) >= 2]
    return parts[:max_parts] if len(parts) >= 2 else []


_PRONOUN = re.compile(r"\b(they|them|their|it|its|this|that|these|those|he|she|the paper|the method|the model|the authors|the approach)\b", re.I)


def rewrite_followup(question: str, history: Sequence[str]) -> str:
    """Make a follow-up self-contained without an LLM: when it leans on earlier turns (pronouns, or
    fewer than four content words), add the content words of the previous question that it lacks."""
    if not history:
        return question
    words = [w for w in re.findall(r"[A-Za-z0-9][\w\-]*", question) if w.lower() not in _STOP]
    if not _PRONOUN.search(question) and len(words) >= 4:
        return question
    prev = history[-1]
    have = {w.lower() for w in words}
    extra = [w for w in re.findall(r"[A-Za-z0-9][\w\-]*", prev) if w.lower() not in _STOP and w.lower() not in have]
    extra = list(dict.fromkeys(extra))
    return f"{question.rstrip()} ({' '.join(extra)})" if extra else question
