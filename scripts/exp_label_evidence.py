"""Experiment (issue 16, label precision): a discovered-topic tag must be said by its paper (a word of the label
in its title or abstract) unless the paper is within `evidence_above` of the topic's centroid. How would that
rule have changed the hand-read label samples in eval/topic_labels_judged.jsonl?

Each judged row is (label, paper, fit). The rule keeps the row when the paper holds a word of the label or its
cosine to its own cluster's centroid is at least X (the clusters are recomputed exactly as discovery does: same
vectors, same seed). Bars are chosen on the TUNE samples (seeds 101, 202, 303) and then shown on seed 404,
which no bar was chosen on. Nothing here is a new judgement: a fresh sample, read blind, reports the result.

Usage: PAPERCHAT_DATA_DIR=<full store> PYTHONPATH=src python scripts/exp_label_evidence.py [JUDGED.jsonl]
"""

import json
import sys
from pathlib import Path

import numpy as np

from paperchat.discovery.clusters import DiscoverySettings, _unit, abstract_vectors, centroids_of, cluster
from paperchat.discovery.labels import holds_label, label_words
from paperchat.library import Library
from paperchat.settings import Settings

TUNE = (101, 202, 303)
HELD = (404,)
BARS = (0.75, 0.78, 0.80, 0.82, 0.85, 0.90, 2.0)  # 2.0: no paper is close enough to skip the check


def main() -> None:
    """Print kept/fit counts per bar on the tune and held-out samples."""
    judged = Path(sys.argv[1] if len(sys.argv) > 1 else "eval/topic_labels_judged.jsonl")
    rows = [json.loads(line) for line in judged.read_text().splitlines() if line.strip()]
    lib = Library(Settings())
    s = DiscoverySettings()
    ids, vectors = abstract_vectors(lib)
    labels = cluster(vectors, s.k_for(len(ids)), s)
    cents = centroids_of(vectors, labels, int(labels.max()) + 1)
    own = np.einsum("ij,ij->i", _unit(vectors), cents[labels])
    pos = {pid: i for i, pid in enumerate(ids)}
    papers = lib.catalog.get_many([r["paper"] for r in rows])
    for r in rows:
        p = papers[r["paper"]]
        r["says"] = holds_label(label_words(r["label"]), f"{p.title}\n{p.abstract}")
        r["sim"] = float(own[pos[r["paper"]]])
    print(f"{len(ids)} papers, {int(labels.max()) + 1} clusters; {len(rows)} judged rows")
    for name, seeds in (("tune", TUNE), ("held", HELD)):
        part = [r for r in rows if r["seed"] in seeds]
        fits = sum(r["fit"] for r in part)
        print(f"\n{name} {seeds}: before {fits}/{len(part)} = {fits / len(part):.3f} fit")
        for bar in BARS:
            kept = [r for r in part if r["says"] or r["sim"] >= bar]
            kf = sum(r["fit"] for r in kept)
            print(
                f"  evidence_above {bar:.2f}: kept {kf}/{len(kept)} = {kf / max(len(kept), 1):.3f} fit; "
                f"fitting papers dropped {fits - kf} of {fits}, misfits dropped {len(part) - fits - (len(kept) - kf)} of {len(part) - fits}"
            )
    lib.close()


if __name__ == "__main__":
    main()
