"""`paperchat mcp`: the library as an MCP server, over stdio (desktop clients) or streamable HTTP."""

from __future__ import annotations

import argparse
from typing import Any

from paperchat.cli.common import int_in, settings_from
from paperchat.errors import ConfigError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve MCP until the client (stdio) or Ctrl-C (HTTP) ends it."""
    settings = settings_from(args)
    token = args.token or settings.mcp_token
    if args.http and args.host not in LOOPBACK and not token:
        raise ConfigError(
            f"serving MCP on {args.host} lets anyone who can reach it read your library",
            "give --token TOKEN (or PAPERCHAT_MCP_TOKEN); clients then send 'Authorization: Bearer TOKEN'",
        )
    from paperchat.mcp.serve import run_http, run_stdio  # the SDK loads only for this command

    if args.http:
        run_http(settings, args.host, args.port, token)
    else:
        run_stdio(settings)
    return 0


def register(sub: Any) -> None:
    """Add `mcp`."""
    m = sub.add_parser("mcp", help="serve the library to MCP clients (Claude Desktop, VS Code ...): stdio, or --http")
    m.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    m.add_argument("--host", default="127.0.0.1", help="with --http: the address to bind (beyond loopback a token is required)")
    m.add_argument("--port", type=int_in(1, 65535, "--port"), default=8765, help="with --http: the port (default 8765)")
    m.add_argument("--token", default=None, help="with --http: clients must send 'Authorization: Bearer TOKEN' (or PAPERCHAT_MCP_TOKEN)")
    m.set_defaults(func=cmd_mcp, long_running=True)
