"""Start paperchat: ingest the bundled demo corpus on first start, then serve the app."""

from paperchat.settings import Settings

if __name__ == "__main__":
    from paperchat.cli import main

    raise SystemExit(main(["serve"]))

settings = Settings()
