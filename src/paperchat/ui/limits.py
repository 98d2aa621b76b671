"""A cap on request bodies for the app: a 100 MB question is refused at the door (413), not parsed.

Gradio's `max_file_size` only limits uploaded files; every other request (a chat turn, an API call) is
read whole and parsed as JSON. This ASGI middleware refuses bodies over a limit on every path except the
upload route, which Gradio itself limits with `max_file_size`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from paperchat.settings import Settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def request_limit_bytes(settings: Settings) -> int:
    """Largest request body accepted outside uploads: 2 MiB (a chat turn carries its history) plus room
    for a question of settings.max_question_chars even when every character is JSON-escaped (6 bytes)."""
    return 2 * 1024 * 1024 + 6 * settings.max_question_chars


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: 413 for a request body over `max_bytes`, by Content-Length or while it streams in.

    Args:
        app: the wrapped ASGI app.
        max_bytes: the limit.
        exempt_suffixes: path endings left to the app (Gradio's upload route limits its own files).
    """

    def __init__(self, app: ASGIApp, max_bytes: int, exempt_suffixes: tuple[str, ...] = ("/upload",)) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exempt_suffixes = exempt_suffixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413 when its body is over the limit."""
        path = str(scope.get("path", "")).rstrip("/")
        # only Gradio's own upload route (it limits its files); /gradio_api/call/upload and other routes whose
        # api name happens to be "upload" parse a JSON body and stay capped
        if scope["type"] != "http" or any(path == "/gradio_api" + e or path == e for e in self.exempt_suffixes):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = False
                if too_big:
                    await self._refuse(send)
                    return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return msg

        async def tracked(msg: Message) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, counted, tracked)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = f"request body over the {self.max_bytes:,}-byte limit (questions: at most the configured number of characters)".encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class SameOrigin:
    """ASGI middleware: a POST that a browser sends from another site (its `Origin` names another host than the
    one asked) is refused with 403, so no web page can upload files into the app's temp folder or call its API
    with the user's browser (issue 33, case 12). Requests without an `Origin` (gradio_client, curl, the CLI) are
    not browsers acting for another site and pass."""

    def __init__(self, app: ASGIApp, loopback_only: bool = False) -> None:
        self.app = app
        # served on 127.0.0.1: a request naming another host in `Host` came through DNS rebinding (a page of
        # evil.example whose name now points at 127.0.0.1), where Origin and Host agree
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 403 for a cross-site POST (or, on loopback, a rebound host name)."""
        if scope["type"] == "http":
            headers = {name: value for name, value in scope.get("headers", [])}
            host = headers.get(b"host", b"").decode("latin-1").strip().lower()
            if self.loopback_only and host and urlsplit(f"//{host}").hostname not in ("127.0.0.1", "localhost", "::1"):
                await send({"type": "http.response.start", "status": 403, "headers": [(b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        if scope["type"] == "http" and scope.get("method") == "POST":
            origin = headers.get(b"origin", b"").decode("latin-1").strip()
            # behind a proxy that rewrites Host, the browser's host is in X-Forwarded-Host
            shown = {host, headers.get(b"x-forwarded-host", b"").decode("latin-1").strip().lower()} - {""}
            if origin and origin != "null" and urlsplit(origin).netloc.lower() not in shown:
                body = b"cross-site request refused: open the app at its own address"
                reply = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 403, "headers": reply})
                await send({"type": "http.response.body", "body": body})
                return
            if origin == "null":  # a sandboxed frame or a file:// page: never the app's own page
                await send({"type": "http.response.start", "status": 403, "headers": [(b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
