"""Thin launcher: `python -m ingest ...` is `paperchat ingest ...`."""

import sys

from paperchat.cli import main

sys.exit(main(["ingest", *sys.argv[1:]]))
