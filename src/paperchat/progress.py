"""A progress bar for long runs (stderr, only on a terminal or when asked)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def make_progress(total: int | None, unit: str = "papers", enabled: bool | None = None) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """Returns (update(papers_done, chunks_done), close()) drawing a tqdm bar with the chunk rate."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return (lambda _p, _c: None), (lambda: None)
    from tqdm import tqdm

    bar = tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True)
    start = time.perf_counter()

    def update(papers: int, chunks: int) -> None:
        bar.n = papers
        rate = chunks / max(time.perf_counter() - start, 1e-9)
        bar.set_postfix_str(f"{chunks} chunks, {rate:.1f} chunks/s")
        bar.refresh()

    return update, bar.close
