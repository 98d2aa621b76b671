"""The instruments every benchmark shares: a timed call, latency percentiles and this process's memory."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from paperchat.text import percentile


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """fn's result and how long it took."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def pct(v: list[float], q: int) -> float:
    """The q-th percentile of latencies in ms, rounded to 0.1 (nearest rank, as in eval summaries)."""
    return round(percentile(v, q) or 0.0, 1)


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux /proc; the peak elsewhere)."""
    import os

    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return round(int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return peak_rss_mb()
