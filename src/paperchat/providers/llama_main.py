"""Entry point of the bundled llama.cpp server (`python -m paperchat.providers.llama_main [--extra_bufts on|off] ARGS`).

It is llama-cpp-python's own server (`llama_cpp.server`, which takes ARGS) with one switch of ours:
`--extra_bufts off` (the default here and in `Settings.local.extra_bufts`) sets the model parameter
`use_extra_bufts = False`: no weight repacking into AMX or other CPU-specific layouts. On Xeons with AMX, a
llama-cpp-python 0.3.36 built from source crashes in `llama_decode` at the first generation step when those
buffer types are on (every model, SmolLM2 included); with them off it generates. llama-cpp-python's server has no
switch for it, so the model's default parameters are wrapped before the server builds the model.
"""

from __future__ import annotations

import sys
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


def take_extra_bufts(argv: list[str]) -> tuple[bool, list[str]]:
    """Our `--extra_bufts on|off` taken out of argv (off when absent); the rest goes to llama_cpp.server.

    Raises:
        SystemExit: the switch has no value or a value other than on/off.
    """
    rest: list[str] = []
    extra = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--extra_bufts" or arg.startswith("--extra_bufts="):
            value = arg.partition("=")[2] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if "=" in arg else 2
            if value not in ("on", "off"):
                raise SystemExit(f"--extra_bufts takes on or off, not {value!r}")
            extra = value == "on"
            continue
        rest.append(arg)
        i += 1
    return extra, rest


def main() -> None:
    """Run llama-cpp-python's server, with the extra buffer types off unless `--extra_bufts on`."""
    extra, sys.argv[1:] = take_extra_bufts(sys.argv[1:])
    if not extra:
        _without_extra_bufts()
    print(f"paperchat llama_main: extra buffer types {'on' if extra else 'off'}", file=sys.stderr, flush=True)
    from llama_cpp.server.__main__ import main as server_main

    server_main()


if __name__ == "__main__":
    main()
