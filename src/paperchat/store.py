"""The vector store: Chroma, one collection per embedder, with topic membership as chunk metadata.

Layout: every chunk lives once in one collection (`chunks-<embedder>`); its metadata carries the paper id,
the kind (abstract or pdf), the page, the date (yyyymmdd) and one boolean flag per topic (`topic_<slug>`).
A topic question filters on its flag, a paper question on `paper_id`. We chose this over a collection per
topic because a paper belongs to several topics (a collection per topic would embed and store it several
times), and because changing the topic rules then only rewrites metadata, never vectors.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.errors import EmbedderMismatch, StoreError
from paperchat.providers.embedders import Embedder
from paperchat.settings import Settings
from paperchat.types import Chunk

TOPIC_PREFIX = "topic_"
_GET_PAGE = 5000


def topic_key(slug: str) -> str:
    return TOPIC_PREFIX + slug


def date_int(date: dt.date | None) -> int:
    return int(date.strftime("%Y%m%d")) if date else 0


def chunk_metadata(chunk: Chunk, date: dt.date | None, topics: Sequence[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "paper_id": chunk.paper_id,
        "kind": chunk.kind,
        "page": chunk.page or 0,
        "start": chunk.start,
        "end": chunk.end,
        "date": date_int(date),
    }
    for t in topics:
        meta[topic_key(t)] = True
    return meta


def chunk_from_chroma(cid: str, text: str, meta: dict[str, Any]) -> Chunk:
    page = int(meta.get("page") or 0)
    return Chunk(
        id=cid,
        paper_id=str(meta["paper_id"]),
        text=text,
        kind=meta.get("kind", "abstract"),
        page=page or None,
        start=int(meta.get("start", 0)),
        end=int(meta.get("end", 0)),
    )


def _client(settings: Settings) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        from urllib.parse import urlparse

        url = urlparse(settings.chroma_url)
        try:
            return chromadb.HttpClient(
                host=url.hostname or "127.0.0.1",
                port=url.port or 8000,
                ssl=url.scheme == "https",
                settings=chroma_settings,
            )
        except Exception as exc:  # chromadb raises plain exceptions when the server is down
            raise StoreError(
                f"cannot reach the Chroma server at {settings.chroma_url} ({exc})",
                "start it with `chroma run --path DIR --port PORT` or unset PAPERCHAT_CHROMA_URL",
            ) from exc
    settings.chroma_dir.mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=str(settings.chroma_dir), settings=chroma_settings)
    except Exception as exc:  # chromadb raises sqlite3 and its own errors for a file it cannot read
        forget_client(settings.chroma_dir)  # else the half-started client is served again
        raise damaged_store(settings, exc) from exc


def forget_client(chroma_dir: Path) -> None:
    """Stop and drop the client Chroma caches for a folder (one per path and process), so the next one
    reads the folder afresh. Stopped, not just dropped: a forked PDF parser hangs on a leftover one."""
    from chromadb.api.client import SharedSystemClient

    key = str(chroma_dir)
    system = SharedSystemClient._identifier_to_system.pop(key, None)
    SharedSystemClient._identifier_to_refcount.pop(key, None)
    if system is not None:
        try:
            system.stop()
        except Exception:  # a system that failed to start (a damaged file) cannot stop cleanly
            pass


def damaged_store(settings: Settings, exc: BaseException) -> StoreError:
    """The error for a vector store Chroma cannot open."""
    return StoreError(
        f"the vector store {settings.chroma_dir} is damaged ({type(exc).__name__}: {exc})",
        "run `paperchat doctor --repair` (it moves it aside and re-embeds from the catalogue), or move it aside and re-ingest",
    )


class VectorStore:
    """Chunks and their vectors. Always given vectors: Chroma's own embedding function is never used."""

    def __init__(self, settings: Settings, embedder: Embedder) -> None:
        self.settings = settings
        self.embedder = embedder
        self.client = _client(settings)
        name = "chunks-" + settings.embedder
        wanted = {
            "hnsw:space": "cosine",
            "embedder": embedder.id,
            "dim": embedder.dim,
            "chunk_size": settings.chunk_size,
            "chunk_overlap": settings.chunk_overlap,
        }
        try:
            self.collection = self.client.get_or_create_collection(name, embedding_function=None, metadata=wanted)
            self.collection.count()
        except Exception as exc:
            if settings.chroma_url:
                raise StoreError(f"the Chroma server at {settings.chroma_url} failed ({exc})", "check the server's log") from exc
            forget_client(settings.chroma_dir)
            raise damaged_store(settings, exc) from exc
        meta = self.collection.metadata or {}
        if meta.get("embedder") != embedder.id or int(meta.get("dim", -1)) != embedder.dim:
            raise EmbedderMismatch(
                f"the store at {settings.data_dir} was built with embedder {meta.get('embedder')!r} "
                f"(dim {meta.get('dim')}), not {embedder.id!r} (dim {embedder.dim})",
                "use the embedder it was built with, or point PAPERCHAT_DATA_DIR at a new folder and re-ingest",
            )

    def reload(self) -> None:
        """Reopen the collection on a fresh client: another process's writes become visible (a local
        Chroma keeps its vector index in memory, loaded once per process)."""
        if not self.settings.chroma_url:
            forget_client(self.settings.chroma_dir)
        self.client = _client(self.settings)
        self.collection = self.client.get_collection(self.collection.name, embedding_function=None)

    def record_chunking(self) -> None:
        """Record the chunk settings of the latest PDF ingest in the collection metadata."""
        meta = dict(self.collection.metadata or {})
        meta.pop("hnsw:space", None)
        if meta.get("chunk_size") != self.settings.chunk_size or meta.get("chunk_overlap") != self.settings.chunk_overlap:
            meta.update(chunk_size=self.settings.chunk_size, chunk_overlap=self.settings.chunk_overlap)
            self.collection.modify(metadata=meta)

    def count(self) -> int:
        return int(self.collection.count())

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), _GET_PAGE):
            found.update(self.collection.get(ids=list(ids[i : i + _GET_PAGE]), include=[])["ids"])
        return found

    def ids_where(self, where: dict[str, Any]) -> list[str]:
        return list(self.collection.get(where=where, include=[])["ids"])

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, metadatas: Sequence[dict[str, Any]]) -> None:
        if not chunks:
            return
        self.collection.upsert(
            ids=[c.id for c in chunks],
            embeddings=vectors,
            documents=[c.text for c in chunks],
            metadatas=list(metadatas),
        )

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(ids), _GET_PAGE):
            self.collection.update(ids=list(ids[i : i + _GET_PAGE]), metadatas=list(metadatas[i : i + _GET_PAGE]))

    def delete(self, ids: Sequence[str]) -> None:
        for i in range(0, len(ids), _GET_PAGE):
            self.collection.delete(ids=list(ids[i : i + _GET_PAGE]))

    def iter_all(self, include_vectors: bool = False) -> Iterator[tuple[list[str], list[str], list[dict[str, Any]], Any]]:
        """All chunks, page by page: (ids, documents, metadatas, vectors or None)."""
        include = ["documents", "metadatas"] + (["embeddings"] if include_vectors else [])
        total = self.count()
        for offset in range(0, total, _GET_PAGE):
            res = self.collection.get(include=include, limit=_GET_PAGE, offset=offset)
            yield res["ids"], res["documents"], res["metadatas"], res.get("embeddings") if include_vectors else None

    def iter_metadata(self) -> Iterator[tuple[list[str], list[dict[str, Any]]]]:
        """All chunk ids with their metadata (no text, no vectors), page by page."""
        total = self.count()
        for offset in range(0, total, _GET_PAGE):
            res = self.collection.get(include=["metadatas"], limit=_GET_PAGE, offset=offset)
            yield list(res["ids"]), list(res["metadatas"])

    def get_chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        res = self.collection.get(ids=list(ids), include=["documents", "metadatas"])
        return {cid: chunk_from_chroma(cid, doc, meta) for cid, doc, meta in zip(res["ids"], res["documents"], res["metadatas"], strict=True)}

    def dense_search(self, vector: np.ndarray, n: int, where: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        """The n nearest chunks inside `where`, with cosine similarity."""
        res = self.collection.query(
            query_embeddings=[vector.tolist()],
            n_results=n,
            where=where or None,
            include=["documents", "metadatas", "distances"],
        )
        out = []
        for cid, doc, meta, dist in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True):
            out.append((chunk_from_chroma(cid, doc, meta), 1.0 - float(dist)))
        return out
