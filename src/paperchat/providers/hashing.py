"""The hashing embedder: a bag of words hashed into 384 signed buckets, for tests and quick trials."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from paperchat.text import Tokenizer


class HashingEmbedder:
    """Bag of words hashed into `dim` signed buckets: deterministic, instant, no model and no torch.

    For tests and quick trials only (never the default): it knows words, not meaning. Tokens are the
    search index's (paperchat.text.Tokenizer: stop words removed, stemmed), weighted 1 + log(count), each
    hashed with blake2b (not Python's `hash`, which changes per process) to a bucket and a sign, and the
    vector is L2-normalised. A text without a word gets the vector of a fixed placeholder token, so every
    vector has unit length.
    """

    id = "paperchat/hashing-bow-384"
    dim = 384
    _EMPTY = "\x00empty"

    def __init__(self) -> None:
        self._tokenize = Tokenizer()
        self._slots: dict[str, tuple[int, float]] = {}

    def _slot(self, token: str) -> tuple[int, float]:
        slot = self._slots.get(token)
        if slot is None:
            h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
            slot = (h % self.dim, 1.0 if (h >> 63) & 1 else -1.0)
            if len(self._slots) < 200_000:  # a bounded memo: the vocabulary of a test corpus fits easily
                self._slots[token] = slot
        return slot

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float64)
        counts = Counter(self._tokenize(text)) or Counter([self._EMPTY])
        for token, n in counts.items():
            bucket, sign = self._slot(token)
            vec[bucket] += sign * (1.0 + math.log(n))
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:  # every token cancelled out in shared buckets: fall back to the placeholder
            bucket, sign = self._slot(self._EMPTY)
            vec[bucket], norm = sign, 1.0
        return (vec / norm).astype(np.float32)

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Normalised hashed embeddings of the texts, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """Normalised hashed embedding of a query."""
        return self._vector(text)
