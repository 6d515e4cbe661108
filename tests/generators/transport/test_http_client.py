"""HTTPGenerator's client (aiohttp) against raw local servers: keep-alive, chunked and gzip answers,
charsets, dropped and garbled answers, unusable URLs, credentials in the URL, and proxies from the
environment (looked up once per host, ``~/.netrc`` never read)."""

from __future__ import annotations

import base64
import gzip
import json
import socket
import subprocess
import sys

import pytest

from helpers.raw_http import serve
from redline import __version__
from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable
from redline.generators.openai import OpenAIGenerator
from redline.generators.rest import RestGenerator

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
ANSWER = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}).encode()
FAST = {"max_retries": 1, "backoff_base": 0.01, "backoff_cap": 0.01}


@pytest.fixture
def env(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return monkeypatch


def conversation(text: str = "hi") -> Conversation:
    return Conversation(turns=[Turn(role="user", content=Message(text=text))])


def ok(body: bytes = ANSWER, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s" % (
        len(body),
        extra,
        body,
    )


def probe_ok_else(answer):
    """Answer the reachability GET with ``{}`` and every POST with ``answer``."""
    return lambda line: ok(b"{}") if line.startswith("GET") else answer


async def ask(gen, text: str = "hi"):
    try:
        (out,) = await gen.generate(conversation(text), 1)
    finally:
        await gen.aclose()
    return out


def test_aiohttp_is_imported_when_a_generator_starts_not_before():
    code = (
        "import sys, redline.cli.main\n"
        "from redline.generators.openai import OpenAIGenerator\n"
        "OpenAIGenerator('m', base_url='http://127.0.0.1:9/v1', ca_bundle='ca.pem')\n"
        "print('aiohttp' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["False"], result.stderr


# -- connections and bodies --------------------------------------------------------------------------
async def test_requests_share_one_kept_alive_connection_and_say_who_sends_them(env):
    heads: list[dict[str, str]] = []
    connections: list[int] = []
    server, port, lines = await serve(lambda line: ok(), heads, connections)
    gen = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1")
    try:
        outputs = [await gen.generate(conversation(), 1) for _ in range(3)]
    finally:
        await gen.aclose()
        server.close()
    assert [o.text for (o,) in outputs] == ["ok"] * 3
    assert lines == ["GET /v1/models HTTP/1.1"] + ["POST /v1/chat/completions HTTP/1.1"] * 3
    assert connections == [1]
    assert {head["user-agent"] for head in heads} == {f"redline/{__version__}"}
    assert heads[1]["content-type"] == "application/json"


async def test_a_chunked_answer_in_several_chunks_is_read_whole(env):
    body = ANSWER
    chunked = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    for piece in (body[:7], body[7:20], body[20:]):
        chunked += b"%x\r\n%s\r\n" % (len(piece), piece)
    chunked += b"0\r\n\r\n"
    server, port, _ = await serve(probe_ok_else(chunked))
    try:
        out = await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1"))
    finally:
        server.close()
    assert out.text == "ok"


async def test_a_gzip_answer_is_decoded(env):
    server, port, _ = await serve(probe_ok_else(ok(gzip.compress(ANSWER), b"content-encoding: gzip\r\n")))
    try:
        out = await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1"))
    finally:
        server.close()
    assert out.text == "ok"


async def test_an_answer_larger_than_the_cap_fails_its_request_only(env, monkeypatch):
    monkeypatch.setattr("redline.generators.transport.http.MAX_BODY_BYTES", 100)
    big = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 500}}]}).encode()
    chunked = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    chunked += b"%x\r\n%s\r\n0\r\n\r\n" % (len(big), big)
    bomb = ok(gzip.compress(big), b"content-encoding: gzip\r\n")  # small on the wire, large decoded
    assert len(gzip.compress(big)) < 100
    for answer in (ok(big), chunked, bomb):  # with a content-length, without one, compressed
        server, port, _ = await serve(probe_ok_else(answer))
        try:
            with pytest.raises(GeneratorError, match="larger than 100 bytes"):
                await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", **FAST))
        finally:
            server.close()


async def test_a_text_answer_is_decoded_in_its_declared_charset(env):
    text = "café crème".encode("iso-8859-1")
    answer = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=ISO-8859-1\r\ncontent-length: %d\r\n\r\n%s" % (
        len(text),
        text,
    )
    server, port, _ = await serve(lambda line: answer)
    try:
        out = await ask(RestGenerator("r", url=f"http://127.0.0.1:{port}/gen", response_format="text"))
    finally:
        server.close()
    assert out.text == "café crème"


async def test_an_error_answer_is_quoted_in_its_charset(env):
    text = "requête refusée".encode("iso-8859-1")
    answer = (
        b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=latin-1\r\ncontent-length: %d\r\n\r\n%s"
        % (
            len(text),
            text,
        )
    )
    server, port, _ = await serve(probe_ok_else(answer))
    try:
        with pytest.raises(GeneratorError, match="HTTP 400 from .*: requête refusée"):
            await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1"))
    finally:
        server.close()


