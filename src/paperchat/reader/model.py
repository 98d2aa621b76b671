"""The sentence reader at run time: our own cross-encoder (trained by `paperchat.reader.train`, shipped in
`models/reader-sentence/`, int8 ONNX) run by ONNX Runtime, with the tokenizer it was trained with.

It scores (question, candidate sentence with its neighbours): a logit above 0 means the reader would rather quote
that sentence than say the text does not answer (its training put "none of them" at 0). The weights are checked
against the sha256 in their model card's folder before they load; a missing or altered file is a ConfigError that
says how to get it back (nothing is downloaded).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from paperchat.answering.combine import Combiner, load_combiner
from paperchat.errors import ConfigError
from paperchat.hashing import sha256_file

if TYPE_CHECKING:
    from paperchat.settings import Settings

MAX_TOKENS = 128  # question + sentence + neighbours; longer pairs lose the end of the neighbours
# one pair per run: int8 dynamic quantisation scales activations over the whole batch, so a sentence's score
# would depend on its batchmates; alone it does not, and with no padding it is faster (32 sentences: 89 ms
# alone against 195 ms as one batch, 2 cores). The pairs run side by side instead: one single-threaded session
# run from `workers` threads (as many as the cores, at most 2), which gives the same logits bit for bit.
BATCH = 1
MODELS_DIR = Path(__file__).resolve().parents[3] / "models"
SENTENCE_READER = MODELS_DIR / "reader-sentence"
PAPER_RERANKER = MODELS_DIR / "reader-papers"
PAPER_TOKENS = 256  # the reranker reads the question, the title and the abstract (the rest is cut)


def pair_text(sentence: str, context: str) -> str:
    """What the reader reads beside the question: the sentence, then its neighbours."""
    return f"{sentence} [SEP] {context}" if context else sentence


class SentenceReader:
    """Scores candidate sentences for a question (loaded lazily, thread-safe).

    Args:
        folder: the model folder (model.onnx, tokenizer/tokenizer.json, model.sha256).
        model_file: the ONNX file inside it.
        check: verify the sha256 before loading (training validates a fresh export without one).
        max_tokens: the longest pair read (the rest of the second text is cut).
        absent: what the error says when the weights are not there.
        remedy: what it tells the user to do then, or when they do not match their sha256.
        workers: pairs scored at once, each on one core (default: the cores this process may use, at most 2).
    """

    def __init__(
        self, folder: Path = SENTENCE_READER, model_file: str = "model.onnx", check: bool = True, max_tokens: int = MAX_TOKENS,
        absent: str = "the sentence reader's weights are missing", remedy: str = "restore models/ from the repository, or set PAPERCHAT_READER=off",
        workers: int | None = None,
    ) -> None:
        self.folder = folder
        self.max_tokens = max_tokens
        self.model_file = model_file
        self.check = check
        self.absent, self.remedy = absent, remedy
        self._session: Any = None
        self._tok: Any = None
        self._lock = threading.Lock()
        self.workers = workers if workers is not None else max(1, min(2, len(os.sched_getaffinity(0))))
        self._pool: ThreadPoolExecutor | None = None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                path = self.folder / self.model_file
                if not path.exists():
                    raise ConfigError(f"{self.absent} ({path})", self.remedy)
                if self.check:
                    want = (self.folder / "model.sha256").read_text().split()[0]
                    if sha256_file(path) != want:
                        raise ConfigError(f"{path} does not match its sha256 in model.sha256", self.remedy)
                import onnxruntime as ort
                from tokenizers import Tokenizer

                tok = Tokenizer.from_file(str(self.folder / "tokenizer" / "tokenizer.json"))
                tok.enable_truncation(self.max_tokens, strategy="only_second")
                tok.enable_padding(pad_id=0, pad_token="[PAD]")
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = 1  # one pair per core: faster than two threads on one pair
                opts.inter_op_num_threads = 1
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
                self._tok = tok
                if self.workers > 1:
                    self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="paperchat-reader")
            return self._session, self._tok

    def score(self, question: str, sentences: Sequence[str], contexts: Sequence[str] | None = None) -> np.ndarray:
        """One logit per sentence (above 0: it answers the question rather than not)."""
        if not sentences:
            return np.zeros(0, dtype=np.float32)
        session, tok = self._load()
        ctx = contexts if contexts is not None else [""] * len(sentences)
        pairs = [(question, pair_text(s, c)) for s, c in zip(sentences, ctx, strict=True)]

        feeds = []
        for i in range(0, len(pairs), BATCH):  # tokenised here; only the sessions run on the pool's threads
            enc = tok.encode_batch(pairs[i : i + BATCH])
            feeds.append({
                "input_ids": np.asarray([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.asarray([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.asarray([e.type_ids for e in enc], dtype=np.int64),
            })

        def run(feed: dict[str, np.ndarray]) -> np.ndarray:
            return np.asarray(session.run(None, feed)[0], dtype=np.float32)[:, 0]

        out = list(self._pool.map(run, feeds)) if self._pool is not None and len(feeds) > 1 else [run(f) for f in feeds]
        return np.concatenate(out)


_SHARED: dict[Path, SentenceReader] = {}
_SHARED_LOCK = threading.Lock()


def _shared(folder: Path, **kw: Any) -> SentenceReader:
    with _SHARED_LOCK:
        if folder not in _SHARED:
            _SHARED[folder] = SentenceReader(folder, **kw)
        return _SHARED[folder]


def shipped_reader() -> SentenceReader:
    """The shipped sentence reader, one per process (AskPDF and the comparison tables share its session)."""
    return _shared(SENTENCE_READER)


def sentence_reader(settings: Settings) -> Callable[[str, Sequence[str], Sequence[str]], np.ndarray] | None:
    """The sentence reader the settings ask for (`reader = "on"`: the shipped model, one session per process), or
    None for `off` (the rules alone)."""
    if settings.reader == "off":
        return None
    return shipped_reader().score


def sentence_combiner(settings: Settings) -> Combiner | None:
    """The fitted combination of the reader's logit with the rules (models/reader-sentence/combine.json, written by
    `python -m paperchat.reader.fit_combine`) when the reader orders the sentences and `reader_combine` is on;
    None otherwise (the fixed `reader_mix`)."""
    if settings.reader != "on" or not settings.answers.reader_combine:
        return None
    return load_combiner(SENTENCE_READER / "combine.json")


def paper_reranker(settings: Settings) -> Callable[[str, Sequence[str]], np.ndarray] | None:
    """The paper reranker the settings ask for (`reranker = "on"`, the default since Stop 39: models/reader-papers,
    written by `python -m paperchat.reader.papers --init READER_TORCH`), or None (`off`: the fused order)."""
    if settings.reranker == "off":
        return None
    return _shared(
        PAPER_RERANKER, max_tokens=PAPER_TOKENS, absent="no paper reranker is installed",
        remedy="train one with `python -m paperchat.reader.papers --out models/reader-papers`, or set PAPERCHAT_RERANKER=off",
    ).score
