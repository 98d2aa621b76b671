"""Writing to the library through the facade: ingest, removal, the demo corpus, and what the benchmarks
need (a subset copied with its vectors, the texts our chunker makes, the Chroma collection for a baseline)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from paperchat.errors import NotFound
from paperchat.ingestion.records import Failure
from paperchat.settings import Settings
from paperchat.types import Paper

if TYPE_CHECKING:
    import numpy as np

    from paperchat.feed import UpdateReport
    from paperchat.ingestion.plans import IngestReport
    from paperchat.library import Library


class IngestOps:
    """The writing half of `Assistant` (a mixin: it needs `settings` and an open `library`)."""

    settings: Settings
    library: Library

    # -- ingest ------------------------------------------------------------------------------------

    def _tagged(self, report: IngestReport) -> IngestReport:
        """After any ingest: new papers, and papers whose abstract changed, get their nearest discovered topics
        (one cheap query when nothing was discovered yet)."""
        from paperchat.discovery.clusters import tag_ingested

        tag_ingested(self.library, report.paper_ids, report.changed)
        return report

    def ingest_papers(self, items: Iterable[Paper | Failure], show_progress: bool | None = False) -> IngestReport:
        """Ingest paper records (one abstract chunk each); failures pass through into the report."""
        from paperchat.ingestion.pipeline import Ingester
        from paperchat.progress import make_progress

        update, close = make_progress(None, enabled=show_progress)  # no counting pass: the input is read once
        try:
            return self._tagged(Ingester(self.library, progress=update).ingest_records(items))
        finally:
            close()

    def ingest_record_files(self, paths: Sequence[Path], show_progress: bool | None = None) -> IngestReport:
        """Ingest arXiv metadata files (JSONL or JSON arrays, .gz ok), each read once as a stream; a missing
        file is a failure of the report, not an error."""
        from paperchat.ingestion.plans import IngestReport
        from paperchat.ingestion.records import read_records

        report = IngestReport()
        max_line = int(self.settings.max_record_line_mb * 1024 * 1024)
        for path in paths:
            if not path.is_file():
                report.failed.append(Failure(str(path), "no such file"))
                continue
            report.merge(self.ingest_papers(read_records(path, max_line), show_progress))
        return report

    def ingest_papers_on_ray(
        self,
        items: Iterable[Paper | Failure],
        address: str,
        workers: int | None = None,
        batch: int | None = None,
        show_progress: bool | None = False,
        start_first: bool = False,
    ) -> IngestReport:
        """Ingest paper records as `ingest_papers` does, with the embedding mapped over batches of `batch`
        records across `workers` Ray workers (None: one per CPU of the cluster) that write into the Chroma
        server (settings.chroma_url); the same chunk ids, skips and catalogue, the BM25 index rebuilt after.
        `start_first`: start the workers before the report's clock starts (the benchmark's steady rate); else
        they start on the first batch that needs embedding (a rerun that finds everything stored starts none).

        Raises:
            ConfigError: no Chroma server set, ray not installed (the `dist` extra), too many workers.
            NetworkError: the Ray cluster at `address` cannot be reached.
        """
        from paperchat.ingestion.distributed import RAY_BATCH, RayIngester
        from paperchat.progress import make_progress

        update, close = make_progress(None, enabled=show_progress)
        try:
            ingester = RayIngester(self.library, address, workers, batch or RAY_BATCH, progress=update, start=start_first)
            try:
                return self._tagged(ingester.ingest_records(items))
            finally:
                ingester.close()
        finally:
            close()

    def ingest_record_files_on_ray(
        self, paths: Sequence[Path], address: str, workers: int | None = None, batch: int | None = None, show_progress: bool | None = None
    ) -> IngestReport:
        """`ingest_record_files` on a Ray cluster (see `ingest_papers_on_ray`): every file in one stream."""
        return self.ingest_papers_on_ray(self._record_stream(paths), address, workers, batch, show_progress)

    def _record_stream(self, paths: Sequence[Path]) -> Iterator[Paper | Failure]:
        """The records of these files one after another; a missing file is a failure in the stream."""
        from paperchat.ingestion.records import read_records

        max_line = int(self.settings.max_record_line_mb * 1024 * 1024)
        for path in paths:
            if path.is_file():
                yield from read_records(path, max_line)
            else:
                yield Failure(str(path), "no such file")

    def ingest_arxiv(self, query: str | None = None, file: Path | None = None, max_results: int = 100) -> IngestReport:
        """Ingest an arXiv API answer: a saved Atom response (`file`) or a live `query`.

        Raises:
            NetworkError: the API cannot be reached.
        """
        from paperchat.ingestion.records import fetch_arxiv, parse_atom

        if file is not None:
            items = list(parse_atom(file.read_bytes(), str(file)))
        else:
            items = list(parse_atom(fetch_arxiv(query or "", max_results), "arXiv API"))
        return self.ingest_papers(items)

    def update(self) -> UpdateReport:
        """Fetch the newest papers of settings.arxiv_categories from the arXiv API since the newest date in
        the store and ingest them page by page (each page whole or not at all), tagged as any ingest tags.

        Raises:
            NetworkError: offline (nothing changed), or a page kept failing (earlier pages stay stored).
            SourceError: a page that is not Atom XML, or the API refused the query.
        """
        from paperchat.feed import update

        return update(self.library, self.settings, self.ingest_papers)

    def ingest_pdfs(self, paths: Sequence[Path], paper_id: str | None = None, show_progress: bool | None = None) -> IngestReport:
        """Ingest PDF files and folders (unchanged files are skipped unparsed); `paper_id` attaches one PDF
        to a known paper."""
        from paperchat.ingestion.pipeline import Ingester
        from paperchat.progress import make_progress

        update, close = make_progress(None, "PDFs", enabled=show_progress)
        try:
            return self._tagged(Ingester(self.library, progress=update).ingest_pdfs(list(paths), paper_id=paper_id))
        finally:
            close()

    @staticmethod
    def count_pdfs(folders: Sequence[Path]) -> int:
        """How many PDF files these folders hold (what `ingest_pdfs` will read)."""
        from paperchat.ingestion.pdf import find_pdfs

        return len(find_pdfs(list(folders))[0])

    def load_demo(self, show_progress: bool | None = None) -> IngestReport | None:
        """Ingest the bundled demo corpus once; None when it is already in (or not bundled)."""
        from paperchat.demo import ensure_demo

        report = ensure_demo(self.library, show_progress=show_progress)
        return self._tagged(report) if report is not None else None

    def adopt_legacy_pdfs(self) -> tuple[int, int]:
        """Copy PDFs that older stores point to outside the data dir in, when their hash still matches:
        (adopted, left unlinked)."""
        from paperchat.ingestion.pdfstore import adopt_legacy_pdfs

        return adopt_legacy_pdfs(self.library)

    def remove_paper(self, paper_id: str) -> int:
        """Remove a paper and its chunks; returns how many chunks went.

        Raises:
            NotFound: the paper is not in the store.
        """
        from paperchat.ingestion.pipeline import Ingester

        n = Ingester(self.library).remove_paper(paper_id)
        if n < 0:
            raise NotFound(f"paper {paper_id} is not in the store", "list papers with `paperchat topics` or check the id")
        return n

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The library's embedder on these texts, in batches of settings.batch_size."""
        return self.library.embedder.embed(list(texts), self.settings.batch_size)
