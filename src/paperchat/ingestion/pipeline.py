"""The ingest pipeline: skip what is stored (before embedding), embed the rest in batches, write the store,
then the catalogue, then bring the search index up to date (through the write unit, paperchat.writer).

Order matters for `kill -9`: chunks go to Chroma first (ids are content hashes, so a repeat is a no-op),
the catalogue row is written after its chunks, and the search index is marked dirty before Chroma changes
and rebuilt at the end. A rerun therefore finishes a killed run with no duplicate and no missing chunk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.dates import parse_date
from paperchat.ingestion.chunking import PageChunker, abstract_chunk
from paperchat.ingestion.pdf import find_pdfs, load_sidecars, parse_many, sha256_file
from paperchat.ingestion.pdfstore import store_pdf, stored_copy
from paperchat.ingestion.plans import IngestReport, PdfPlan, RecordBatch
from paperchat.ingestion.records import Failure
from paperchat.ingestion.stamp import PdfStamp
from paperchat.library import Library
from paperchat.providers.devices import device_note, device_of
from paperchat.store import StoredChunk
from paperchat.text import clean_text
from paperchat.types import ChunkKind, Paper, ParsedPdf
from paperchat.writer import Writer

PAPER_BATCH = 512
PDF_EMBED_GROUP = 256  # new PDF chunks embedded in one call: a few PDFs, sorted by length together
Progress = Callable[[int, int], None]  # (papers done, chunks done)


def _pdf_paper_id(pdf: ParsedPdf, side: dict[str, Any], paper_id: str | None) -> str:
    """The paper id a PDF is stored under: the given one, the sidecar's or the stamp's arXiv id, else its hash."""
    return paper_id or (side.get("arxiv_id") or None) or pdf.arxiv_id or f"pdf-{pdf.sha256[:12]}"


class Ingester:
    """Writes papers and PDFs into a Library.

    Args:
        library: the open library.
        vector_cache: precomputed vectors by chunk id (the bundled demo corpus); used instead of embedding.
        progress: called after each batch with running totals.
    """

    def __init__(self, library: Library, vector_cache: dict[str, np.ndarray] | None = None, progress: Progress | None = None) -> None:
        self.lib = library
        self.settings = library.settings
        self.vector_cache = vector_cache or {}
        self.progress = progress
        self.paper_batch = PAPER_BATCH  # records per batch
        self._unit: Writer | None = None

    # -- shared steps -------------------------------------------------------------------------------

    def _note_device(self, report: IngestReport) -> None:
        """Say in the report where the embedder ran (once it has loaded: "cpu" or "cuda")."""
        device = device_of(self.lib.embedder)
        report.device = device if device in ("cpu", "cuda") else ""
        report.device_note = device_note(self.lib.embedder)

    def _embed(self, chunks: Sequence[StoredChunk]) -> np.ndarray:
        vectors = np.zeros((len(chunks), self.lib.embedder.dim), dtype=np.float32)
        todo = []
        for i, c in enumerate(chunks):
            cached = self.vector_cache.get(c.id)
            if cached is not None:
                vectors[i] = cached
            else:
                todo.append(i)
        if todo:
            vectors[todo] = self.lib.embedder.embed([chunks[i].text for i in todo], self.settings.batch_size)
        return vectors

    def _remove_stale(self, paper_ids: Sequence[str], kind: ChunkKind, keep: set[str], report: IngestReport) -> None:
        if not paper_ids:
            return
        stale = [i for i in self.lib.store.ids_of_papers(paper_ids, kind) if i not in keep]
        if stale:
            self._writer.delete(stale)
            report.chunks_removed += len(stale)

    @property
    def _writer(self) -> Writer:
        """The write unit of the writer-lock hold this ingest runs in (`Library.writing`)."""
        assert self._unit is not None, "store writes happen inside `with self._writing()`"
        return self._unit

    @contextmanager
    def _writing(self) -> Iterator[Writer]:
        with self.lib.writing() as writer:
            self._unit = writer
            try:
                yield writer
            finally:
                self._unit = None

    def finish(self) -> None:
        """Bring the search index up to date with this run's changes (or rebuild one a killed run left dirty)."""
        self._writer.finish()

    # -- abstract records ---------------------------------------------------------------------------

    def ingest_records(self, items: Iterable[Paper | Failure]) -> IngestReport:
        """Ingest paper records (one chunk each); failures pass through into the report."""
        with self._writing():  # one writer at a time per data dir
            self.lib.sync_topics()  # stored papers follow the rules the new ones are matched with
            return self._ingest_records(items)

    def _ingest_records(self, items: Iterable[Paper | Failure]) -> IngestReport:
        t0 = time.perf_counter()
        report = IngestReport()
        batch: list[Paper] = []
        for item in items:
            if isinstance(item, Failure):
                report.failed.append(item)
                continue
            batch.append(item)
            if len(batch) >= self.paper_batch:
                self._records_batch_safe(batch, report)
                batch = []
        if batch:
            self._records_batch_safe(batch, report)
        self._drain(report)
        self.finish()
        report.seconds = time.perf_counter() - t0
        self._note_device(report)
        return report

    def _drain(self, report: IngestReport) -> None:
        """Finish batches still in flight before the index is rebuilt (none here: each batch is written whole)."""

    def _records_batch_safe(self, papers: list[Paper], report: IngestReport) -> None:
        """One batch; when the store refuses it, record by record, so one bad record fails alone."""
        try:
            self._records_batch(papers, report)
        except Exception as exc:  # chromadb, sqlite and encoders raise their own types
            if len(papers) == 1:
                report.failed.append(Failure(papers[0].id, f"could not be stored ({type(exc).__name__}: {exc})"))
                return
            for p in papers:
                self._records_batch_safe([p], report)

    def _records_batch(self, papers: list[Paper], report: IngestReport) -> None:
        batch = self._plan_records(papers)
        if batch.new:
            self._writer.upsert(batch.new, self._embed(batch.new))
        self._commit_records(batch, report)

    def _plan_records(self, papers: list[Paper]) -> RecordBatch:
        """What a batch of records needs (reads only): the papers to (re)write and the chunks to embed."""
        known = self.lib.catalog.hashes(p.id for p in papers)
        pairs = [(p, ch) for p in papers if (ch := abstract_chunk(p)) is not None]
        stored = self.lib.store.existing_ids([ch.id for _, ch in pairs]) if pairs else set()
        # unchanged by the catalogue, and its chunk still in the store: nothing to embed, nothing to write
        todo = [(p, ch) for p, ch in pairs if not (known.get(p.id, (None, None))[0] == ch.id and ch.id in stored)]
        topics = {p.id: self.lib.topics.match(p) for p, _ in todo}
        new = [StoredChunk.of(ch, p.date, topics[p.id]) for p, ch in todo if ch.id not in stored]
        changed = [p.id for p, ch in todo if (h := known.get(p.id, (None, None))[0]) is not None and h != ch.id]
        return RecordBatch(papers, todo, topics, new, skipped=len(pairs) - len(new), changed=changed)

    def _commit_records(self, batch: RecordBatch, report: IngestReport) -> None:
        """After the batch's new chunks are in the store: drop the papers' stale chunks, then write their
        catalogue rows (a catalogue row never points at a chunk the store lacks)."""
        if batch.todo:
            self._remove_stale([p.id for p, _ in batch.todo], "abstract", {ch.id for _, ch in batch.todo}, report)
            self.lib.catalog.upsert_papers((p, ch.id, batch.topics[p.id]) for p, ch in batch.todo)
        report.chunks_added += len(batch.new)
        report.chunks_skipped += batch.skipped
        report.papers += len(batch.papers)  # counted once stored: a failed batch is retried record by record
        report.paper_ids.extend(p.id for p in batch.papers)
        report.changed.extend(batch.changed)
        if self.progress:
            self.progress(report.papers, report.chunks_added + report.chunks_skipped)

    # -- PDFs -------------------------------------------------------------------------------------

    def ingest_pdfs(self, inputs: Sequence[Path], paper_id: str | None = None, hashes: Mapping[Path, str] | None = None) -> IngestReport:
        """Ingest PDFs (files and folders). Unchanged files (same bytes, same chunking, chunks still in the
        store) are skipped unparsed.

        Args:
            inputs: files or folders.
            paper_id: force the paper id (only with one file), e.g. to attach a PDF to a known paper.
            hashes: sha256 of files the caller already hashed (an upload is hashed once, by the facade).
        """
        with self._writing():  # one writer at a time per data dir
            self.lib.sync_topics()  # stored papers follow the rules the new ones are matched with
            return self._ingest_pdfs(inputs, paper_id, hashes or {})

    def _ingest_pdfs(self, inputs: Sequence[Path], paper_id: str | None, hashes: Mapping[Path, str]) -> IngestReport:
        t0 = time.perf_counter()
        report = IngestReport()
        files, missing = find_pdfs(inputs)
        report.failed.extend(Failure(s, r) for s, r in missing)
        sidecars, problems = load_sidecars(files)
        report.failed.extend(Failure(src, why) for src, why in problems)
        rechunked: dict[Path, str] = {}  # stored before under another chunking: why it is parsed again
        to_parse: list[Path] = []
        shas: dict[Path, str] = {}
        for f in files:
            try:
                sha = hashes.get(f) or sha256_file(f)
            except OSError as exc:
                report.failed.append(Failure(str(f), f"cannot read the file ({exc.strerror})"))
                continue
            shas[f] = sha
            stamp = PdfStamp(sha, self.settings.chunk_size, self.settings.chunk_overlap, self.settings.pdf_extractor)
            known = self.lib.catalog.find_by_pdf_sha(sha)
            stored_as = PdfStamp.parse(self.lib.catalog.hashes([known.id]).get(known.id, (None, None))[1]) if known is not None else None
            if known is not None and stored_as == stamp:
                held = self.lib.store.ids_of_paper(known.id, "pdf")
                if held:  # else the store lost its chunks (e.g. the chroma folder was deleted): parse again
                    report.papers += 1
                    report.paper_ids.append(known.id)
                    report.chunks_skipped += len(self.lib.store.ids_of_paper(known.id))
                    report.stored.append((str(f), f"unchanged, already stored as {known.id}"))
                    continue
            if stored_as is not None and stored_as.sha256 == sha and stored_as != stamp:
                rechunked[f] = stamp.change_from(stored_as)
            to_parse.append(f)
        chunker = PageChunker(self.settings.chunk_size, self.settings.chunk_overlap)
        if to_parse:
            self.lib.store.record_chunking()
        workers = 1 if len(to_parse) < 4 else 2
        group: list[PdfPlan] = []  # parsed and planned, waiting to be embedded together
        s = self.settings
        for res in parse_many(to_parse, s.max_pdf_mb, s.pdf_timeout_s, workers, s.max_pdf_pages, s.pdf_extractor):
            if res.pdf is None:
                report.failed.append(Failure(str(res.path), res.error or "unknown error"))
                continue
            side = sidecars.get(str(res.path.resolve()), {})
            if any(q.paper.id == _pdf_paper_id(res.pdf, side, paper_id) for q in group):
                self._flush_pdfs(group, report)  # the same paper twice: the second is planned after the first is written
                group = []
            try:
                group.append(self._plan_pdf(res.path, res.pdf, side, chunker,
                                            PdfStamp(shas[res.path], s.chunk_size, s.chunk_overlap, s.pdf_extractor), paper_id,
                                            rechunked.get(res.path)))
            except Exception as exc:  # a store error on one file must not lose the rest of the batch
                report.failed.append(Failure(str(res.path), f"could not be stored ({type(exc).__name__}: {exc})"))
            if sum(len(q.new) for q in group) >= PDF_EMBED_GROUP:
                self._flush_pdfs(group, report)
                group = []
        self._flush_pdfs(group, report)
        # every input ends in the summary, stored or failed: nothing is dropped without a word
        told = {src for src, _ in report.stored} | {f.source for f in report.failed}
        report.failed.extend(Failure(str(f), "was not read (an internal error; please report it)") for f in files if str(f) not in told)
        self.finish()
        report.seconds = time.perf_counter() - t0
        self._note_device(report)
        return report

    def _paper_for_pdf(self, pdf: ParsedPdf, side: dict[str, Any], paper_id: str | None) -> tuple[Paper, bool]:
        """The paper a PDF belongs to: the known abstract record when its id is known, else a new one."""
        arxiv = paper_id or (side.get("arxiv_id") or None) or pdf.arxiv_id
        pid = _pdf_paper_id(pdf, side, paper_id)
        known = self.lib.catalog.get(pid)
        if known is not None:
            return known, False
        date = parse_date(side.get("version_date"), month=True)
        abstract = clean_text(side["abstract"]) if isinstance(side.get("abstract"), str) else ""
        paper = Paper(
            id=pid,
            title=clean_text(side["title"]) if side.get("title") else pdf.title,
            authors=[str(a) for a in side.get("authors", [])] if isinstance(side.get("authors"), list) else [],
            abstract=abstract,
            date=date,
            url=f"https://arxiv.org/abs/{arxiv}" if arxiv else "",
        )
        return paper, True

    def _plan_pdf(
        self, source: Path, pdf: ParsedPdf, side: dict[str, Any], chunker: PageChunker, stamp: PdfStamp, paper_id: str | None, rechunk: str | None = None
    ) -> PdfPlan:
        """A parsed PDF's paper, chunks and the chunks the store does not hold yet (reads only)."""
        paper, is_new = self._paper_for_pdf(pdf, side, paper_id)
        topics = paper.topics if not is_new else self.lib.topics.match(paper)
        chunks = chunker.chunk_pages(paper.id, pdf.pages)
        # a known paper's abstract chunk too: when the store was lost, re-ingesting its PDF restores it (the
        # existing-ids check below skips it whenever it is already stored)
        abs_chunk = abstract_chunk(paper)
        if abs_chunk is not None:
            chunks.append(abs_chunk)
        stored = [StoredChunk.of(c, paper.date, topics) for c in chunks]
        existing = self.lib.store.existing_ids([c.id for c in stored])
        new = [c for c in stored if c.id not in existing]
        return PdfPlan(source, pdf, paper, is_new, list(topics), {c.id for c in chunks}, abs_chunk, stamp, new, len(stored) - len(new), rechunk)

    def _flush_pdfs(self, group: Sequence[PdfPlan], report: IngestReport) -> None:
        """Embed the new chunks of several PDFs in one call (batched by length across them, so batches carry
        less padding than one PDF's few chunks would), then write each PDF on its own, in order."""
        new = [c for q in group for c in q.new]
        try:
            vectors = self._embed(new) if new else None
        except Exception as exc:  # an embedder error fails these files, never the rest of the run
            report.failed.extend(Failure(str(q.source), f"could not be stored ({type(exc).__name__}: {exc})") for q in group)
            return
        at = 0
        for q in group:
            vecs = vectors[at : at + len(q.new)] if vectors is not None else None
            at += len(q.new)
            try:
                self._write_pdf(q, vecs, report)
                again = f"; re-chunked: {q.rechunk}" if q.rechunk else ""
                report.stored.append((str(q.source), f"stored as {q.paper.id} ({len(q.pdf.pages)} pages{again})"))
            except Exception as exc:  # a store error on one file must not lose the rest of the batch
                report.failed.append(Failure(str(q.source), f"could not be stored ({type(exc).__name__}: {exc})"))
            if self.progress:
                self.progress(report.papers, report.chunks_added + report.chunks_skipped)

    def _write_pdf(self, q: PdfPlan, vectors: np.ndarray | None, report: IngestReport) -> None:
        if q.new and vectors is not None:
            self._writer.upsert(q.new, vectors)
        report.chunks_added += len(q.new)
        report.chunks_skipped += q.skipped
        self._remove_stale([q.paper.id], "pdf", q.chunk_ids, report)
        if q.is_new:
            self.lib.catalog.upsert_papers([(q.paper, q.abs_chunk.id if q.abs_chunk else None, q.topics)])
        # the app serves only these copies (pdfstore), never the source folder
        stored = store_pdf(Path(q.pdf.path), q.pdf.sha256, self.settings)
        self.lib.catalog.set_pdf(q.paper, str(stored), q.pdf.sha256, str(q.stamp), q.topics)
        report.papers += 1
        report.paper_ids.append(q.paper.id)

    # -- removal --------------------------------------------------------------------------------------

    def remove_paper(self, paper_id: str, keep_copy: bool = False) -> int:
        """Remove a paper's chunks and catalogue entry (and its stored PDF copy unless `keep_copy`); returns the
        number of chunks removed."""
        with self._writing():
            return self._remove_paper(paper_id, keep_copy)

    def _remove_paper(self, paper_id: str, keep_copy: bool = False) -> int:
        ids = self.lib.store.ids_of_paper(paper_id)
        known = self.lib.catalog.get(paper_id) is not None
        _, pdf_hash, pdf_path = self.lib.catalog.stored_hashes().get(paper_id, (None, None, None))
        if ids:
            self._writer.delete(ids)
        self.lib.catalog.remove_paper(paper_id)
        self.finish()
        # its stored PDF copy goes too (it was still served after the paper was removed, issue 33 case 12),
        # unless another paper holds the same file
        copy = None if keep_copy else stored_copy(pdf_path, self.lib.settings)
        sha = PdfStamp.sha_of(pdf_hash)
        if copy is not None and not any(PdfStamp.sha_of(h) == sha for _, h, _ in self.lib.catalog.stored_hashes().values()):
            copy.unlink(missing_ok=True)
        return len(ids) if (ids or known) else -1

