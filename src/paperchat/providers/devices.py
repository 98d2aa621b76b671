"""Where an embedder runs: a GPU's presence, a `Settings.device` value resolved, and the line that explains it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


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
