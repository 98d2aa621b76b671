"""The answerer for small local models: a short prompt, few and short sources, and a stream cleaned of what such
models invent.

Small models (SmolLM2-135M, Qwen2.5-1.5B) cite sources they were not shown, loop on a sentence until the token
limit, and go on to write a new "Question:" or a "References:" list. `InventionFilter` cleans the token stream as it
passes: citations of sources not shown are removed (the answer pipeline would keep a number that was retrieved but
cut from the prompt), a sentence that repeats an earlier one ends the answer (and the request, saving the tokens),
and so does a line that starts an invented section. Text that could still turn out to be a repeat is held back only
until it differs from every earlier sentence, so the answer still streams token by token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from paperchat.citations import CITATION, parse_group
from paperchat.prompts import SMALL_SYSTEM_PROMPT, SMALL_USER_TEMPLATE
from paperchat.providers.answerers import OpenAIAnswerer, format_sources
from paperchat.types import Source

# what a small model writes when it goes on past its answer (compared lower-cased, at a sentence's start)
STOP_STARTS = ("question:", "sources:", "source:", "references:", "reference:", "answer:", "user:", "assistant:", "<|im_", "<|end")
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n+")
_OPEN_BRACKET_HOLD = 24  # an unclosed "[" is held this many characters waiting for its "]"
_MIN_REPEAT = 15  # sentences shorter than this may repeat ("See [1].")


def _key(text: str) -> str:
    return " ".join(text.lower().split())


class InventionFilter:
    """Feed it the pieces of a streamed answer; it returns what to show and sets `stopped` when the rest is invented.

    Args:
        shown: the source numbers the model was shown; citations of any other number are removed.
    """

    def __init__(self, shown: Iterable[int]) -> None:
        self.shown = set(shown)
        self.dropped: list[int] = []
        self.stopped = False
        self._raw = ""  # received, citations not yet rewritten (an unclosed "[" waits here)
        self._sentence = ""  # the sentence being written (rewritten text)
        self._emitted = 0  # how much of _sentence has been shown
        self._seen: set[str] = set()

    def _rewrite(self, text: str) -> str:
        def fix(m: re.Match[str]) -> str:
            nums = parse_group(m.group(1))
            keep = [n for n in dict.fromkeys(nums) if n in self.shown]
            self.dropped += [n for n in nums if n not in self.shown]
            return "[" + ", ".join(map(str, keep)) + "]" if keep else ""

        return CITATION.sub(fix, text)

    def _held(self, key: str) -> bool:
        """Whether the sentence so far could still become a repeat or an invented section."""
        return any(s.startswith(key) for s in self._seen) or any(s.startswith(key) or key.startswith(s) for s in STOP_STARTS)

    def _invented(self, key: str) -> bool:
        return key in self._seen or key.startswith(STOP_STARTS)

    def feed(self, piece: str) -> str:
        """The part of the answer that can be shown now (maybe empty)."""
        if self.stopped:
            return ""
        self._raw += piece
        cut = len(self._raw)
        open_at = self._raw.rfind("[")
        if open_at > self._raw.rfind("]") and len(self._raw) - open_at <= _OPEN_BRACKET_HOLD:
            cut = open_at
        ready, self._raw = self._rewrite(self._raw[:cut]), self._raw[cut:]
        return self._take(ready, final=False)

    def finish(self) -> str:
        """What is left to show when the stream ends."""
        if self.stopped:
            return ""
        ready, self._raw = self._rewrite(self._raw), ""
        return self._take(ready, final=True)

    def _take(self, text: str, final: bool) -> str:
        out: list[str] = []
        self._sentence += text
        while True:
            m = _BOUNDARY.search(self._sentence)
            if m is None:
                break
            done, rest = self._sentence[: m.end()], self._sentence[m.end() :]
            key = _key(done)
            if key and self._invented(key):
                self.stopped = True
                return "".join(out)
            out.append(done[self._emitted :])
            if len(key) >= _MIN_REPEAT:
                self._seen.add(key)
            self._sentence, self._emitted = rest, 0
        key = _key(self._sentence)
        if final and key and self._invented(key):
            self.stopped = True
        elif key and key.startswith(STOP_STARTS):
            self.stopped = True
        elif final or not self._held(key):
            out.append(self._sentence[self._emitted :])
            self._emitted = len(self._sentence)
        return "".join(out)


class LocalAnswerer(OpenAIAnswerer):
    """The bundled llama.cpp server's model as an answerer: `SMALL_SYSTEM_PROMPT`, the first `max_sources` sources
    cut at `source_chars`, at most `max_tokens` tokens, the stream cleaned by `InventionFilter`."""

    def __init__(
        self, model: str, base_url: str, timeout: float, max_retries: int, max_tokens: int = 256, max_sources: int = 5, source_chars: int = 700
    ) -> None:
        super().__init__(model, base_url, timeout, max_retries, name="local", max_tokens=max_tokens)
        self.max_sources = max_sources
        self.source_chars = source_chars
        self.last_filter: InventionFilter | None = None

    def shown(self, sources: Sequence[Source]) -> list[Source]:
        """The sources the model is shown."""
        return list(sources[: self.max_sources])

    def messages(self, question: str, sources: Sequence[Source]) -> list[tuple[str, str]]:
        """The short prompt: instruction, then the shown sources, then the question (closest to the answer)."""
        shown = format_sources(self.shown(sources), self.source_chars)
        return [("system", SMALL_SYSTEM_PROMPT), ("user", SMALL_USER_TEMPLATE.format(question=question, sources=shown))]

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool) -> Iterator[str]:
        """The model's tokens, cleaned; the request is closed as soon as the rest would be invented."""
        filt = self.last_filter = InventionFilter(s.n for s in self.shown(sources))
        tokens = super().stream(question, sources, topic_level)
        try:
            for piece in tokens:
                text = filt.feed(piece)
                if text:
                    yield text
                if filt.stopped:
                    return
            text = filt.finish()
            if text:
                yield text
        finally:
            close = getattr(tokens, "close", None)
            if close is not None:
                close()  # a loop or an invented section: the request ends and the server stops generating
