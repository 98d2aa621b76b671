"""Opening Chroma: one client per folder (or the server at PAPERCHAT_CHROMA_URL), shared by the process, with the
errors a damaged folder or another embedder's store gives, in one line that says what to run."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from paperchat.errors import StoreError
from paperchat.settings import Settings


@contextmanager
def opening(settings: Settings) -> Iterator[None]:
    """Hold an flock on a file beside the Chroma folder while opening it: Chroma creates a fresh store's
    tables without a guard, so several processes opening one new store at once fail with 'table collections
    already exists'. One opener at a time; a server store (PAPERCHAT_CHROMA_URL) needs no lock."""
    if settings.chroma_url:
        yield
        return
    settings.chroma_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(settings.chroma_dir.parent / ".chroma-open.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a read-only data folder: nobody can create a store there to race with
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def client_for(settings: Settings) -> Any:
    """The Chroma client of this data folder (shared per folder in the process), or of the server at PAPERCHAT_CHROMA_URL."""
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


def reembed_hint(settings: Settings) -> str:
    """What to do when the store holds another embedder's vectors: keep that one, or re-embed everything."""
    return (
        f"use the embedder it was built with, or re-embed with this one: move {settings.chroma_dir} aside and run "
        "`paperchat doctor --repair` (it re-embeds the abstracts from the catalogue and the PDFs from their stored copies)"
    )


def other_embedder(client: Any, name: str) -> tuple[str, str] | None:
    """(settings name, embedder id) of another embedder's non-empty collection, when `name` holds nothing."""
    collections = {c.name: c for c in client.list_collections()}
    if name in collections and collections[name].count():
        return None
    for other, col in sorted(collections.items()):
        if other.startswith("chunks-") and other != name and col.count():
            return other.removeprefix("chunks-"), str((col.metadata or {}).get("embedder"))
    return None
