"""`python -m paperchat.cli ...` is `paperchat ...`."""

import sys

from paperchat.cli import main

sys.exit(main())
