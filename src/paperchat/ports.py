"""A free TCP port on loopback, for the servers paperchat starts (llama.cpp, the app in benchmarks, tests)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
