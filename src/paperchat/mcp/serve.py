"""Running the MCP server: stdio for desktop clients, streamable HTTP (uvicorn) with a bearer token beyond
loopback. Opening the library happens here, once, before the first request."""

from __future__ import annotations

import hmac
import logging
import sys
from typing import Any

from paperchat.assistant import Assistant
from paperchat.mcp.server import build_server
from paperchat.settings import Settings

ASGI = Any


def _open(settings: Settings) -> Assistant:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the protocol's on stdio
    core = Assistant.open(settings)
    core.warm_up()
    return core


def run_stdio(settings: Settings) -> None:
    """Serve over stdin/stdout until the client closes them."""
    core = _open(settings)
    try:
        build_server(core, settings.mcp_allowed_folders).run("stdio")
    finally:
        core.close()


def bearer_guard(app: ASGI, token: str) -> ASGI:
    """The app behind `Authorization: Bearer <token>` (compared in constant time); 401 otherwise. Lifespan
    events pass through (they start the SDK's session manager)."""
    want = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(got, want):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
                await send({
                    "type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                })
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def http_app(core: Assistant, settings: Settings, host: str, token: str | None) -> ASGI:
    """The streamable-HTTP app at /mcp (the SDK's Host/Origin checks on loopback), behind a token when given."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = None
    if host in ("0.0.0.0", "::", ""):  # every interface: clients name it by any address, so the token is the guard
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    elif host not in ("127.0.0.1", "localhost", "::1"):  # the SDK protects loopback itself; beyond it, the host given
        security = TransportSecuritySettings(allowed_hosts=[f"{host}:*", "127.0.0.1:*", "localhost:*"], allowed_origins=[f"http://{host}:*"])
    app = build_server(core, settings.mcp_allowed_folders).streamable_http_app(host=host, transport_security=security)
    return bearer_guard(app, token) if token else app


def run_http(settings: Settings, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at http://host:port/mcp until stopped."""
    import uvicorn

    core = _open(settings)
    try:
        print(f"paperchat MCP server at http://{host}:{port}/mcp{' (token required)' if token else ''}", file=sys.stderr)
        uvicorn.run(http_app(core, settings, host, token), host=host, port=port, log_level="warning")
    finally:
        core.close()
