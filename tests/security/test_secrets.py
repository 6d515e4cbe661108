"""The key and other secrets stay where they belong (issue 35, part 2), tried as an attacker would.

* An HTTPS proxy (``HTTPS_PROXY``) sees the ``CONNECT`` request only: neither the key nor a
  ``${VAR}`` header's value is in it.
* An endpoint that redirects to another host gets no request there sent with them.
* An endpoint that echoes the key in every field of an answer (tool-call ids, names, arguments)
  or in an error text cut in the middle of the key leaves no part of it in the store.

Every server here is a thread on 127.0.0.1.
"""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import CliRun, cli_runner

KEY = "sk-victims-key-0123456789abcdef"
HEADER_SECRET = "hdr-secret-fedcba9876543210"
#: The flags of a one-attempt scan of an OpenAI-compatible endpoint with a header reading a variable.
SCAN = (
    "-m", "openai:m", "-p", "encoding.Hex", "--sample", "1", "--max-retries", "0",
    "--gen-opt", "headers={X-Token: '${HEADER_SECRET_VAR}'}",
)  # fmt: skip

Answer = Callable[[str, dict[str, str]], tuple[int, dict[str, str], bytes]]


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("HEADER_SECRET_VAR", HEADER_SECRET)
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.setenv("no_proxy", "")
    return cli_runner(monkeypatch, capsys)


class Endpoint:
    """An HTTP server on 127.0.0.1 answering each request with ``answer(path, headers)`` and
    recording every request's headers."""

    def __init__(self, answer: Answer) -> None:
        self.requests: list[dict[str, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                endpoint.requests.append(dict(self.headers))
                status, headers, body = answer(self.path, dict(self.headers))
                self.send_response(status)
                for name, value in {"content-type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _reply

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoints() -> Iterator[Callable[[Answer], Endpoint]]:
    started: list[Endpoint] = []

    def start(answer: Answer) -> Endpoint:
        started.append(Endpoint(answer))
        return started[-1]

    yield start
    for endpoint in started:
        endpoint.close()


class _Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def proxy() -> Iterator[tuple[str, list[bytes]]]:
    """An HTTP proxy on 127.0.0.1 that records each request it is sent (a ``CONNECT``), whole,
    and refuses it: (its URL, the requests)."""
    seen: list[bytes] = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = self.request.recv(4096)
                if not chunk:
                    break
                data += chunk
            seen.append(data)
            self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    server = _Proxy(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def files_of(db: Path) -> bytes:
    """The store file and its WAL, as bytes."""
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


def chat(message: dict[str, Any]) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", **message}}]}).encode()


def test_the_key_and_header_secrets_never_reach_an_https_proxy_in_its_connect_request(
    cli, proxy, monkeypatch, tmp_path
):
    url, seen = proxy
    monkeypatch.setenv("HTTPS_PROXY", url)

    cli("scan", *SCAN, "--base-url", "https://redline-test.invalid/v1", "--store", str(tmp_path / "s.db"))

    assert seen and all(request.startswith(b"CONNECT redline-test.invalid:443 ") for request in seen)
    for request in seen:
        assert KEY.encode() not in request and HEADER_SECRET.encode() not in request
        assert b"proxy-authorization" not in request.lower() and b"x-token" not in request.lower()


def test_a_redirect_to_another_host_gets_no_request_and_the_run_stops_saying_so(cli, endpoints, tmp_path):
    elsewhere = endpoints(lambda path, headers: (200, {}, chat({"content": "hi"})))
    endpoint = endpoints(lambda path, headers: (307, {"location": elsewhere.url + path}, b""))

    code, _, err = cli("scan", *SCAN, "--base-url", endpoint.url + "/v1", "--store", str(tmp_path / "s.db"))

    assert code == 1 and elsewhere.requests == []
    assert err[-2].startswith(f"error: {endpoint.url}/v1/chat/completions redirects (HTTP 307) to {elsewhere.url}")
    assert err[-1].endswith(" --trust-settings'")  # how to continue the run once the URL is mended
    # the endpoint itself was sent the key and the header, per request
    posts = [headers for headers in endpoint.requests if "content-length" in {k.lower() for k in headers}]
    assert posts and posts[-1]["Authorization"] == f"Bearer {KEY}" and posts[-1]["X-Token"] == HEADER_SECRET


def echo_everywhere(path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """An answer that echoes the key and the header's value in every field of a tool call."""
    key = headers.get("Authorization", "").removeprefix("Bearer ")
    token = headers.get("X-Token", "")
    arguments = json.dumps({"key": key, key: [token], "nested": {"deep": f"{token}/{key}"}})
    call = {"id": f"call-{key}", "type": "function", "function": {"name": f"tool_{token}", "arguments": arguments}}
    return 200, {}, chat({"content": f"text {key}", "tool_calls": [call]})


def test_an_endpoint_echoing_secrets_in_tool_call_ids_names_and_arguments_leaves_none_in_the_store(
    cli, endpoints, tmp_path
):
    endpoint = endpoints(echo_everywhere)
    db = tmp_path / "s.db"

    code, out, err = cli("scan", *SCAN, "--base-url", endpoint.url + "/v1", "--store", str(db), "--json")

    assert code == 0, err
    assert endpoint.requests and json.loads(out)["probes"][0]["attempts"] == 1
    stored = files_of(db)
    assert b"call-***" in stored and b"tool_***" in stored  # the fields were stored, masked
    assert KEY.encode() not in stored and HEADER_SECRET.encode() not in stored


@pytest.mark.parametrize(
    ("status", "prefix"),
    [(400, "x" * 185), (200, "not json " + "x" * 175)],
    ids=["error status", "malformed answer"],
)
def test_an_error_text_cut_in_the_middle_of_the_key_keeps_no_part_of_it(cli, endpoints, tmp_path, status, prefix):
    def answer(path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path.endswith("/models"):
            return 200, {}, b"{}"
        return status, {}, (prefix + headers.get("Authorization", "").removeprefix("Bearer ") + " end").encode()

    endpoint = endpoints(answer)
    db = tmp_path / "s.db"

    _, out, err = cli("scan", *SCAN, "--base-url", endpoint.url + "/v1", "--store", str(db), "--json")

    assert json.loads(out)["probes"][0]["errored"] == 1, err
    stored = files_of(db)
    assert b"xxxxx***" in stored  # the error text was stored, with the key masked before the cut
    assert KEY[:10].encode() not in stored
