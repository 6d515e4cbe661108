"""HTTPGenerator on its two clients: the wire client without a proxy (aiohttp not even imported),
aiohttp through a proxy from the environment; and the errors of the wire client mapped to the
generator's messages."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from helpers.raw_http import serve
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable
from redline.generators.openai import OpenAIGenerator

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
ANSWER = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}).encode()


@pytest.fixture
def env(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def conversation() -> Conversation:
    return Conversation(turns=[Turn(role="user", content=Message(text="hi"))])


def ok(body: bytes = ANSWER) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


def test_a_request_without_a_proxy_does_not_import_aiohttp_nor_urllib_request(env):
    code = """
import asyncio, sys
from redline.attempt import Conversation, Message, Turn
from redline.generators.openai import OpenAIGenerator

ANSWER = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}'

async def main():
    async def handle(reader, writer):
        while True:
            try:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
            except Exception:
                break
            size = [l for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length:")]
            await reader.readexactly(int(size[0].split(b":")[1]) if size else 0)
            writer.write(b"HTTP/1.1 200 OK\\r\\ncontent-length: %d\\r\\n\\r\\n%s" % (len(ANSWER), ANSWER))
        writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    gen = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
    (out,) = await gen.generate(Conversation(turns=[Turn(role="user", content=Message(text="hi"))]), 1)
    await gen.aclose()
    server.close()
    print(out.text, "aiohttp" in sys.modules, "urllib.request" in sys.modules)

asyncio.run(main())
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # nor urllib.request (with http.client and email), read only when a *_proxy variable is set
    assert result.stdout.split() == ["ok", "False", "False"], result.stderr


async def test_a_proxy_from_the_environment_sends_through_aiohttp(env):
    server, port, lines = await serve(lambda line: ok())
    env.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    gen = OpenAIGenerator("m", base_url="http://model.example:8000/v1")  # reached only through the proxy
    try:
        (out,) = await gen.generate(conversation(), 1)
    finally:
        await gen.aclose()
        server.close()
    assert out is not None and out.text == "ok"
    # a proxy is sent the whole URL: the probe and the request went through it
    assert lines == [
        "GET http://model.example:8000/v1/models HTTP/1.1",
        "POST http://model.example:8000/v1/chat/completions HTTP/1.1",
    ]


async def test_the_wire_client_answers_and_keeps_one_connection(env):
    server, port, lines = await serve(lambda line: ok())
    gen = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1")
    try:
        outputs = [await gen.generate(conversation(), 1) for _ in range(3)]
        connects = gen._client.connects
    finally:
        await gen.aclose()
        server.close()
    assert [o.text for (o,) in outputs] == ["ok"] * 3
    assert lines[0] == "GET /v1/models HTTP/1.1" and lines[1:] == ["POST /v1/chat/completions HTTP/1.1"] * 3
    assert connects == 1


async def test_a_connection_dropped_mid_answer_is_retried_then_named(env):
    partial = b'HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n{"choi'
    server, port, lines = await serve(lambda line: ok(b"{}") if line.startswith("GET") else (partial, True))
    gen = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.01)
    try:
        with pytest.raises(GeneratorError) as info:
            await gen.generate(conversation(), 1)
    finally:
        await gen.aclose()
        server.close()
    assert str(info.value).startswith(
        f"connection to http://127.0.0.1:{port}/v1 dropped (WireDropped: connection lost before the whole answer"
    )
    assert lines.count("POST /v1/chat/completions HTTP/1.1") == 2  # tried again once (not resent at once)


async def test_a_garbled_answer_is_a_dropped_connection_then_an_error(env):
    server, port, lines = await serve(lambda line: ok(b"{}") if line.startswith("GET") else b"NOT HTTP AT ALL\r\n\r\n")
    gen = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.01)
    try:
        with pytest.raises(GeneratorError, match=r"dropped \(WireProtocolError: not an HTTP") as info:
            await gen.generate(conversation(), 1)
    finally:
        await gen.aclose()
        server.close()
    assert not isinstance(info.value, GeneratorUnavailable)
    assert lines.count("POST /v1/chat/completions HTTP/1.1") == 2  # tried again once


async def test_nobody_listening_is_cannot_reach_naming_the_reason(env):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    gen = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(GeneratorUnavailable, match=rf"cannot reach http://127.0.0.1:{port}/v1: .*(refused|failed)"):
        await gen.generate(conversation(), 1)
    await gen.aclose()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:99999/v1", "http:///v1", "http://127.0.0.1:80\x01/v1", "http://[::1/v1"]
)
async def test_an_unusable_base_url_is_unavailable(env, url):
    gen = OpenAIGenerator("m", base_url=url)
    with pytest.raises(GeneratorUnavailable, match="base_url is not a usable URL"):
        await gen.generate(conversation(), 1)
    await gen.aclose()
