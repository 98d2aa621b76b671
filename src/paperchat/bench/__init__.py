"""Benchmarks that print numbers (ratios against a baseline measured in the same run).

Imported only by `paperchat bench`; it works through the core facade (`paperchat.assistant`). One module per
benchmark: `ingest` (abstracts, PDFs, Ray), `query` (latency by store size), `startup`, `viewer` (citation clicks,
quote placement); `naive` is the LangChain baseline and `measure` the shared instruments. The naive baseline needs
the `dev` extra (langchain-chroma, langchain-huggingface): `pip install -e '.[dev]'`.
"""

from paperchat.bench.ingest import ARXIV_ABSTRACTS, bench_ingest, bench_ingest_pdfs, bench_ray_ingest
from paperchat.bench.measure import peak_rss_mb, rss_mb
from paperchat.bench.naive import naive_ingest_pdfs, naive_ingest_records
from paperchat.bench.query import bench_query_sizes, chart_svg, subset_store
from paperchat.bench.startup import bench_startup
from paperchat.bench.viewer import GENERIC_QUESTIONS, bench_placement, bench_viewer

__all__ = [
    "ARXIV_ABSTRACTS",
    "GENERIC_QUESTIONS",
    "bench_ingest",
    "bench_ingest_pdfs",
    "bench_placement",
    "bench_query_sizes",
    "bench_ray_ingest",
    "bench_startup",
    "bench_viewer",
    "chart_svg",
    "naive_ingest_pdfs",
    "naive_ingest_records",
    "peak_rss_mb",
    "rss_mb",
    "subset_store",
]
