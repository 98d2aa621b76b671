"""`paperchat` command line: parse, build Settings (in `common.settings_from`), call the facade, print.

One module per command group (`ingest`, `ask`, `topics`, `serve`, `eval`, `bench`, `doctor`, `export`, `update`,
`digest`, `import`); each adds its
parsers with `set_defaults(func=...)`. Every user error prints one line (`paperchat: error: ... (what to
do)`) and exits 2; ingest exits 0 (all fine), 1 (some inputs failed) or 2 (nothing could be ingested).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from paperchat.cli import ask, bench, collection, digest, doctor, evaluate, export, ingest, mcp, serve, table, topics, update
from paperchat.cli.common import OneLineParser
from paperchat.errors import INTERRUPTED, PaperchatError

GROUPS = (ingest, update, digest, collection, topics, ask, table, evaluate, bench, doctor, export, serve, mcp)


def build_parser() -> OneLineParser:
    """The whole command line: the global --data-dir and every command group's sub-commands."""
    p = OneLineParser(prog="paperchat", description="Research assistant over papers.")
    p.add_argument("--data-dir", help="data directory (default: PAPERCHAT_DATA_DIR or ./.paperchat)")
    sub = p.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (errors are printed as one line, never a traceback)."""
    args = build_parser().parse_args(argv)
    interrupted, previous = _watch_interrupts()
    try:
        if hasattr(signal, "pthread_sigmask"):  # a Ctrl-C held back while `paperchat.launch` imported arrives now
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        code = int(args.func(args))
        # a Ctrl-C that a library swallowed (raised inside a __del__ or a finally of a model load) still ends the
        # command as interrupted, not as a success (issue 33, case 12)
        # (a server's Ctrl-C is how it is stopped: `serve` and `mcp` end with their own status)
        return _interrupted() if interrupted.is_set() and not getattr(args, "long_running", False) else code
    except PaperchatError as exc:
        from paperchat.text import printable

        print(printable(f"paperchat: error: {exc}"), file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other commands do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return _interrupted()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _interrupted() -> int:
    try:
        print(INTERRUPTED, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr already closed (a killed terminal): nothing to say it on
        pass
    return 130


def _watch_interrupts() -> tuple[threading.Event, Any]:
    """Remember every SIGINT (then raise KeyboardInterrupt as Python does), so one that a library swallows is still
    seen when the command returns. Only in the main thread (signal handlers can be set only there)."""
    seen = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return seen, None

    def on_sigint(signum: int, frame: object) -> None:
        seen.set()
        raise KeyboardInterrupt

    return seen, signal.signal(signal.SIGINT, on_sigint)
