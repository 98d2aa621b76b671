"""Embedders: text -> unit-length vectors. One factory, chosen by `Settings.embedder`; a module per backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paperchat.errors import ConfigError
from paperchat.providers.hashing import HashingEmbedder
from paperchat.providers.minilm import MiniLMEmbedder
from paperchat.providers.onnx_minilm import OnnxMiniLMEmbedder  # onnxruntime itself loads on first use
from paperchat.providers.openvino_minilm import OpenVinoMiniLMEmbedder  # openvino itself loads on first use
from paperchat.types import Embedder

if TYPE_CHECKING:
    from paperchat.settings import Settings


_EMBEDDERS = ("hashing", "minilm", "minilm-onnx", "minilm-onnx-int8", "minilm-openvino")
# the Chroma collection each name writes: ONNX fp32 computes the torch model's function (cosine >= 0.99999 on
# real abstracts), so a store built by either is the other's store, and so does OpenVINO (bf16 on AMX CPUs,
# cosine >= 0.99997, the same top 10: inside the same 1e-4 tolerance); int8 vectors are another embedder's
_STORE_NAMES = {"minilm-onnx": "minilm", "minilm-openvino": "minilm"}
_INSTANCES: dict[tuple[str, str, str], Embedder] = {}


def store_name(embedder: str) -> str:
    """The name under which the store keeps the vectors of the embedder named `embedder` (a Settings value)."""
    return _STORE_NAMES.get(embedder, embedder)


def _make(name: str, settings: Settings) -> Embedder:
    wanted = settings.device
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        return MiniLMEmbedder(device=wanted)
    if name == "minilm-openvino":
        return OpenVinoMiniLMEmbedder(settings.models_path, device=wanted)
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
