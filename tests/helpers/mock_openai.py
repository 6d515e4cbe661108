"""A small OpenAI-compatible server on 127.0.0.1 for tests: scripted answers, fault injection,
request counting. Runs in a thread; use as a context manager::

    with MockOpenAI(responder=lambda messages, body: "hi") as server:
        base_url = server.base_url
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Responder = Callable[[list[dict], dict], str]


class MockOpenAI:
    def __init__(self, responder: Responder | None = None, latency: float = 0.0,
                 faults: Callable[[int, dict], tuple[int, dict, str] | None] | None = None,
                 supports_n: bool = True) -> None:
        self.responder = responder or (lambda messages, body: messages[-1]["content"])
        self.latency = latency
        self.faults = faults
        self.supports_n = supports_n
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()

    def __enter__(self) -> "MockOpenAI":
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: str, headers: dict | None = None) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(200, json.dumps({"object": "list", "data": [{"id": "mock"}]}))

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with mock._lock:
                    index = len(mock.requests)
                    mock.requests.append(body)
                    mock.headers.append(dict(self.headers))
                if mock.latency:
                    time.sleep(mock.latency)
                if mock.faults is not None:
                    fault = mock.faults(index, body)
                    if fault is not None:
                        status, headers, text = fault
                        if status == 0:  # drop the connection
                            self.close_connection = True
                            self.wfile.flush()
                            self.connection.shutdown(2)
                            return
                        self._send(status, text, headers)
                        return
                n = body.get("n", 1) if mock.supports_n else 1
                choices = [
                    {"index": i, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": mock.responder(body["messages"], body)}}
                    for i in range(n)
                ]
                self._send(200, json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"), "choices": choices}))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
