"""`python -m paperchat.cli ...` is `paperchat ...`."""

import sys

from paperchat.launch import run

sys.exit(run())
