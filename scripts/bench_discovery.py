"""Discovery's parts timed on a store, padded to N rows with noisy copies of its own abstracts (a scale check
when the larger store is not at hand). Stores no topics; opens the store as any command does, so run it on a copy.

Usage: python scripts/bench_discovery.py DATA_DIR [ROWS]   (e.g. a copy of the 17k store, 32421)
"""
import resource
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from paperchat.discovery.clusters import DiscoverySettings, _unit, abstract_vectors, centroids_of, choose_tags, cluster
from paperchat.discovery.labels import label_clusters
from paperchat.library import Library
from paperchat.settings import Settings

t0 = time.perf_counter()
lib = Library(Settings(data_dir=Path(sys.argv[1])))
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 0
ids, v = abstract_vectors(lib)
papers = lib.catalog.get_many(ids)
rng = np.random.default_rng(0)
extra = rng.choice(len(ids), max(rows - len(ids), 0), replace=len(ids) < rows - len(ids))
v2 = np.concatenate([v, v[extra] + rng.normal(0, 0.02, (len(extra), v.shape[1])).astype(np.float32)])
titles = [papers[i].title for i in ids] + [papers[ids[j]].title for j in extra]
abstracts = [papers[i].abstract for i in ids] + [papers[ids[j]].abstract for j in extra]
t1 = time.perf_counter(); print(f"load {t1-t0:.1f}s rows {len(v2)}", flush=True)
s = DiscoverySettings()
with threadpool_limits(1):
    k = s.k_for(len(v2)); labels = cluster(v2, k, s); k = int(labels.max()) + 1
    t2 = time.perf_counter(); print(f"k-means k={k} {t2-t1:.1f}s", flush=True)
    terms = label_clusters(titles, abstracts, labels, k, s.labels)
    t3 = time.perf_counter(); print(f"labels {t3-t2:.1f}s", flush=True)
    cents = centroids_of(v2, labels, k); tags = choose_tags(_unit(v2) @ cents.T, [str(i) for i in range(k)], s, own=labels)
    t4 = time.perf_counter(); print(f"tags {t4-t3:.1f}s", flush=True)
print(f"total {t4-t0:.1f}s peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f} MB")
