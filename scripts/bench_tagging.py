"""What tagging at ingest costs (issue 16): `discovery.tag_papers` over every paper of the demo corpus, with and
without the label-evidence check, against the demo's own ingest time (shipped vectors: nothing embedded, so the
share printed is an upper bound for a real ingest), twice each, in one run.

Usage: PYTHONPATH=src python scripts/bench_tagging.py
"""

import tempfile
import time
from pathlib import Path

from paperchat.demo import ensure_demo
from paperchat.discovery.clusters import DiscoverySettings, discover, tag_papers
from paperchat.library import Library
from paperchat.settings import Settings


def main() -> None:
    """Print seconds per tagging pass and its share of the demo ingest."""
    lib = Library(Settings(data_dir=Path(tempfile.mkdtemp()) / "store"))
    t = time.perf_counter()
    ensure_demo(lib, show_progress=False)
    ingest = time.perf_counter() - t
    discover(lib)
    ids = [p.id for p in lib.catalog.iter_papers()]
    for evidence in (False, True, False, True):
        t = time.perf_counter()
        n = tag_papers(lib, ids, DiscoverySettings(label_evidence=evidence))
        took = time.perf_counter() - t
        print(f"label_evidence={evidence}: tagged {n} of {len(ids)} in {took:.3f} s; demo ingest {ingest:.1f} s -> {took / ingest:.1%}")
    lib.close()


if __name__ == "__main__":
    main()
