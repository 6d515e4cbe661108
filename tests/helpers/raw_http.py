"""A raw HTTP/1.1 server on 127.0.0.1 for transport tests: answers each request with what the
test says, byte for byte (a garbled answer, a dropped connection), and records what it was sent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def serve(
    answer_for: Callable[[str], bytes | tuple[bytes, bool]],
    heads: list[dict[str, str]] | None = None,
    connections: list[int] | None = None,
) -> tuple[asyncio.AbstractServer, int, list[str]]:
    """A server answering each request with ``answer_for(request line)``: bytes, or ``(bytes, True)``
    to close the connection after them. Returns the server, its port and the request lines it
    was sent; each request's headers (names in lower case) go to ``heads`` when given, and the
    number of each connection accepted (1, 2, ...) to ``connections``."""
    lines: list[str] = []
    accepted = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        if connections is not None:
            connections.append(accepted)
        while True:
            try:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            fields = {k.lower(): v for k, _, v in (line.partition(": ") for line in head.split("\r\n")[1:] if line)}
            await reader.readexactly(int(fields.get("content-length", 0)))
            lines.append(head.split("\r\n")[0])
            if heads is not None:
                heads.append(fields)
            answer = answer_for(lines[-1])
            answer, close = answer if isinstance(answer, tuple) else (answer, False)
            writer.write(answer)
            await writer.drain()
            if close:
                break
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], lines
