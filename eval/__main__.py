"""Thin launcher: `python -m eval ...` is `paperchat eval ...`."""

import sys

from paperchat.cli import main

sys.exit(main(["eval", *sys.argv[1:]]))
