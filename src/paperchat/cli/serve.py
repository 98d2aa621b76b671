"""`paperchat serve`: the app (ingests the bundled demo corpus on first start)."""

from __future__ import annotations

import argparse
from typing import Any

from paperchat.cli.common import settings_from


def cmd_serve(args: argparse.Namespace) -> int:
    """Start the app; returns when it stops."""
    from paperchat.ui.serving import serve  # gradio loads only for this command

    serve(settings_from(args), insecure=args.insecure, demo_corpus=not args.no_demo)
    return 0


def register(sub: Any) -> None:
    """Add `serve`."""
    sv = sub.add_parser("serve", help="start the app (ingests the bundled demo corpus on first start)")
    sv.add_argument("--insecure", action="store_true", help="allow serving beyond 127.0.0.1 without PAPERCHAT_AUTH")
    sv.add_argument("--no-demo", action="store_true", help="do not ingest the bundled demo corpus")
    sv.set_defaults(func=cmd_serve, long_running=True)
