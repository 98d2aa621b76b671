"""A retrieved PDF chunk read with its page around it ("small to big").

Retrieval ranks chunks; the answerer reads each PDF chunk with up to `retrieval.context_chars` characters of its
page on either side, cut at sentence ends, so a fact stated just before or after the matched chunk (the setting
in the sentence after "we train the reward model ...") is among the sentences the answer is chosen from. The page
is rebuilt from its stored chunks (their offsets on the page), so nothing is parsed again at question time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from paperchat.types import Chunk

# the end of a sentence: . ? or ! (and closing quotes or brackets), space, then what starts a sentence
_SENTENCE_END = re.compile(r"[.?!][\"'\u201d\u2019)\]]*\s+(?=[A-Z0-9\"'\u201c\u2018(\[])")


def page_text(chunks: Sequence[Chunk]) -> str:
    """A page's text rebuilt from its chunks (placed at their offsets; what the splitter stripped is spaces)."""
    buf = [" "] * max((c.start + len(c.text) for c in chunks), default=0)
    for c in chunks:
        buf[c.start : c.start + len(c.text)] = c.text
    return "".join(buf)


def in_context(chunk: Chunk, text: str, chars: int) -> str:
    """The chunk with up to `chars` characters of its page's `text` (`page_text`) before and after it, starting where
    a sentence starts and ending where one ends (no half sentences added); the chunk alone when its page is unknown."""
    if chars <= 0 or not text:
        return chunk.text
    start, end = chunk.start, chunk.start + len(chunk.text)
    if text[start:end] != chunk.text:  # offsets that do not place it (never expected): keep what was matched
        return chunk.text
    lo, hi = start, end
    if start > 0:
        m = _SENTENCE_END.search(text, max(0, start - chars), start + 1)
        if m is not None:
            lo = m.end()
    if end < len(text):
        ends = list(_SENTENCE_END.finditer(text, end, min(len(text), end + chars + 1)))
        if end + chars >= len(text):
            hi = len(text)
        elif ends:
            hi = ends[-1].start() + len(ends[-1].group(0).rstrip())
    return text[lo:hi].strip() if (lo, hi) != (start, end) else chunk.text


def clip(text: str, max_chars: int) -> str:
    """At most `max_chars` of a passage, kept around its middle (where a widened chunk's own text sits), cut at
    spaces and marked with "..."."""
    if len(text) <= max_chars:
        return text
    lo = (len(text) - max_chars) // 2
    hi = lo + max_chars
    lo = text.find(" ", lo) + 1 if text.find(" ", lo, hi) >= 0 else lo
    cut = text.rfind(" ", lo, hi)
    hi = cut if cut > lo else hi
    return f"... {text[lo:hi].strip()} ..."
