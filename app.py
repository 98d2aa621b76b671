"""Start paperchat on the bundled demo corpus (first start ingests it): `python app.py`."""

from paperchat.settings import Settings
from paperchat.ui.app import serve

if __name__ == "__main__":
    serve(Settings())
