"""Worker processes for untrusted work (parsing and rendering PDFs): bounded in time and memory, dying with
their parent.

A hostile PDF can make PDFium or pypdf allocate gigabytes in seconds (nested form XObjects, a 14,400-pt page at
200%). Anything that parses or renders one runs in a child process whose address space is capped
(`RLIMIT_DATA`) and whose calls have a deadline; when either is hit the child is killed and a fresh one started
for the next call, and the caller gets an error it can show ("this page cannot be shown"), never a dead app.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing as mp
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class WorkerFailed(Exception):
    """A bounded call did not return: `why` says whether it ran out of time or memory, or crashed."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _data_bytes() -> int:
    """This process's current writable private memory (Linux `VmData`), 0 where unknown."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def bound_memory(extra_mb: float) -> None:
    """Cap this process's writable memory (`RLIMIT_DATA`) at its current size plus `extra_mb` (a forked child
    starts with its parent's mappings, so the cap is a budget on top of what is already there). Not the address
    space (`RLIMIT_AS`): every thread's malloc arena reserves 64 MB of it unused, and a child forked from the app
    (torch, OpenVINO) aborted on ordinary pages under such a cap."""
    try:
        import resource

        limit = _data_bytes() + int(extra_mb * 1024 * 1024)
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ImportError, ValueError, OSError):  # not Linux, or not allowed: the deadline still bounds it
        pass


def die_with_parent(parent: int, extra_mb: float = 0.0, deathsig: bool = True) -> None:
    """Worker initializer: the worker dies when the process that started it dies, even by SIGKILL, and (with
    `extra_mb`) may grow at most that much beyond its size at start.

    The kernel's parent-death signal (Linux prctl) kills it at once; a watchdog thread on the parent's pid
    covers other systems (and a parent that died before the signal was armed). The signal fires when the *thread*
    that forked the worker ends, so a long-lived worker forked from a pool thread (the app's, the MCP server's,
    which retire when idle) passes `deathsig=False` and relies on the watchdog alone.
    """
    import ctypes
    import signal
    import sys
    import time

    if deathsig and sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="paperchat-parent-watch", daemon=True).start()
    if extra_mb > 0:
        bound_memory(extra_mb)


class BoundedWorker:
    """One child process that runs calls one at a time, each within `timeout_s`, the child within `memory_mb`
    of address space beyond its start. Started on first use (forked: a spawned interpreter would need an importable
    `__main__`, which `python -c`, stdin and notebooks lack: the child is forked, as the PDF parser's are, and only
    ever runs the one library call); restarted after a call that timed out or killed it.

    Args:
        timeout_s: the most seconds one call may take.
        memory_mb: the most megabytes the child may grow by.
    """

    def __init__(self, timeout_s: float = 20.0, memory_mb: float = 1024.0) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._pool: cf.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self.restarts = 0
        self._exit_hook = False

    def _ensure(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            ctx = mp.get_context("fork")
            self._pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(), self.memory_mb, False))
            if not self._exit_hook:  # stopped before the interpreter tears down the executor's machinery
                atexit.register(self.close)
                self._exit_hook = True
        return self._pool

    def _kill(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        self.restarts += 1

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in the child (fn must be a module-level function); its exceptions are raised here.

        Raises:
            WorkerFailed: the call took longer than `timeout_s`, or the child died (out of memory, a crash).
        """
        with self._lock:
            try:
                try:
                    fut = self._ensure().submit(fn, *args)
                except cf.process.BrokenProcessPool:  # the child died between calls: a fresh one, once
                    self._kill()
                    fut = self._ensure().submit(fn, *args)
                return fut.result(timeout=self.timeout_s)
            except cf.TimeoutError:
                self._kill()
                raise WorkerFailed(f"it took longer than {self.timeout_s:g} s and was stopped") from None
            except (cf.process.BrokenProcessPool, MemoryError):
                self._kill()
                raise WorkerFailed(f"it needed more than {self.memory_mb:g} MB of memory or crashed the reader") from None

    def close(self) -> None:
        """Stop the child (a later call starts a new one)."""
        with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
