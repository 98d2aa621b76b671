"""Start paperchat on the bundled demo corpus (first start ingests it): `python app.py`.

The same as `paperchat serve`: errors print one line (`paperchat: error: ...`) and exit 2.
"""

import sys

from paperchat.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve"]))
