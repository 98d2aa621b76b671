"""The `paperchat` command's entry point: a Ctrl-C while the command's modules are still importing (about 0.4 s,
before `paperchat.cli.main` can watch for it) ends with the same one line and exit status 130 as one later,
never a traceback (issue 33, case 12)."""

from __future__ import annotations

import sys

INTERRUPTED = "paperchat: interrupted; run the same command again to finish (nothing is lost)"


def run() -> int:
    """Import the CLI and run it; exit status 130 on an interrupt during the import."""
    try:
        from paperchat.cli import main
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    return main()
