"""The Gradio app. `build_app(settings)` returns the Blocks; handlers live in `handlers` and are plain
functions tested without a browser."""

from paperchat.ui.app import build_app

__all__ = ["build_app"]
