"""The HTTP client of remote generators: proxies from the environment, read once per host."""

from __future__ import annotations

import base64
import json

import pytest

from helpers.raw_http import serve
from redline.attempt import Conversation, Message, Turn
from redline.generators.openai import OpenAIGenerator


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_proxy_comes_from_the_environment_by_scheme_unless_no_proxy_names_the_host(no_proxy_env):
    no_proxy_env.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    no_proxy_env.setenv("HTTP_PROXY", "http://plain.example:8080")
    no_proxy_env.setenv("NO_PROXY", "internal.example,127.0.0.1")
    gen = OpenAIGenerator("m", base_url="https://api.example/v1")
    assert gen._proxy("https://api.example/v1/chat/completions") == "http://proxy.example:3128"
    assert gen._proxy("http://other.example/v1") == "http://plain.example:8080"
    assert gen._proxy("https://internal.example/v1") is None
    assert gen._proxy("http://127.0.0.1:8000/v1") is None


def test_without_proxy_variables_requests_go_direct_and_the_answer_is_kept_per_host(no_proxy_env):
    gen = OpenAIGenerator("m", base_url="http://127.0.0.1:9/v1")
    assert gen._proxy("http://127.0.0.1:9/v1/chat/completions") is None
    no_proxy_env.setenv("HTTP_PROXY", "http://late.example:1")  # read once per host: not seen now
    assert gen._proxy("http://127.0.0.1:9/v1/models") is None
    assert gen._proxy("http://elsewhere.example/v1") == "http://late.example:1"


async def test_credentials_in_the_url_travel_as_basic_auth_in_place_of_the_key(no_proxy_env):
    heads: list[dict[str, str]] = []
    answer = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}).encode()
    server, port, _ = await serve(
        lambda line: b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer), heads
    )
    no_proxy_env.setenv("OPENAI_API_KEY", "sk-bearer-key-0123456789")
    gen = OpenAIGenerator("m", base_url=f"http://al%40ice:p%3Ass@127.0.0.1:{port}/v1")
    try:
        (output,) = await gen.generate(Conversation(turns=[Turn(role="user", content=Message(text="hi"))]), 1)
    finally:
        await gen.aclose()
        server.close()
        await server.wait_closed()
    assert output is not None and output.text == "ok"
    basic = "Basic " + base64.b64encode(b"al@ice:p:ss").decode()
    seen = [head.get("authorization", "") for head in heads]
    assert seen and all(value == basic for value in seen)  # the reachability GET and the request
