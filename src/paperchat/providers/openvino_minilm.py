"""all-MiniLM-L6-v2 through OpenVINO: the same ONNX export as `onnx_minilm` (fp32, hash-checked in
`<data_dir>/models/`), compiled by OpenVINO's CPU plugin.

On a CPU with AMX or AVX-512 BF16 the plugin infers in bfloat16 by default: on an AMX Xeon (2 cores) it embeds
about 3.7x as many abstracts per second as ONNX Runtime fp32, with vectors within cosine 0.99997 of the fp32 ones
(README, "Faster embedding"); elsewhere it infers in fp32. Because bf16 vectors are not bit-identical to the torch
model's, they are kept as their own embedder (`...+openvino`) for the store's guard, like int8. Tokenization,
pooling and normalisation are the ONNX embedder's. The optional `openvino` extra installs it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.errors import ConfigError
from paperchat.providers.onnx_minilm import MAX_TOKENS, MINILM_ID, ExportedModel, OnnxMiniLMEmbedder, _source_dir


class OpenVinoMiniLMEmbedder(OnnxMiniLMEmbedder):
    """all-MiniLM-L6-v2 compiled by OpenVINO for the CPU (bf16 where the CPU has it, else fp32), loaded lazily."""

    def __init__(self, models_dir: Path, device: str = "cpu", cache_size: int = 1024) -> None:
        super().__init__(models_dir, quantized=False, device=device, cache_size=cache_size)
        self.id = MINILM_ID + "+openvino"
        self.precision: str | None = None  # "bf16" or "f32" once compiled
        self._infer_lock = threading.Lock()  # one inference request, shared by the threads of an app

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import openvino as ov
                    from tokenizers import Tokenizer
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise ConfigError(
                        f"PAPERCHAT_EMBEDDER=minilm-openvino needs the openvino package ({exc})", "pip install -e '.[openvino]' (scripts/setup.sh dev,openvino)"
                    ) from exc
                path = ExportedModel(self.models_dir, False).path()
                if self.device == "cuda":
                    self.device_note = "PAPERCHAT_DEVICE=cuda, but the OpenVINO embedder runs on the CPU: PAPERCHAT_EMBEDDER=minilm runs on a GPU"
                self.device = "cpu"
                threads = self.threads or max(1, len(os.sched_getaffinity(0)))
                compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
                self.precision = str(compiled.get_property("INFERENCE_PRECISION_HINT")).lower().replace("<type: '", "").rstrip("'>")
                self._inputs = {i.get_any_name() for i in compiled.inputs}
                self._request = compiled.create_infer_request()
                self._output = compiled.outputs[0]
                tok = Tokenizer.from_file(str(_source_dir() / "tokenizer.json"))
                tok.enable_truncation(MAX_TOKENS)
                tok.enable_padding(pad_id=0, pad_token="[PAD]")
                self._session = compiled
                self._tokenizer = tok
            return self._session, self._tokenizer

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        _, tok = self._load()
        enc = tok.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with self._infer_lock:
            result = self._request.infer({k: v for k, v in feed.items() if k in self._inputs})
            hidden = np.array(result[self._output], dtype=np.float32)
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms, dtype=np.float32)
