"""all-MiniLM-L6-v2 through OpenVINO: the same ONNX export as `onnx_minilm` (fp32, hash-checked in
`<data_dir>/models/`), compiled by OpenVINO's CPU plugin.

Precision is chosen, not left to the plugin: bfloat16 on CPUs with AMX (an AMX Xeon, 2 cores, embeds about 105
abstracts/s in bf16 against 38 in f32, vectors within cosine 0.99998 of the fp32 ones), f32 everywhere else. The
plugin's own default also picks bf16 on AVX-512 BF16 CPUs without AMX, where it is slower than f32 (27 against 40
abstracts/s with oneDNN capped at AVX512_CORE_BF16 on the AMX machine) and was not batch-independent (issue 33).

Every inference runs at a canonical shape: one text (`ROWS`), padded to its token count rounded up to
`LENGTH_STEP`, so a text's vector never depends on what it is batched with: bit-identical alone, in any batch, as
a query or a document, on AMX, AVX-512 (bf16 or f32) and AVX2 CPUs alike (measured with ONEDNN_MAX_CPU_ISA capping
oneDNN on an AMX Xeon; before, bf16 on AVX-512 BF16 gave batch-vs-alone differences of 3.5e-4). Throughput is
about the same as batches of 64 (100 against 109 abstracts/s with AMX; 42 f32 against 30 bf16 without), and a
query is faster (3.4 against 6.3 ms p50 with AMX). That is inside the
tolerance under which ONNX fp32 shares the torch model's store (cosine >= 0.9999, the same ranked top 10 on dev
questions, tested), so its vectors share that store too: switching to it needs no re-embedding. Tokenization,
pooling and normalisation are the ONNX embedder's. Where OpenVINO is missing or cannot compile the model, it runs
through ONNX Runtime instead and says so (`device_note`). It is a main dependency (the default embedder).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.providers.onnx_minilm import MINILM_ID, ExportedModel, OnnxMiniLMEmbedder, new_tokenizer

log = logging.getLogger(__name__)


ROWS = 1  # texts per inference, always: each text runs alone (rows of 8 made a lone query 2-5x slower)
LENGTH_STEP = 16  # token counts are rounded up to a multiple of this (few shapes: 100 abstracts/s against 86 unpadded)


def has_amx() -> bool:
    """Whether this CPU has AMX for bf16 (and oneDNN is not capped below it by ONEDNN_MAX_CPU_ISA)."""
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if cap and "AMX" not in cap and cap != "ALL":
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return "amx_bf16" in line.split()
    except OSError:
        pass
    return False


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
                    hint = "bf16" if has_amx() else "f32"
                    config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": hint}
                    compiled = ov.Core().compile_model(str(path), "CPU", config)
                except Exception as exc:  # noqa: BLE001 - not installed, or a CPU its plugin cannot compile for
                    log.warning("OpenVINO cannot run the model here (%s): using ONNX Runtime", exc)
                    self._fallback = True
                    self.precision = "f32"
                    self._fallback_note = (
                        f"OpenVINO cannot run here ({type(exc).__name__}: {str(exc)[:120]}); "
                        "embedded through ONNX Runtime (the same vectors; scripts/setup.sh installs openvino)"
                    )
                else:
                    from paperchat.providers.devices import gpu_present

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

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised vectors of the texts, each computed at a canonical shape (module docstring)."""
        session, tok = self._load()
        if self._fallback:
            return super()._run(texts)
        enc = tok.encode_batch(list(texts))
        lengths = [int(sum(e.attention_mask)) for e in enc]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        groups: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            groups.setdefault(max(1, -(-n // LENGTH_STEP)) * LENGTH_STEP, []).append(i)
        for width, members in groups.items():
            for start in range(0, len(members), ROWS):
                part = members[start : start + ROWS]
                rows = part + [part[0]] * (ROWS - len(part))
                ids = np.zeros((ROWS, width), dtype=np.int64)
                mask = np.zeros((ROWS, width), dtype=np.int64)
                for r, i in enumerate(rows):
                    ids[r, : lengths[i]] = enc[i].ids[: lengths[i]]
                    mask[r, : lengths[i]] = 1
                hidden = self._hidden(session, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
                m = mask[..., None].astype(np.float32)
                pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
                pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
                out[part] = pooled[: len(part)]
        return out

    def _hidden(self, session: Any, feed: dict[str, np.ndarray]) -> np.ndarray:
        if self._fallback:
            return super()._hidden(session, feed)
        with self._infer_lock:
            result = self._request.infer({k: v for k, v in feed.items() if k in self._inputs})
            return np.array(result[self._output], dtype=np.float32)
