"""A default scan against a real OpenAI-compatible server: ``transformers serve`` with a tiny model
built here (nothing downloaded), on 127.0.0.1. Every request carries ``max_tokens``, and the scan
gets its answers with no option but the base URL. Skipped, saying why, when the server cannot
start (``transformers serve`` needs transformers' ``serving`` extra: FastAPI, Uvicorn and openai,
which the ``test`` extra installs)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import cli_runner
from helpers.tiny_lm import build_tiny_lm
from redline.generators.output import DEFAULT_MAX_TOKENS
from redline.store import Store

# slow: the server loads for a while; a loaded machine may slow its answers past a timeout, which
# the scan then rides out (fewer requests at once, a longer timeout): room for that, not a hang
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: Seconds the server may take to load the model and answer its health check.
START_SECONDS = 120


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _missing_serving_extra() -> str | None:
    if shutil.which("transformers") is None:
        return "the transformers command is not installed"
    missing = [name for name in ("fastapi", "uvicorn", "openai", "pydantic") if importlib.util.find_spec(name) is None]
    if missing:
        return f"transformers serve needs {', '.join(missing)} (pip install 'transformers[serving]')"
    return None


@pytest.fixture
def served_model(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``(model id, base URL)`` of ``transformers serve`` serving a tiny model on 127.0.0.1."""
    reason = _missing_serving_extra()
    if reason:
        pytest.skip(reason)
    folder = build_tiny_lm(tmp_path / "model")
    config = json.loads((folder / "config.json").read_text())
    config["max_position_embeddings"] = 2048  # rotary positions: room for a prompt and a full output
    (folder / "config.json").write_text(json.dumps(config))
    port = _free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = ["transformers", "serve", str(folder), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if server.poll() is not None:
                tail = log.read_text(errors="replace")[-600:]
                pytest.skip(f"transformers serve exited with {server.returncode} before it answered: {tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.skip(f"transformers serve did not answer within {START_SECONDS} s")
            time.sleep(0.5)
        yield str(folder), f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


class RecordingProxy:
    """Forwards every request to ``upstream`` and keeps the JSON bodies it forwarded."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.bodies: list[dict[str, Any]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self, data: bytes | None) -> None:
                request = urllib.request.Request(
                    proxy.upstream + self.path.removeprefix("/v1"),
                    data=data,
                    method=self.command,
                    headers={"content-type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(request, timeout=300) as answer:
                        status, payload = answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    status, payload = error.code, error.read()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length") or 0))
                proxy.bodies.append(json.loads(data))
                self._forward(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_default_scan_of_a_transformers_server_gets_answers_and_bounds_every_output(
    served_model, tmp_path, monkeypatch, capsys
):
    model, base_url = served_model
    db = tmp_path / "runs.db"
    run = cli_runner(monkeypatch, capsys)
    with RecordingProxy(base_url) as proxy:
        code, _out, err = run(
            "scan", "-m", f"openai:{model}", "--base-url", proxy.base_url, "-p", "harmful.Requests",
            "--sample", "2", "--store", str(db), "--json",
        )  # fmt: skip
    assert code == 0, err
    assert len(proxy.bodies) >= 2  # more when a request was retried (a slow answer on a loaded machine)
    assert all(body["max_tokens"] == DEFAULT_MAX_TOKENS for body in proxy.bodies)
    store = Store(db)
    try:
        (run_id,) = [r.run_id for r in store.list_runs()]
        attempts = list(store.iter_attempts(run_id))
    finally:
        store.close()
    assert len(attempts) == 2
    assert all("error" not in a.notes and a.outputs and a.outputs[0].text for a in attempts)
