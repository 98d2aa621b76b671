"""The `paperchat` command's entry point: a Ctrl-C while the command's modules are still importing (about 0.4 s,
before `paperchat.cli.main` can watch for it) ends with the same one line and exit status 130 as one later,
never a traceback and never lost (issue 33, case 12). SIGINT is held back (blocked) during the import, where a
library's bare `except:` around an optional import could swallow the KeyboardInterrupt, and released by `main`
once its handler watches for it."""

from __future__ import annotations

import signal
import sys

from paperchat.errors import INTERRUPTED


def run() -> int:
    """Import the CLI (SIGINT held back meanwhile) and run it; exit status 130 on an interrupt."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        from paperchat.cli import main
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    return main()
