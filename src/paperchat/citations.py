"""Citations are data: parse the markers in an answer, keep only those of offered sources, score support."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from paperchat.text import Tokenizer, split_sentences
from paperchat.types import Citation, NumberedRef, Source, Statement

# one citation marker: [1], [1, 2], [1; 3], [1-3], [1 and 2] (the one pattern for citations; the app links them)
CITATION = re.compile(r"\[(\s*\d+(?:\s*(?:[,;]|[-\u2013\u2014]|and)\s*\d+)*\s*)\]")
_tok: Tokenizer | None = None


def _tokens(text: str) -> set[str]:
    global _tok
    if _tok is None:
        _tok = Tokenizer()
    return set(_tok(text))


def parse_group(inner: str) -> list[int]:
    """'1, 2' -> [1, 2]; '1-3' -> [1, 2, 3]; ranges longer than 20 are not expanded."""
    nums: list[int] = []
    for part in re.split(r"\s*(?:[,;]|and)\s*", inner.strip()):
        m = re.fullmatch(r"(\d+)\s*[-\u2013\u2014]\s*(\d+)", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if a <= b and b - a <= 20:
                nums.extend(range(a, b + 1))
            else:
                nums.extend([a, b])
        elif part.isdigit():
            nums.append(int(part))
    return nums


_QUOTE_SPAN = re.compile(r'"[^"\n]{10,}?"')


def _mask_quotes(text: str) -> str:
    """Quoted passages blanked out (same length): a source's own reference markers such as "[12]"
    inside a quotation are not our citations."""
    return _QUOTE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def parse_citations(text: str) -> list[int]:
    """Every cited number in order of first appearance: [1], [1, 2], [1][3], [1-3] (not inside quotes)."""
    seen: dict[int, None] = {}
    for m in CITATION.finditer(_mask_quotes(text)):
        for n in parse_group(m.group(1)):
            seen.setdefault(n, None)
    return list(seen)


def strip_invalid(text: str, offered: Iterable[int]) -> tuple[str, list[int]]:
    """Remove cited numbers that were not offered; returns the cleaned text and the dropped numbers."""
    valid = set(offered)
    dropped: list[int] = []
    masked = _mask_quotes(text)

    def fix(m: re.Match[str]) -> str:
        if masked[m.start()] == " ":  # inside a quotation: the source's own marker, left as it is
            return m.group(0)
        nums = parse_group(m.group(1))
        keep = [n for n in dict.fromkeys(nums) if n in valid]
        dropped.extend(n for n in nums if n not in valid)
        return "[" + ", ".join(str(n) for n in keep) + "]" if keep else ""

    cleaned = CITATION.sub(fix, text)
    cleaned = re.sub(r"[ \t]+([.,;:])", r"\1", cleaned)
    cleaned = re.sub(r"[ \t]{2,}", " ", cleaned)
    return cleaned, sorted(set(dropped))


_QUOTED = re.compile(r'"([^"]{10,})"')


def _claim(sentence: str) -> str:
    """The part of a sentence that makes the claim: its quotation when it quotes, else all of it."""
    quoted = _QUOTED.findall(sentence)
    return " ".join(quoted) if quoted else CITATION.sub("", sentence)


def support(sentence: str, passage: str) -> float:
    """Share of the claim's content words (stemmed) that occur in the passage (1.0 for a verbatim quote)."""
    claim = _tokens(_claim(sentence))
    if not claim:
        return 0.0
    return len(claim & _tokens(passage)) / len(claim)


def best_quote(sentence: str, passage: str) -> str:
    """The sentence of the passage that best supports the claim."""
    sents = split_sentences(passage) or [passage]
    claim = _tokens(_claim(sentence))
    if not claim:
        return sents[0]
    return max(sents, key=lambda s: len(claim & _tokens(s)) / (1 + 0.01 * len(s)))


def build_citations(answer: str, sources: Sequence[Source]) -> list[Citation]:
    """One Citation per cited source, with the quote and the support of the sentences that cite it."""
    by_n = {s.n: s for s in sources}
    best: dict[int, tuple[float, str]] = {}
    sentences = [s for line in answer.splitlines() for s in split_sentences(line)]
    for sentence in sentences or [answer]:
        for n in parse_citations(sentence):
            src = by_n.get(n)
            if src is None:
                continue
            sup = support(sentence, src.text)
            if n not in best or sup > best[n][0]:
                best[n] = (sup, best_quote(sentence, src.text))
    out = []
    for n in parse_citations(answer):
        if n in best:
            src = by_n[n]
            sup, quote = best[n]
            ref = src.model_dump(include=set(NumberedRef.model_fields))
            out.append(Citation(**ref, quote=quote, support=round(sup, 4)))
    return out


UNSUPPORTED = "(not supported by the cited passages)"
_PROSE = re.compile(r"[A-Za-z]{3,}")


def statements(answer: str, sources: Sequence[Source], min_support: float) -> list[Statement]:
    """Each sentence of an answer that makes a claim, with the support of the passages it cites: a sentence
    citing nothing, or whose cited passages hold under `min_support` of its content words, is unsupported.
    Headings and lines without words (list markers, "Sources:") are not claims."""
    by_n = {s.n: s for s in sources}
    claims: list[tuple[str, list[int]]] = []
    for line in answer.splitlines():
        for sentence in split_sentences(line):
            cited = [n for n in parse_citations(sentence) if n in by_n]
            if not _PROSE.search(CITATION.sub("", sentence)):  # "[2]." after the full stop cites the sentence before
                if claims and cited:
                    claims[-1][1].extend(n for n in cited if n not in claims[-1][1])
                continue
            # a short line is a claim when it cites a source ("PWNED [1]" must meet the support check too)
            if (len(_tokens(CITATION.sub("", sentence))) < 3 and not cited) or sentence.rstrip().endswith(":"):
                continue
            claims.append((sentence.strip(), cited))
    out = []
    for sentence, cited in claims:
        sup = max((support(sentence, by_n[n].text) for n in cited), default=0.0)
        out.append(Statement(text=sentence, cited=cited, support=round(sup, 4), supported=bool(cited) and sup >= min_support))
    return out


def mark_unsupported(answer: str, stated: Sequence[Statement]) -> str:
    """The answer with UNSUPPORTED after each unsupported sentence (its first occurrence)."""
    for st in stated:
        if not st.supported:
            at = answer.find(st.text)
            if at >= 0:
                end = at + len(st.text)
                answer = f"{answer[:end]} {UNSUPPORTED}{answer[end:]}"
    return answer
