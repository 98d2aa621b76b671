"""all-MiniLM-L6-v2 through OpenVINO: the same ONNX export as `onnx_minilm` (fp32, hash-checked in
`<data_dir>/models/`), compiled by OpenVINO's CPU plugin.

On a CPU with AMX or AVX-512 BF16 the plugin infers in bfloat16 by default: on an AMX Xeon (2 cores) it embeds
about 3.7x as many abstracts per second as ONNX Runtime fp32, with vectors within cosine 0.99998 of the fp32 ones
(docs/measured.md, "Faster embedding"); elsewhere it infers in fp32 (about 1.4x ONNX Runtime there). That is inside the
tolerance under which ONNX fp32 shares the torch model's store (cosine >= 0.9999, the same ranked top 10 on dev
questions, tested), so its vectors share that store too: switching to it needs no re-embedding. Tokenization,
pooling and normalisation are the ONNX embedder's. Where OpenVINO is missing or cannot compile the model, it runs
through ONNX Runtime instead and says so (`device_note`). It is a main dependency (the default embedder).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.providers.onnx_minilm import MINILM_ID, ExportedModel, OnnxMiniLMEmbedder, new_tokenizer

log = logging.getLogger(__name__)


class OpenVinoMiniLMEmbedder(OnnxMiniLMEmbedder):
    """all-MiniLM-L6-v2 compiled by OpenVINO for the CPU (bf16 where the CPU has it, else fp32), loaded lazily."""

    def __init__(self, models_dir: Path, device: str = "cpu", cache_size: int = 1024) -> None:
        super().__init__(models_dir, quantized=False, device=device, cache_size=cache_size)
        self.id = MINILM_ID  # the fp32 model's function within cosine 1e-4: the same store (module docstring)
        self._fallback = False  # OpenVINO could not load: ONNX Runtime runs the same export
        self._fallback_note = ""
        self.precision: str | None = None  # "bf16" or "f32" once compiled
        self._infer_lock = threading.Lock()  # one inference request, shared by the threads of an app

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None and not self._fallback:
                path = ExportedModel(self.models_dir, False).path()
                try:
                    import openvino as ov

                    threads = self.threads or max(1, len(os.sched_getaffinity(0)))
                    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
                except Exception as exc:  # noqa: BLE001 - not installed, or a CPU its plugin cannot compile for
                    log.warning("OpenVINO cannot run the model here (%s): using ONNX Runtime", exc)
                    self._fallback = True
                    self.precision = "f32"
                    self._fallback_note = f"OpenVINO cannot run here ({type(exc).__name__}: {str(exc)[:120]}); embedded through ONNX Runtime (the same vectors; scripts/setup.sh installs openvino)"
                else:
                    from paperchat.providers.embedders import gpu_present

                    if self.device == "cuda":
                        self.device_note = "PAPERCHAT_DEVICE=cuda, but the OpenVINO embedder runs on the CPU: PAPERCHAT_EMBEDDER=minilm runs on a GPU"
                    elif self.device == "auto" and gpu_present():
                        self.device_note = "a GPU is present but the OpenVINO embedder runs on the CPU: PAPERCHAT_EMBEDDER=minilm runs on it through torch"
                    self.device = "cpu"
                    self.precision = str(compiled.get_property("INFERENCE_PRECISION_HINT")).lower().replace("<type: '", "").rstrip("'>")
                    self._inputs = {i.get_any_name() for i in compiled.inputs}
                    self._request = compiled.create_infer_request()
                    self._output = compiled.outputs[0]
                    self._session = compiled
                    self._tokenizer = new_tokenizer()
        if self._fallback:  # the ONNX Runtime session of the same export (the parent loads it)
            loaded = super()._load()
            self.device_note = self.device_note or self._fallback_note
            return loaded
        return self._session, self._tokenizer

    def _hidden(self, session: Any, feed: dict[str, np.ndarray]) -> np.ndarray:
        if self._fallback:
            return super()._hidden(session, feed)
        with self._infer_lock:
            result = self._request.infer({k: v for k, v in feed.items() if k in self._inputs})
            return np.array(result[self._output], dtype=np.float32)
