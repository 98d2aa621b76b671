"""Entry point of the bundled llama.cpp server (`python -m paperchat.providers.llama_main ARGS`).

It is llama-cpp-python's own server (`llama_cpp.server`) with the CPU's extra buffer types turned off
(`use_extra_bufts = False`: no weight repacking into the AMX or other CPU-specific layouts). On Xeons with
AMX, a freshly built llama.cpp crashes at the first generation when those buffer types are on; SmolLM2-135M
gains nothing measurable from repacking, so they stay off everywhere. llama-cpp-python's server has no
switch for it, so the model's default parameters are wrapped before the server builds the model.
"""

from __future__ import annotations

from typing import Any


def _without_extra_bufts() -> None:
    import llama_cpp.llama_cpp as ll

    original = ll.llama_model_default_params
    if getattr(original, "_paperchat_wrapped", False):
        return

    def params() -> Any:
        p = original()
        p.use_extra_bufts = False
        return p

    params._paperchat_wrapped = True  # type: ignore[attr-defined]
    ll.llama_model_default_params = params


def main() -> None:
    """Run llama-cpp-python's server with the extra buffer types off (same arguments as llama_cpp.server)."""
    _without_extra_bufts()
    from llama_cpp.server.__main__ import main as server_main

    server_main()


if __name__ == "__main__":
    main()