async def test_a_kept_alive_connection_the_server_closes_unanswered_is_tried_again(env):
    connections: list[int] = []
    posts = 0

    def answer_for(line: str):
        nonlocal posts
        if line.startswith("GET"):
            return ok(b"{}")
        posts += 1
        return (b"", True) if posts == 1 else ok()  # closes the kept-alive connection without a word

    server, port, lines = await serve(answer_for, connections=connections)
    try:
        out = await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", **FAST))
    finally:
        server.close()
    assert out.text == "ok"
    assert lines.count("POST /v1/chat/completions HTTP/1.1") == 2 and connections == [1, 2]


# -- failures -----------------------------------------------------------------------------------------
async def test_a_connection_dropped_mid_answer_is_retried_then_named(env):
    partial = b'HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n{"choi'
    server, port, lines = await serve(probe_ok_else((partial, True)))
    try:
        with pytest.raises(GeneratorError) as info:
            await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", **FAST))
    finally:
        server.close()
    assert not isinstance(info.value, GeneratorUnavailable)
    assert str(info.value).startswith(f"connection to http://127.0.0.1:{port}/v1 dropped (ClientPayloadError")
    assert str(info.value).endswith("(after 2 tries)")
    assert lines.count("POST /v1/chat/completions HTTP/1.1") == 2  # tried again once


async def test_a_garbled_status_line_is_retried_then_named(env):
    server, port, lines = await serve(probe_ok_else(b"NOT HTTP AT ALL\r\n\r\n"))
    try:
        with pytest.raises(GeneratorError, match=r"that is not HTTP \(") as info:
            await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", **FAST))
    finally:
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
        await ask(gen)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:99999/v1", "http:///v1", "http://127.0.0.1:80\x01/v1", "http://[::1/v1"]
)
async def test_an_unusable_base_url_is_unavailable(env, url):
    with pytest.raises(GeneratorUnavailable, match="base_url is not a usable URL"):
        await ask(OpenAIGenerator("m", base_url=url))


# -- credentials and proxies --------------------------------------------------------------------------
async def test_credentials_in_the_url_travel_as_basic_auth_in_place_of_the_key(env):
    heads: list[dict[str, str]] = []
    server, port, _ = await serve(lambda line: ok(), heads)
    env.setenv("OPENAI_API_KEY", "sk-bearer-key-0123456789")
    try:
        output = await ask(OpenAIGenerator("m", base_url=f"http://al%40ice:p%3Ass@127.0.0.1:{port}/v1"))
    finally:
        server.close()
        await server.wait_closed()
    assert output is not None and output.text == "ok"
    basic = "Basic " + base64.b64encode(b"al@ice:p:ss").decode()
    seen = [head.get("authorization", "") for head in heads]
    assert len(seen) == 2 and all(value == basic for value in seen)  # the reachability GET and the request


async def test_a_netrc_entry_for_the_host_is_not_sent_in_place_of_the_key(env, tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("default login someone password from-netrc\n")
    netrc.chmod(0o600)
    env.setenv("NETRC", str(netrc))
    env.setenv("OPENAI_API_KEY", "sk-bearer-key-0123456789")
    heads: list[dict[str, str]] = []
    server, port, _ = await serve(lambda line: ok(), heads)
    try:
        output = await ask(OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1"))
    finally:
        server.close()
    assert output.text == "ok"
    assert [head["authorization"] for head in heads] == ["Bearer sk-bearer-key-0123456789"] * 2


async def test_a_proxy_from_the_environment_is_sent_the_whole_url(env):
    server, port, lines = await serve(lambda line: ok())
    env.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    try:
        out = await ask(OpenAIGenerator("m", base_url="http://model.example:8000/v1"))  # reached only by the proxy
    finally:
        server.close()
    assert out.text == "ok"
    assert lines == [
        "GET http://model.example:8000/v1/models HTTP/1.1",
        "POST http://model.example:8000/v1/chat/completions HTTP/1.1",
    ]


def test_the_proxy_comes_from_the_environment_by_scheme_unless_no_proxy_names_the_host(env):
    env.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    env.setenv("HTTP_PROXY", "http://plain.example:8080")
    env.setenv("NO_PROXY", "internal.example,127.0.0.1")
    gen = OpenAIGenerator("m", base_url="https://api.example/v1")
    assert gen._proxy("https://api.example/v1/chat/completions") == "http://proxy.example:3128"
    assert gen._proxy("http://other.example/v1") == "http://plain.example:8080"
    assert gen._proxy("https://internal.example/v1") is None
    assert gen._proxy("http://127.0.0.1:8000/v1") is None


def test_without_proxy_variables_requests_go_direct_and_the_answer_is_kept_per_host(env):
    gen = OpenAIGenerator("m", base_url="http://127.0.0.1:9/v1")
    assert gen._proxy("http://127.0.0.1:9/v1/chat/completions") is None
    env.setenv("HTTP_PROXY", "http://late.example:1")  # looked up once per host: not seen now
    assert gen._proxy("http://127.0.0.1:9/v1/models") is None
    assert gen._proxy("http://elsewhere.example/v1") == "http://late.example:1"
