"""Serving the app: who may reach it (`exposure_auth`), the one folder it serves files from, the request limits,
and `serve`, which opens the library and launches `build_app` (split from `app`, which builds the page)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paperchat.assistant import Assistant, pdf_folder
from paperchat.errors import PaperchatError
from paperchat.settings import Settings
from paperchat.ui.app import build_app


def exposure_auth(settings: Settings, insecure: bool = False) -> tuple[str, str] | None:
    """Gradio auth from PAPERCHAT_AUTH; serving beyond loopback without it is refused unless insecure."""
    from paperchat.errors import ConfigError

    auth = None
    if settings.auth:
        user, _, pw = settings.auth.partition(":")
        if not user or not pw:
            raise ConfigError("PAPERCHAT_AUTH must be user:password", "for example PAPERCHAT_AUTH=alice:s3cret")
        auth = (user, pw)
    if settings.host not in ("127.0.0.1", "localhost", "::1") and auth is None and not insecure:
        raise ConfigError(
            f"refusing to serve on {settings.host} without a password",
            "set PAPERCHAT_AUTH=user:password, or pass --insecure if the network is trusted",
        )
    return auth


def allowed_paths(settings: Settings) -> list[str]:
    """The only folder the app serves files from: its own `<sha256>.pdf` copies (never a PDF's source folder)."""
    return [str(pdf_folder(settings).resolve())]


def launch_options(settings: Settings) -> dict[str, Any]:
    """What `demo.launch` needs beyond host and port: the one served folder, the upload size and a cap on
    every other request body (Gradio 6.31 has no request-size option of its own; `max_file_size` only
    limits uploaded files, so a 100 MB question would otherwise be read and parsed whole)."""
    from starlette.middleware import Middleware

    from paperchat.ui.limits import BodyLimit, SameOrigin, request_limit_bytes

    return {
        "allowed_paths": allowed_paths(settings),
        "max_file_size": f"{int(settings.max_pdf_mb)}mb",
        "app_kwargs": {"middleware": [
            Middleware(SameOrigin, loopback_only=settings.host in ("127.0.0.1", "localhost", "::1")),
            Middleware(BodyLimit, max_bytes=request_limit_bytes(settings)),
        ]},
    }


def first_start(core: Assistant, say: Callable[[str], None] = print) -> None:
    """The bundled demo corpus on an empty library, and topic discovery when no topics are discovered yet:
    the fine-grained topics a new user expects on All topics (before, only `topics discover` made them)."""
    report = core.load_demo(show_progress=True)
    if report is not None:
        say(f"demo corpus: {report.papers} papers, {report.chunks_added} chunks added in {report.seconds:.1f} s")
        core.ready()
    if not core.discovered_topics() and core.counts()[0]:
        say("discovering topics (first start only) ...")
        try:
            say(f"topics discovered: {core.discover().summary()}")
        except PaperchatError as exc:  # too few papers yet: the app serves the hand-written topics
            say(f"no topics discovered ({exc}); run `paperchat topics discover` once the library has grown")


def serve(settings: Settings, insecure: bool = False, demo_corpus: bool = True) -> None:
    """Open the library (ingesting the bundled demo corpus on first start) and launch the app on
    settings.host/port (GRADIO_SERVER_PORT honoured); other hosts need PAPERCHAT_AUTH unless insecure."""
    import os

    auth = exposure_auth(settings, insecure)
    port = settings.port or int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    core = Assistant.open(settings)  # syncs topic membership with the rules first
    if demo_corpus:
        first_start(core)
    adopted, unlinked = core.adopt_legacy_pdfs()  # stores made before the app kept its own copies
    if adopted or unlinked:
        print(f"PDF copies: {adopted} copied into {settings.uploads_dir}; {unlinked} not found or changed (not linked)")
    demo = build_app(settings, core)
    # the app serves its own PDF copies and nothing else (not the folders the PDFs came from)
    demo.launch(server_name=settings.host, server_port=port, auth=auth, footer_links=["api"], **launch_options(settings))
