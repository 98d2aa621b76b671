"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests: deterministic, scripted per test.

It speaks the real wire format (JSON and server-sent events) so the real OpenAI SDK and ChatOpenAI
talk to it; `mode` makes it misbehave (500, 429, hang, cut the stream).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeLLM:
    def __init__(self, reply: str = "The answer is in the sources [1].", mode: str = "ok") -> None:
        self.reply = reply
        self.mode = mode
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def _json(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append(body)
                if fake.mode == "500":
                    return self._json(500, {"error": {"message": "boom"}})
                if fake.mode == "429":
                    return self._json(429, {"error": {"message": "slow down"}})
                if fake.mode == "hang":
                    time.sleep(30)
                    return None
                if not body.get("stream"):
                    return self._json(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                                            "choices": [{"index": 0, "message": {"role": "assistant", "content": fake.reply}, "finish_reason": "stop"}]})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                words = fake.reply.split(" ")
                for i, w in enumerate(words):
                    if fake.mode == "cut" and i == len(words) // 2:
                        self.wfile.flush()
                        self.connection.close()
                        return None
                    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                             "choices": [{"index": 0, "delta": {"content": w + (" " if i < len(words) - 1 else "")}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                end = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(end)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)  # shutdown waits one poll

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
