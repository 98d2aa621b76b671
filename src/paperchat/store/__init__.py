"""The vector store (`chroma`: the VectorStore; `schema`: a chunk's metadata; `client`: opening Chroma): Chroma, one
collection per embedder, with topic membership as chunk metadata.

Layout: every chunk lives once in one collection (`chunks-<embedder>`); its metadata carries the paper id,
the kind (abstract or pdf), the page, the date (yyyymmdd) and one boolean flag per topic (`topic_<slug>`).
A topic question filters on its flag, a paper question on `paper_id`. We chose this over a collection per
topic because a paper belongs to several topics (a collection per topic would embed and store it several
times), and because changing the topic rules then only rewrites metadata, never vectors.
"""

from paperchat.store.chroma import VectorStore
from paperchat.store.client import damaged_store, forget_client, reembed_hint
from paperchat.store.schema import StoredBatch, StoredChunk, date_int, topic_key

__all__ = ["StoredBatch", "StoredChunk", "VectorStore", "damaged_store", "date_int", "forget_client", "reembed_hint", "topic_key"]
