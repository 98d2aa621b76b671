"""Answers that answer the question, without an LLM: query-focused sentence selection shared by paper and
topic answers (`text`, `select`), topic answers as a map of the literature (`topic_map`), and abstention by
reading the evidence (`evidence`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paperchat.answering.combine import Combiner
from paperchat.answering.question import Focus, analyse
from paperchat.answering.select import Scored, SentenceScorer, Weights, rank
from paperchat.answering.text import Candidate, candidates, names_in
from paperchat.text import Tokenizer
from paperchat.types import Source

if TYPE_CHECKING:
    from paperchat.types import Embedder

__all__ = ["Reading", "read_sources"]


@dataclass
class Reading:
    """A question read against its sources: its focus, the quotable sentences and their ranking."""

    focus: Focus
    candidates: list[Candidate]
    ranked: list[Scored]


def read_sources(
    question: str,
    sources: Sequence[Source],
    tok: Tokenizer,
    embedder: Embedder | None = None,
    weights: Weights = Weights(),
    reader: SentenceScorer | None = None,
    reader_mix: float = 0.0,
    reorder: bool = True,
    combine: Combiner | None = None,
) -> Reading:
    """Rank the quotable sentences of the sources for the question (names in the sources' titles do not
    answer a "which model" question about that paper); with a sentence `reader`, it ranks the rules' best
    (or, with `reorder` False, only scores them for the refusal check)."""
    focus = analyse(question, tok)
    cands = candidates(sources, tok)
    known = frozenset().union(*(names_in(s.title) for s in sources)) if sources else frozenset()
    return Reading(focus, cands, rank(focus, cands, embedder, weights, known, reader, reader_mix, reorder, combine))
