"""The evaluation-side facade: what benchmarks and evaluations measure below the app's facade.

`Lab(assistant)` wraps an open `Assistant` and adds the instruments the app never needs: a search function
with other retrieval knobs, the evidence features the refusal rule reads, the texts an ingest embeds, a
copied subset of the library, the raw Chroma collection for naive baselines, and scratch-store clean-up.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.assistant import Assistant
from paperchat.ingestion.chunking import PageChunker, abstract_chunk
from paperchat.ingestion.pdf import read_pdf
from paperchat.ingestion.records import Failure, read_records
from paperchat.library import Library
from paperchat.providers.devices import device_of
from paperchat.retrieval import Retriever
from paperchat.settings import RetrievalSettings, Settings
from paperchat.types import Hit, Paper, Scope

Call = tuple[tuple[Any, ...], dict[str, Any], Any]  # (args, kwargs, result)


@contextmanager
def recording(owner: Any, name: str) -> Iterator[list[Call]]:
    """Record every call of `owner.name` (a module's function or a class's method, whose args then start with
    self) as (args, kwargs, result) while inside, and put the original back after, even on an error: what the
    capture scripts read from inside `ask` without a hook in the app."""
    original = getattr(owner, name)
    calls: list[Call] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        calls.append((args, kwargs, out))
        return out

    setattr(owner, name, wrapper)
    try:
        yield calls
    finally:
        setattr(owner, name, original)


class Lab:
    """Instruments over an Assistant's library for the benchmarks and the evaluation."""

    def __init__(self, assistant: Assistant) -> None:
        self.assistant = assistant
        self.settings = assistant.settings
        self.library = assistant.library

    def searcher(self, retrieval: RetrievalSettings | None = None) -> Callable[[str, Scope, int | None], list[Hit]]:
        """A search function over this library with these retrieval knobs (keeps its caches between calls)."""
        if retrieval is None:
            return self.assistant.qa.retriever.search
        return Retriever.of(self.library, retrieval).search

    def evidence(self, question: str, scope: Scope, hits: Sequence[Hit]) -> dict[str, object]:
        """What the passages of these hits hold of the question, as the refusal rule reads it (strength,
        missing names ...: paperchat.answering.evidence)."""
        qa = self.assistant.qa
        return qa.evidence(question, scope, qa.sources(hits)).features()

    def drop_vectors(self) -> int:
        """Delete every chunk of the vector store (the benchmarks' scratch stores only); returns how many."""
        ids = self.library.store.all_ids()
        self.library.store.delete(ids)
        return len(ids)

    @staticmethod
    def read_records(path: Path, limit: int | None = None) -> list[Paper | Failure]:
        """The first `limit` records of a metadata file (all when None), failures included."""
        return list(itertools.islice(read_records(path), limit))

    @staticmethod
    def abstract_texts(papers: Sequence[Paper]) -> list[str]:
        """The texts our ingest embeds for these papers' abstracts."""
        return [c.text for c in (abstract_chunk(p) for p in papers) if c is not None]

    def pdf_chunk_texts(self, pdfs: Sequence[Path]) -> tuple[list[str], int]:
        """(the texts our ingest embeds for these PDFs, their number of pages)."""
        s = self.settings
        chunker = PageChunker(s.chunk_size, s.chunk_overlap)
        parsed = [read_pdf(p, s.max_pdf_mb, s.max_pdf_pages, s.pdf_extractor) for p in pdfs]
        return [c.text for pdf in parsed for c in chunker.chunk_pages("x", pdf.pages)], sum(len(pdf.pages) for pdf in parsed)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The library's embedder on these texts, in batches of settings.batch_size."""
        return self.assistant.embed(texts)

    def embedder_name(self) -> str:
        """The embedder's settings name (PAPERCHAT_EMBEDDER)."""
        return self.settings.embedder

    def embedder_device(self) -> str:
        """Where the embedder runs: "cpu" or "cuda" once it has loaded, else the setting ("auto")."""
        return device_of(self.library.embedder)

    def papers_with_pdf(self, limit: int | None = None) -> list[str]:
        """Ids of the first `limit` papers that have a PDF."""
        return [p.id for p in self.library.catalog.iter_papers() if p.pdf_path][:limit]

    def copy_subset(self, dst: Settings, n_abstracts: int | None) -> Lab:
        """A new library at dst.data_dir with the first n abstract papers plus every PDF chunk, copied with
        their vectors (no re-embedding), its catalogue rows and a fresh search index; returned open."""
        lib = Library(dst, embedder=self.library.embedder)
        lib.sync_topics()  # a new store: records the rules' hash, so the copied rows count as synced
        kept_abstracts = 0
        papers: set[str] = set()
        with lib.writing() as writer:  # its finish builds the new library's search index
            for batch in self.library.store.iter_all(vectors=True):
                keep = []
                for i, c in enumerate(batch.chunks):
                    if c.kind == "abstract":
                        if n_abstracts is not None and kept_abstracts >= n_abstracts:
                            continue
                        kept_abstracts += 1
                    keep.append(i)
                if keep and batch.vectors is not None:
                    writer.upsert([batch.chunks[i] for i in keep], batch.vectors[keep])
                    papers.update(batch.chunks[i].paper_id for i in keep)
            got = self.library.catalog.get_many(papers)
            lib.catalog.upsert_papers((p, None, p.topics) for p in got.values())
            for p in got.values():
                if p.pdf_path:
                    lib.catalog.set_pdf(p, p.pdf_path, "", "", p.topics)
        return Lab(Assistant(dst, library=lib))

    def chroma_collection(self) -> tuple[Path, str]:
        """(folder, collection name) of the local Chroma store, for baselines that query it directly."""
        return self.settings.chroma_dir, self.library.store.collection_name

    def chroma_where(self, scope: Scope) -> dict[str, Any] | None:
        """The Chroma filter of a scope (the store writes it), for those baselines."""
        return self.library.store.where(scope)
