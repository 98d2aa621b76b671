"""The answerer for small local models: a short prompt that shows the question's best sentences of the sources
(the query-focused selection the extractive answerer quotes from), and a stream cleaned of what such models invent.

Small models (SmolLM2-135M, Qwen2.5-1.5B) cite sources they were not shown, loop on a sentence until the token
limit, and go on to write a new "Question:" or a "References:" list. `InventionFilter` cleans the token stream as it
passes: citations of sources not shown are removed (the answer pipeline would keep a number that was retrieved but
cut from the prompt), a sentence that repeats an earlier one ends the answer (and the request, saving the tokens),
and so does a line that starts an invented section; a sentence the model left uncited gets the shown source that
supports it best (at least half its content words, `citations.support`). Text that could still turn out to be a
repeat is held back only until it differs from every earlier sentence, so the answer still streams token by token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from paperchat.answering.topic_map import TopicContext
from paperchat.citations import CITATION, parse_group, support
from paperchat.passages import clip
from paperchat.prompts import CANNOT_ANSWER, SMALL_SYSTEM_PROMPT, SMALL_USER_TEMPLATE
from paperchat.providers.answerers import OpenAIAnswerer, format_sources
from paperchat.text import Tokenizer
from paperchat.types import Source

if TYPE_CHECKING:
    from paperchat.types import Embedder

# what a small model writes when it goes on past its answer (compared lower-cased, at a sentence's start)
STOP_STARTS = ("question:", "sources:", "source:", "references:", "reference:", "answer:", "user:", "assistant:", "<|im_", "<|end")
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n+")
_OPEN_BRACKET_HOLD = 24  # an unclosed "[" is held this many characters waiting for its "]"
_MIN_REPEAT = 15  # sentences shorter than this may repeat ("See [1].")
_SPACED_CITATION = re.compile(r"([ \t]*)" + CITATION.pattern)  # a removed citation takes its leading space along
_LABEL = re.compile(r"\s*answer\s*:\s*", re.I)  # "Answer:" before the answer is a label, dropped; later it starts an invented section
ATTRIBUTE_AT = 0.5  # an uncited sentence is cited to the shown source holding at least this share of its content words


def _key(text: str) -> str:
    return " ".join(text.lower().split())


class InventionFilter:
    """Feed it the pieces of a streamed answer; it returns what to show and sets `stopped` when the rest is invented.

    Args:
        shown: the text the model was shown of each source, by number; citations of any other number are removed,
            and an uncited sentence is cited to the one that supports it best (when one does).
    """

    def __init__(self, shown: Mapping[int, str]) -> None:
        self.shown = dict(shown)
        self.attributed = 0  # sentences cited by support, not by the model
        self.dropped: list[int] = []
        self.stopped = False
        self._raw = ""  # received, citations not yet rewritten (an unclosed "[" waits here)
        self._sentence = ""  # the sentence being written (rewritten text)
        self._emitted = 0  # how much of _sentence has been shown
        self._seen: set[str] = set()
        self._begun = False  # past a leading "Answer:" label

    def _rewrite(self, text: str) -> str:
        def fix(m: re.Match[str]) -> str:
            nums = parse_group(m.group(2))
            keep = [n for n in dict.fromkeys(nums) if n in self.shown]
            self.dropped += [n for n in nums if n not in self.shown]
            return m.group(1) + "[" + ", ".join(map(str, keep)) + "]" if keep else ""

        return _SPACED_CITATION.sub(fix, text)

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
        # trailing spaces wait (a citation that follows may be removed with them), and so does a sentence's final
        # punctuation (a citation may be added before it)
        cut = len(self._raw[:cut].rstrip(" \t.!?"))
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
        if not self._begun:
            label = _LABEL.match(self._sentence)
            if label:
                if label.end() == len(self._sentence) and not final:
                    return ""  # the label alone so far: wait for what follows it
                self._sentence = self._sentence[label.end() :]
                self._begun = True
            elif _key(self._sentence) and not "answer:".startswith(_key(self._sentence)):
                self._begun = True
        while True:
            m = _BOUNDARY.search(self._sentence)
            if m is None:
                break
            done, rest = self._sentence[: m.end()], self._sentence[m.end() :]
            if not rest and not final:
                return "".join(out)  # what comes next decides: "used.\n[1]" cites after the full stop
            key = _key(done)
            if key and self._invented(key):
                self.stopped = True
                return "".join(out)
            out.append((done if rest.startswith("[") else self._cited(done))[self._emitted :])
            if len(key) >= _MIN_REPEAT:
                self._seen.add(key)
            self._sentence, self._emitted = rest, 0
        key = _key(self._sentence)
        if final and key and self._invented(key):
            self.stopped = True
        elif key and key.startswith(STOP_STARTS):
            self.stopped = True
        elif final:
            out.append(self._cited(self._sentence)[self._emitted :])
        elif not self._held(key):
            out.append(self._sentence[self._emitted :])
            self._emitted = len(self._sentence)
        return "".join(out)

    def _cited(self, sentence: str) -> str:
        """The sentence with the best-supporting shown source cited before its end, when it cites nothing."""
        body = sentence.rstrip()
        end = len(body.rstrip(".!?:;"))
        if end < self._emitted or CITATION.search(body) or CANNOT_ANSWER.lower()[:20] in body.lower() or len(body.split()) < 4:
            return sentence
        best = max(self.shown, key=lambda n: support(body, self.shown[n]), default=None)
        if best is None or support(body, self.shown[best]) < ATTRIBUTE_AT:
            return sentence
        self.attributed += 1
        return f"{sentence[:end]} [{best}]{sentence[end:]}"


class LocalAnswerer(OpenAIAnswerer):
    """The bundled llama.cpp server's model as an answerer: `SMALL_SYSTEM_PROMPT` over the question's best
    `sentences` sentences of the sources (`paperchat.answering.read_sources`, reranked by `embedder` when given;
    with 0, the first `max_sources` sources cut at `source_chars`), at most `max_tokens` tokens, the stream cleaned
    by `InventionFilter`."""

    def __init__(
        self,
        model: str,
        base_url: str,
        timeout: float,
        max_retries: int,
        max_tokens: int = 256,
        max_sources: int = 5,
        source_chars: int = 700,
        sentences: int = 8,
        embedder: Embedder | None = None,
    ) -> None:
        super().__init__(model, base_url, timeout, max_retries, name="local", max_tokens=max_tokens)
        self.max_sources = max_sources
        self.source_chars = source_chars
        self.sentences = sentences
        self.embedder = embedder
        self.tokenizer = Tokenizer()
        self.last_filter: InventionFilter | None = None
        self._shown: tuple[tuple[str, tuple[tuple[int, str], ...]], list[Source]] | None = None

    def shown(self, question: str, sources: Sequence[Source]) -> list[Source]:
        """The sources as the model is shown them: each with its sentences among the question's best (in the order
        of the page), sources ordered by their best sentence; numbers kept, so citations stay the pipeline's."""
        key = (question, tuple((s.n, s.text) for s in sources))
        if self._shown is None or self._shown[0] != key:
            self._shown = (key, self._select(question, sources))
        return self._shown[1]

    def _select(self, question: str, sources: Sequence[Source]) -> list[Source]:
        if self.sentences:
            from paperchat.answering import read_sources

            picked: dict[int, list[tuple[int, str]]] = {}
            for sc in read_sources(question, sources, self.tokenizer, self.embedder).ranked[: self.sentences]:
                picked.setdefault(sc.cand.n, []).append((sc.cand.position, sc.text))
            by_n = {s.n: s for s in sources}
            if picked:
                return [by_n[n].model_copy(update={"text": " ".join(t for _, t in sorted(sents))}) for n, sents in picked.items() if n in by_n]
        return [s.model_copy(update={"text": clip(s.text, self.source_chars) if s.page else s.text[: self.source_chars]}) for s in sources[: self.max_sources]]

    def messages(self, question: str, sources: Sequence[Source]) -> list[tuple[str, str]]:
        """The short prompt: instruction, then the shown sources, then the question (closest to the answer)."""
        shown = format_sources(self.shown(question, sources), self.source_chars * 2, self.source_chars * 2)
        return [("system", SMALL_SYSTEM_PROMPT), ("user", SMALL_USER_TEMPLATE.format(question=question, sources=shown))]

    def stream(self, question: str, sources: Sequence[Source], topic_level: bool, context: TopicContext | None = None) -> Iterator[str]:
        """The model's tokens, cleaned; the request is closed as soon as the rest would be invented."""
        filt = self.last_filter = InventionFilter({s.n: s.text for s in self.shown(question, sources)})
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
