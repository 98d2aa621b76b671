"""The vector store: Chroma, one collection per embedder, with topic membership as chunk metadata.

Layout: every chunk lives once in one collection (`chunks-<embedder>`); its metadata carries the paper id,
the kind (abstract or pdf), the page, the date (yyyymmdd) and one boolean flag per topic (`topic_<slug>`).
A topic question filters on its flag, a paper question on `paper_id`. We chose this over a collection per
topic because a paper belongs to several topics (a collection per topic would embed and store it several
times), and because changing the topic rules then only rewrites metadata, never vectors.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from paperchat.errors import EmbedderMismatch, StoreError
from paperchat.providers.embedders import store_name
from paperchat.settings import Settings
from paperchat.store.client import client_for, damaged_store, forget_client, opening, other_embedder, reembed_hint
from paperchat.store.schema import GET_PAGE, TOPIC_PREFIX, StoredBatch, StoredChunk, chunk_of, metadata_of, scope_where, stored_of, topic_key, with_kind
from paperchat.types import Chunk, ChunkKind, Embedder, Scope


class VectorStore:
    """Chunks and their vectors. Always given vectors: Chroma's own embedding function is never used."""

    def __init__(self, settings: Settings, embedder: Embedder) -> None:
        self.settings = settings
        self.embedder = embedder
        with opening(settings):
            self._open(settings, embedder)

    def _open(self, settings: Settings, embedder: Embedder) -> None:
        self.client = client_for(settings)
        name = "chunks-" + store_name(settings.embedder)  # minilm-onnx (fp32) shares minilm's vectors
        wanted = {
            "hnsw:space": "cosine",
            "embedder": embedder.id,
            "dim": embedder.dim,
            "chunk_size": settings.chunk_size,
            "chunk_overlap": settings.chunk_overlap,
        }
        failure: Exception | None = None
        other = None
        for attempt in range(6):  # several processes creating a fresh store at once race on its first tables
            try:
                other = other_embedder(self.client, name)
                self.collection = self.client.get_or_create_collection(name, embedding_function=None, metadata=wanted)
                self.collection.count()
                break
            except Exception as exc:
                if settings.chroma_url or attempt == 5:
                    failure = exc
                    break
                forget_client(settings.chroma_dir)
                time.sleep(0.25 * (attempt + 1))
                self.client = client_for(settings)
        if failure is not None:
            if settings.chroma_url:
                raise StoreError(f"the Chroma server at {settings.chroma_url} failed ({failure})", "check the server's log") from failure
            forget_client(settings.chroma_dir)
            raise damaged_store(settings, failure) from failure
        if other is not None:  # the catalogue and the lexical index are shared: one embedder per data dir
            raise EmbedderMismatch(
                f"the store at {settings.data_dir} was built with embedder {other[1]!r} "
                f"(PAPERCHAT_EMBEDDER={other[0]}), not {embedder.id!r} (PAPERCHAT_EMBEDDER={settings.embedder})",
                reembed_hint(settings),
            )
        meta = self.collection.metadata or {}
        if meta.get("embedder") != embedder.id or int(meta.get("dim", -1)) != embedder.dim:
            raise EmbedderMismatch(
                f"the store at {settings.data_dir} was built with embedder {meta.get('embedder')!r} "
                f"(dim {meta.get('dim')}), not {embedder.id!r} (dim {embedder.dim})",
                reembed_hint(settings),
            )

    def reload(self) -> None:
        """Reopen the collection on a fresh client: another process's writes become visible (a local
        Chroma keeps its vector index in memory, loaded once per process)."""
        if not self.settings.chroma_url:
            forget_client(self.settings.chroma_dir)
        self.client = client_for(self.settings)
        self.collection = self.client.get_collection(self.collection.name, embedding_function=None)

    def record_chunking(self) -> None:
        """Record the chunk settings of the latest PDF ingest in the collection metadata."""
        meta = dict(self.collection.metadata or {})
        meta.pop("hnsw:space", None)
        if meta.get("chunk_size") != self.settings.chunk_size or meta.get("chunk_overlap") != self.settings.chunk_overlap:
            meta.update(chunk_size=self.settings.chunk_size, chunk_overlap=self.settings.chunk_overlap)
            self.collection.modify(metadata=meta)

    @staticmethod
    def where(scope: Scope) -> dict[str, Any] | None:
        """The Chroma filter of a scope, for a baseline (LangChain's Chroma) reading the same collection."""
        return scope_where(scope)

    @property
    def collection_name(self) -> str:
        """The Chroma collection's name (`chunks-<embedder>`)."""
        return str(self.collection.name)

    def count(self) -> int:
        """How many chunks the store holds."""
        return int(self.collection.count())

    # -- ids ----------------------------------------------------------------------------------------

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """The ids of the list that the store holds."""
        found: set[str] = set()
        for i in range(0, len(ids), GET_PAGE):
            found.update(self.collection.get(ids=list(ids[i : i + GET_PAGE]), include=[])["ids"])
        return found

    def ids_where(self, where: dict[str, Any]) -> list[str]:
        """Chunk ids matching a raw Chroma filter. Kept for cli.py until it uses `ids_in_topic`; new code
        uses the typed methods below."""
        return list(self.collection.get(where=where, include=[])["ids"])

    def ids_of_paper(self, paper_id: str, kind: ChunkKind | None = None) -> list[str]:
        """The ids of a paper's chunks (of one kind when given)."""
        return self.ids_where(with_kind({"paper_id": paper_id}, kind))

    def ids_of_papers(self, paper_ids: Collection[str], kind: ChunkKind | None = None) -> list[str]:
        """The ids of these papers' chunks (of one kind when given)."""
        if not paper_ids:
            return []
        return self.ids_where(with_kind({"paper_id": {"$in": list(paper_ids)}}, kind))

    def ids_in_topic(self, slug: str) -> list[str]:
        """The ids of the chunks flagged with a topic."""
        return self.ids_where({topic_key(slug): True})

    def ids_of_kind(self, kind: ChunkKind) -> list[str]:
        """The ids of every abstract chunk, or of every PDF chunk."""
        return self.ids_where({"kind": kind})

    def all_ids(self) -> list[str]:
        """Every chunk id."""
        return [cid for res in self._pages([]) for cid in res["ids"]]

    # -- writes -------------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        """Write chunks with their vectors (row-aligned); a chunk id already stored is overwritten.

        Chroma refuses a call of more than its max batch size (5,461 here), so a long PDF is written in pages of
        GET_PAGE; when a page fails, the ids written by the earlier pages of this call are deleted again (callers
        pass new chunks only), so a failed write leaves no half of a paper behind."""
        if not chunks:
            return
        written: list[str] = []
        try:
            for i in range(0, len(chunks), GET_PAGE):
                page = chunks[i : i + GET_PAGE]
                self.collection.upsert(
                    ids=[c.id for c in page],
                    embeddings=vectors[i : i + GET_PAGE],
                    documents=[c.text for c in page],
                    metadatas=[metadata_of(c) for c in page],
                )
                written += [c.id for c in page]
        except Exception:
            if written:
                with contextlib.suppress(Exception):  # the original error is the one to report
                    self.delete(written)
            raise

    def set_topic_flags(self, memberships: Mapping[str, Collection[str]], slugs: Sequence[str]) -> int:
        """Flag every chunk with its paper's topics (paper id -> topic slugs; a paper not listed has none).

        `slugs` are the topics defined now: each gets an explicit flag; a flag of a topic no longer defined
        is set to False. Metadata only, no vector changes. Returns the number of chunks rewritten.
        """
        pages = list(self._pages(["metadatas"]))  # read all before writing: pages are read by offset
        n = 0
        for res in pages:
            new_metas = []
            for meta in res["metadatas"]:
                mine = set(memberships.get(str(meta.get("paper_id")), ()))
                m = {k: v for k, v in meta.items() if not k.startswith(TOPIC_PREFIX)}
                # Flags are set to False rather than removed: Chroma merges metadata on update.
                for k in meta:
                    if k.startswith(TOPIC_PREFIX):
                        m[k] = False
                for s in slugs:
                    m[topic_key(s)] = s in mine
                new_metas.append(m)
            self._update_metadata(list(res["ids"]), new_metas)
            n += len(new_metas)
        return n

    def _update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(ids), GET_PAGE):
            self.collection.update(ids=list(ids[i : i + GET_PAGE]), metadatas=list(metadatas[i : i + GET_PAGE]))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete chunks by id (ids not stored are ignored)."""
        for i in range(0, len(ids), GET_PAGE):
            self.collection.delete(ids=list(ids[i : i + GET_PAGE]))

    # -- reads --------------------------------------------------------------------------------------

    def _pages(self, include: list[str]) -> Iterator[Any]:
        total = self.count()
        for offset in range(0, total, GET_PAGE):
            yield self.collection.get(include=include, limit=GET_PAGE, offset=offset)

    def iter_all(self, texts: bool = True, vectors: bool = False) -> Iterator[StoredBatch]:
        """Every chunk, page by page, with its metadata; texts and vectors when asked for."""
        include = ["metadatas"] + (["documents"] if texts else []) + (["embeddings"] if vectors else [])
        for res in self._pages(include):
            ids = list(res["ids"])
            docs = res["documents"] if texts else [None] * len(ids)
            chunks = [stored_of(cid, doc, meta) for cid, doc, meta in zip(ids, docs, res["metadatas"], strict=True)]
            vecs = np.asarray(res["embeddings"], dtype=np.float32).reshape(len(ids), -1) if vectors else None
            yield StoredBatch(chunks, vecs)

    def vector(self, chunk_id: str) -> np.ndarray | None:
        """The stored vector of one chunk (float32), or None when the store does not hold it."""
        return self.vectors([chunk_id]).get(chunk_id)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors (float32) of these chunk ids, by id; ids the store does not hold are left out."""
        if not ids:
            return {}
        out: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(ids))
        for i in range(0, len(unique), GET_PAGE):  # paged, as every id-list read here: SQLite caps its variables
            got = self.collection.get(ids=unique[i : i + GET_PAGE], include=["embeddings"])
            emb = got["embeddings"]
            if emb is not None and len(emb):
                out.update((cid, np.asarray(v, dtype=np.float32)) for cid, v in zip(got["ids"], emb, strict=True))
        return out

    def get_chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The chunks of these ids that the store holds, by id."""
        if not ids:
            return {}
        res = self.collection.get(ids=list(ids), include=["documents", "metadatas"])
        return {cid: chunk_of(cid, doc, meta) for cid, doc, meta in zip(res["ids"], res["documents"], res["metadatas"], strict=True)}

    def page_chunks(self, pages: Collection[tuple[str, int]]) -> dict[tuple[str, int], list[Chunk]]:
        """The PDF chunks of these (paper id, page) pairs, by pair, each list in page order (one store call)."""
        keys = sorted(set(pages))
        if not keys:
            return {}
        # papers x pages in one `$in` filter (a superset when there are several papers, cut below): 10 ms p50 on the
        # full store against 28 ms for an `$or` of the exact pairs
        where = {"$and": [{"paper_id": {"$in": sorted({p for p, _ in keys})}}, {"page": {"$in": sorted({n for _, n in keys})}}, {"kind": "pdf"}]}
        res = self.collection.get(where=where, include=["documents", "metadatas"])
        wanted = set(keys)
        out: dict[tuple[str, int], list[Chunk]] = {}
        for cid, doc, meta in zip(res["ids"], res["documents"], res["metadatas"], strict=True):
            c = chunk_of(cid, doc, meta)
            if (c.paper_id, c.page or 0) in wanted:
                out.setdefault((c.paper_id, c.page or 0), []).append(c)
        for chunks in out.values():
            chunks.sort(key=lambda c: (c.start, c.end))
        return out

    def dense_search(self, vector: np.ndarray, n: int, scope: Scope | None = None) -> list[tuple[Chunk, float]]:
        """The n nearest chunks inside the scope (Chroma's HNSW index), with cosine similarity."""
        res = self.collection.query(
            query_embeddings=[vector.tolist()],
            n_results=n,
            where=scope_where(scope) if scope is not None else None,
            include=["documents", "metadatas", "distances"],
        )
        out = []
        for cid, doc, meta, dist in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True):
            out.append((chunk_of(cid, doc, meta), 1.0 - float(dist)))
        return out
