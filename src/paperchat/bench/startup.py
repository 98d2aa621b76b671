"""The startup benchmark: seconds from `python app.py` to the first answered request, and the app's peak memory."""

from __future__ import annotations

import time
from typing import Any

from paperchat.settings import Settings


def bench_startup(settings: Settings, question: str, topic: str, timeout: float = 300.0) -> dict[str, Any]:
    """Seconds from `python app.py` to the first answered request, and the app's peak RSS, on the store in
    settings.data_dir (the app ingests the demo corpus into it first if it is not there)."""
    import os
    import subprocess
    import sys

    from paperchat.ports import free_port
    from paperchat.settings import PROJECT_ROOT

    port = free_port()
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(settings.data_dir), "PAPERCHAT_PORT": str(port)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(PROJECT_ROOT / "app.py")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from gradio_client import Client

        client = None
        while client is None:
            if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                raise RuntimeError("the app did not start")
            try:
                client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            except Exception:
                time.sleep(0.25)
        rec = client.predict(question, topic, api_name="/ask_topic")
        startup = time.perf_counter() - t0
        for _ in range(5):  # a few more, then read the peak
            client.predict(question + " and why", topic, api_name="/ask_topic")
        status = open(f"/proc/{proc.pid}/status").read()
        hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"startup_to_first_answer_s": round(startup, 2), "app_peak_rss_mb": round(hwm / 1024, 1), "answered": bool(rec.get("citations"))}
