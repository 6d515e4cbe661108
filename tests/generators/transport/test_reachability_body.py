"""The reachability check before the first request reads an answer's head, never its body."""

from __future__ import annotations

import asyncio

from redline.generators.openai import OpenAIGenerator

#: More than a client that reads the answer's head only could take in: socket buffers hold a few MiB.
BOUND = 32 * 2**20


async def test_an_endless_answer_to_the_reachability_check_is_not_read_into_memory() -> None:
    written = 0
    stopped = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal written
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
            chunk = b"[" * 2**16
            while written <= BOUND:  # endless for a client that reads the body
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                written += len(chunk)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            stopped.set()
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    generator = OpenAIGenerator("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=60)
    try:
        await generator.start()
        await asyncio.wait_for(stopped.wait(), 60)
    finally:
        await generator.aclose()
        server.close()
        await server.wait_closed()
    assert written <= BOUND
