"""Hostile HTTP servers against the transport: answers that are not HTTP, endless headers,
echoed secrets in error bodies. Each request ends as one recorded error line, never a traceback,
and never with the key in it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError
from redline.generators.openai import OpenAIGenerator

KEY = "sk-hostile-test-key-0123456789"


async def serve(answer: Callable[[bytes], bytes]) -> tuple[asyncio.AbstractServer, str]:
    """A server on 127.0.0.1 that writes ``answer(request head)`` to each request, then closes."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            writer.write(answer(head))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1"


@pytest.fixture
async def key(monkeypatch) -> AsyncIterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    yield KEY


def hello() -> Conversation:
    return Conversation(turns=[Turn(role="user", content=Message(text="hello"))])


@pytest.mark.parametrize(
    "answer, expected",
    [
        (lambda head: b"NOT HTTP AT ALL\r\n\r\n", "that is not HTTP"),
        (lambda head: b"HTTP/1.1 200 OK\r\n" + b"x-junk: y\r\n" * 20000 + b"\r\n", "that is not HTTP"),
        (lambda head: b'HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n{"choices"', "dropped"),
        (
            lambda head: b"HTTP/1.1 500 Oops\r\ncontent-length: %d\r\n\r\n%s" % (len(head), head),
            "HTTP 500",
        ),  # an error body that echoes the request, Authorization header included
    ],
)
async def test_a_hostile_answer_is_one_error_line_without_the_key(key, answer, expected):
    server, base_url = await serve(answer)
    generator = OpenAIGenerator("m", base_url=base_url, max_retries=1, backoff_base=0.001, timeout=5)
    generator.probe_path = None  # no reachability GET: every request meets the hostile answer
    try:
        with pytest.raises(GeneratorError) as caught:
            await generator.generate(hello(), 1)
    finally:
        await generator.aclose()
        server.close()
        await server.wait_closed()
    message = str(caught.value)
    assert expected in message and "\n" not in message.strip()
    assert key not in message
