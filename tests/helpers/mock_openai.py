"""A small OpenAI-compatible server on 127.0.0.1 for tests: scripted answers, latency, fault
injection and request counting. It runs in a thread of the test process, so a scan running in a
subprocess can be counted too. Use as a context manager::

    with MockOpenAI(responder=lambda messages, body: "hi") as server:
        base_url = server.base_url            # http://127.0.0.1:PORT/v1
        ...
    server.requests        # every request body, in arrival order
    server.counts[prompt]  # requests per prompt (the last user message)

or through the ``mock_openai`` fixture (import it into the test module), which yields a started
server with the default echo responder.

Endpoints: ``POST /v1/chat/completions`` (honours ``n`` unless ``supports_n=False``),
``POST /v1/completions`` (``prompt`` → ``choices[].text``), ``GET /v1/models``; any other POST
path answers with the chat format too (for the REST generator). Answers carry ``usage``.

Faults: ``faults(index, body)`` is called for each POST (``index`` counts from 0) and returns
``None`` (answer normally) or one of:

* ``(status, headers, text)`` — answer with that status, headers and body (e.g.
  ``(429, {"retry-after": "0.05"}, "{}")``, ``(200, {}, "not json")``);
* ``DROP`` (or status 0) — close the connection without answering;
* ``HANG`` — wait ``hang_seconds`` (default 5) without answering, then close: the client times out.

``fault_rate(p, ...)`` builds a seeded random ``faults`` function.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Responder = Callable[[list[dict], dict], str]
Fault = tuple[int, dict, str]

DROP: Fault = (0, {}, "")
HANG: Fault = (-1, {}, "")

__all__ = ["DROP", "HANG", "MockOpenAI", "fault_rate", "mock_openai"]


def fault_rate(
    p: float, kinds: tuple[Fault, ...] = ((500, {}, '{"error": "boom"}'),), seed: int = 0
) -> Callable[[int, dict], Fault | None]:
    """A ``faults`` function that injects one of ``kinds`` into a fraction ``p`` of requests."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def faults(index: int, body: dict) -> Fault | None:
        with lock:
            if rng.random() < p:
                return rng.choice(kinds)
        return None

    return faults


def _prompt_of(body: dict) -> str:
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return str(message.get("content"))
    for key in ("prompt", "input", "text"):
        if isinstance(body.get(key), str):
            return body[key]
    return json.dumps(body, sort_keys=True)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away (timeouts, killed scans) is part of the tests


class MockOpenAI:
    """See the module docstring. ``latency`` (seconds) delays every answer."""

    def __init__(
        self,
        responder: Responder | None = None,
        latency: float = 0.0,
        faults: Callable[[int, dict], Fault | None] | None = None,
        supports_n: bool = True,
        hang_seconds: float = 5.0,
    ) -> None:
        self.responder = responder or (lambda messages, body: messages[-1]["content"])
        self.latency = latency
        self.faults = faults
        self.supports_n = supports_n
        self.hang_seconds = hang_seconds
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.paths: list[str] = []
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def answer(self, path: str, body: dict) -> dict:
        """The JSON answer to a successful request (override to script other formats)."""
        if path.endswith("/completions") and not path.endswith("/chat/completions"):
            prompt = str(body.get("prompt", ""))
            messages = [{"role": "user", "content": prompt}]
        else:
            messages = body.get("messages") or [{"role": "user", "content": _prompt_of(body)}]
        n = int(body.get("n", 1)) if self.supports_n else 1
        texts = [self.responder(messages, body) for _ in range(n)]
        if path.endswith("/completions") and not path.endswith("/chat/completions"):
            choices = [{"index": i, "finish_reason": "stop", "text": t} for i, t in enumerate(texts)]
            kind = "text_completion"
        else:
            choices = [
                {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": t}}
                for i, t in enumerate(texts)
            ]
            kind = "chat.completion"
        prompt_tokens = sum(len(str(m.get("content", ""))) // 4 + 1 for m in messages)
        completion_tokens = sum(len(t or "") // 4 + 1 for t in texts)
        return {
            "id": "mock",
            "object": kind,
            "model": body.get("model"),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def __enter__(self) -> MockOpenAI:
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

            def _handle(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"raw": raw.decode(errors="replace")}
                if not isinstance(body, dict):
                    body = {"raw": body}
                with mock._lock:
                    index = len(mock.requests)
                    mock.requests.append(body)
                    mock.headers.append(dict(self.headers))
                    mock.paths.append(self.path)
                    mock.counts[_prompt_of(body)] += 1
                if mock.latency:
                    time.sleep(mock.latency)
                if mock.faults is not None:
                    fault = mock.faults(index, body)
                    if fault is not None:
                        status, headers, text = fault
                        if status == -1:
                            time.sleep(mock.hang_seconds)
                            status = 0
                        if status == 0:  # drop the connection without an answer
                            self.close_connection = True
                            try:
                                self.wfile.flush()
                                self.connection.shutdown(2)
                            except OSError:
                                pass
                            return
                        self._send(status, text, headers)
                        return
                self._send(200, json.dumps(mock.answer(self.path, body)))

            do_POST = _handle
            do_PUT = _handle

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        return self

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mock_openai() -> Iterator[MockOpenAI]:
    """A started :class:`MockOpenAI` with the echo responder (set attributes to script it)."""
    with MockOpenAI() as server:
        yield server
