"""The lean HTTP/1.1 client (:mod:`redline.generators.transport.wire`) against real servers on
127.0.0.1: bodies by length, chunks and to the end of the connection, gzip, keep-alive and its
limits, the one resend on a connection the server closed while idle, errors, timeouts,
cancellation and TLS."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import socket
import ssl
import zlib
from collections.abc import Awaitable, Callable

import pytest

from redline.generators.transport.wire import (
    IDLE_TTL,
    USER_AGENT,
    WireClient,
    WireConnectError,
    WireDropped,
    WireInvalidURL,
    WireProtocolError,
)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Server"], Awaitable[None]]


class Server:
    """A local server running ``handler`` for each connection; counts connections."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.server: asyncio.AbstractServer | None = None
        self.url = ""

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        # wait_closed waits for every connection to end on newer Pythons: not needed here

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await self.handler(reader, writer, self)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open -= 1
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
        """One request (None at the end of the connection)."""
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.split("\r\n")
        fields = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:] if line)}
        body = await reader.readexactly(int(fields.get("content-length", 0)))
        self.requests.append((lines[0], fields, body))
        return lines[0], fields, body


def answering(*answers: bytes, then_close: bool = False) -> Handler:
    """A handler answering the server's n-th request (on whichever connection) with the n-th of
    ``answers`` (the last one again when they run out)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
        while await server.read_request(reader) is not None:
            writer.write(answers[min(len(server.requests) - 1, len(answers) - 1)])
            await writer.drain()
            if then_close:
                return

    return handle


def ok(body: bytes, extra: str = "") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), extra.encode(), body)


@pytest.fixture
async def client():
    made: list[WireClient] = []

    def make(limit: int | None = None, **kwargs) -> WireClient:
        made.append(WireClient(limit, **kwargs))
        return made[-1]

    yield make
    for c in made:
        await c.aclose()


async def test_a_request_carries_host_length_headers_and_the_answer_is_read_by_length(client):
    answer = ok(b'{"ok": true}', "Content-Type: application/json; charset=ISO-8859-1\r\nX-Thing: a\r\nX-Thing: b\r\n")
    async with Server(answering(answer)) as server:
        c = client(headers={"Authorization": "Bearer k", "content-type": "application/json"})
        response = await c.request("POST", server.url + "/v1/chat?x=1", b'{"q": 1}', {"authorization": "Basic u"}, 5)
    assert response.status == 200 and response.body == b'{"ok": true}'
    assert response.headers.get("X-THING") == "a, b" and response.headers["content-type"].startswith("application")
    assert response.charset == "ISO-8859-1"
    line, fields, body = server.requests[0]
    assert line == "POST /v1/chat?x=1 HTTP/1.1" and body == b'{"q": 1}'
    assert fields["host"] == server.url.removeprefix("http://") and fields["content-length"] == "8"
    assert fields["authorization"] == "Basic u"  # the request's header replaces the default one
    assert fields["content-type"] == "application/json"
    assert fields["user-agent"] == USER_AGENT and fields["accept-encoding"] == "gzip, deflate"


async def test_chunked_answer_with_several_chunks_and_a_trailer(client):
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n1\r\n \r\nA\r\nchunked!!!\r\n0\r\nX-Checksum: 1\r\n\r\n"
    )
    async with Server(answering(answer)) as server:
        c = client()
        first = await c.request("GET", server.url + "/", b"", None, 5)
        second = await c.request("GET", server.url + "/", b"", None, 5)
    assert first.body == second.body == b"hello chunked!!!"
    assert server.accepted == 1  # the chunked answer ended cleanly: the connection was kept


async def test_chunks_split_across_reads_are_put_together(client):
    pieces = [b"HTTP/1.1 200 OK\r\nTransfer-", b"Encoding: chunked\r\n\r\n3\r", b"\nab", b"c\r\n0\r\n", b"\r\n"]

    async def handle(reader, writer, server):
        await server.read_request(reader)
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.01)

    async with Server(handle) as server:
        response = await client().request("GET", server.url + "/", b"", None, 5)
    assert response.body == b"abc"


async def test_gzip_and_deflate_bodies_are_decoded(client):
    text = b'{"answer": "' + b"tides " * 200 + b'"}'
    answers = [
        ok(gzip.compress(text), "Content-Encoding: gzip\r\n"),
        ok(zlib.compress(text), "Content-Encoding: deflate\r\n"),
        ok(zlib.compress(text)[2:-4], "Content-Encoding: deflate\r\n"),  # raw deflate, as some servers send
    ]
    async with Server(answering(*answers)) as server:
        c = client()
        bodies = [(await c.request("GET", server.url + "/", b"", None, 5)).body for _ in answers]
    assert bodies == [text, text, text]


async def test_an_answer_without_length_is_read_to_the_end_and_its_connection_not_reused(client):
    async with Server(answering(b"HTTP/1.1 200 OK\r\n\r\nall of it", then_close=True)) as server:
        c = client()
        first = await c.request("GET", server.url + "/", b"", None, 5)
        second = await c.request("GET", server.url + "/", b"", None, 5)
    assert first.body == second.body == b"all of it"
    assert server.accepted == 2


async def test_connection_close_and_http_1_0_answers_are_not_reused(client):
    answers = [ok(b"a", "Connection: close\r\n"), b"HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nb"]
    async with Server(answering(*answers)) as server:
        c = client()
        assert (await c.request("GET", server.url + "/", b"", None, 5)).body == b"a"
        assert (await c.request("GET", server.url + "/", b"", None, 5)).body == b"b"
        assert (await c.request("GET", server.url + "/", b"", None, 5)).body == b"b"
    assert server.accepted == 3
    assert c.open_connections == 0


async def test_204_has_no_body_and_keeps_the_connection(client):
    answers = [b"HTTP/1.1 204 No Content\r\n\r\n", ok(b"next")]
    async with Server(answering(*answers)) as server:
        c = client()
        empty = await c.request("DELETE", server.url + "/x", b"", None, 5)
        after = await c.request("GET", server.url + "/", b"", None, 5)
    assert (empty.status, empty.body) == (204, b"") and after.body == b"next"
    assert server.accepted == 1


async def test_interim_100_continue_is_skipped(client):
    answer = b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"final")
    async with Server(answering(answer)) as server:
        response = await client().request("POST", server.url + "/", b"{}", None, 5)
    assert (response.status, response.body) == (200, b"final")


async def test_keep_alive_reuses_one_connection(client):
    async with Server(answering(ok(b"{}"))) as server:
        c = client(limit=4)
        for _ in range(10):
            assert (await c.request("POST", server.url + "/", b"{}", None, 5)).body == b"{}"
    assert server.accepted == 1 and c.connects == 1


async def test_a_kept_alive_connection_closed_by_the_server_is_replaced_transparently(client):
    async def handle(reader, writer, server):
        await server.read_request(reader)
        writer.write(ok(b"first"))
        await writer.drain()
        await server.read_request(reader)  # the next request on this connection: closed, unanswered

    async with Server(handle) as server:
        c = client()
        assert (await c.request("POST", server.url + "/", b"1", None, 5)).body == b"first"
        assert (await c.request("POST", server.url + "/", b"2", None, 5)).body == b"first"
    assert server.accepted == 2
    assert [body for _, _, body in server.requests] == [b"1", b"2", b"2"]


async def test_a_fresh_connection_closed_without_an_answer_is_dropped(client):
    async def handle(reader, writer, server):
        await server.read_request(reader)

    async with Server(handle) as server:
        with pytest.raises(WireDropped, match="without answering"):
            await client().request("POST", server.url + "/", b"{}", None, 5)
    assert server.accepted == 1  # not sent again: nothing says the server closed an idle connection


async def test_a_connection_dropped_mid_body_is_wire_dropped_even_when_reused(client):
    async def handle(reader, writer, server):
        await server.read_request(reader)
        writer.write(ok(b"whole"))
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part")
        await writer.drain()

    async with Server(handle) as server:
        c = client()
        await c.request("GET", server.url + "/", b"", None, 5)
        with pytest.raises(WireDropped, match="before the whole answer"):
            await c.request("GET", server.url + "/", b"", None, 5)
    assert server.accepted == 1  # some of the answer came: not sent again
    assert c.open_connections == 0


#: Answers the client refuses: the answer, the error's words, whether its connection is closed
#: (a body read to its end but not decodable leaves the connection usable).
BAD_ANSWERS = [
    (ok(b"xx", "Content-Encoding: br\r\n"), "unsupported content encoding", False),
    (ok(b"not gzip", "Content-Encoding: gzip\r\n"), "cannot be decoded", False),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP", True),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "status line", True),
    (b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * 70_000 + b"\r\n\r\n", "headers exceed", True),
    (b"HTTP/1.1 200 OK\r\ncontent-length: 999999999999\r\n\r\n", "more than the", True),
]


@pytest.mark.parametrize("answer, message, closed", BAD_ANSWERS, ids=[m for _, m, _ in BAD_ANSWERS])
async def test_a_bad_answer_is_a_protocol_error_naming_what_is_wrong(client, answer, message, closed):
    """An unknown or broken content encoding, a garbled status line, oversized headers or body."""
    async with Server(answering(answer)) as server:
        c = client()
        with pytest.raises(WireProtocolError, match=message):
            await c.request("GET", server.url + "/", b"", None, 5)
        assert (c.open_connections == 0) is closed


async def test_a_timeout_raises_timeout_error_and_the_connection_is_not_reused(client):
    hang = asyncio.Event()

    async def handle(reader, writer, server):
        while await server.read_request(reader) is not None:
            if len(server.requests) == 2:
                await hang.wait()  # the second request gets no answer
            writer.write(ok(b"{}"))
            await writer.drain()

    async with Server(handle) as server:
        c = client()
        await c.request("GET", server.url + "/", b"", None, 5)
        with pytest.raises(TimeoutError):
            await c.request("GET", server.url + "/", b"", None, 0.1)
        assert c.open_connections == 0
        assert (await c.request("GET", server.url + "/", b"", None, 5)).body == b"{}"
        hang.set()
    assert server.accepted == 2


async def test_connect_refused_is_a_connect_error_with_the_os_error(client):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nobody listens there now
    c = client(limit=1)
    for _ in range(2):  # the slot is given back each time
        with pytest.raises(WireConnectError) as info:
            await c.request("GET", f"http://127.0.0.1:{port}/", b"", None, 5)
        assert isinstance(info.value.os_error, OSError)
    assert c.open_connections == 0 and c.waiting == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:99999/",
        "http://127.0.0.1:0/",
        "http:///v1",
        "ftp://host/x",
        "http://host/a b",
        "http://u:p@host/",
    ],
)
async def test_unusable_urls_are_refused(client, url):
    with pytest.raises(WireInvalidURL):
        await client().request("GET", url, b"", None, 5)


async def test_the_limit_caps_open_connections_and_every_request_is_answered(client):
    async def handle(reader, writer, server):
        while await server.read_request(reader) is not None:
            await asyncio.sleep(0.01)
            writer.write(ok(b"{}"))
            await writer.drain()

    async with Server(handle) as server:
        c = client(limit=3)
        answers = await asyncio.gather(*(c.request("POST", server.url + "/", b"{}", None, 5) for _ in range(9)))
    assert [a.status for a in answers] == [200] * 9
    assert server.most_open <= 3 and c.connects <= 3
    assert c.waiting == 0


async def test_cancelling_a_request_closes_its_connection_and_frees_its_slot(client):
    release = asyncio.Event()

    async def handle(reader, writer, server):
        while await server.read_request(reader) is not None:
            if len(server.requests) == 1:
                await release.wait()
            writer.write(ok(b"{}"))
            await writer.drain()

    async with Server(handle) as server:
        c = client(limit=1)
        stuck = asyncio.create_task(c.request("GET", server.url + "/", b"", None, 5))
        while not server.requests:
            await asyncio.sleep(0.005)
        waiting = asyncio.create_task(c.request("GET", server.url + "/", b"", None, 5))
        await asyncio.sleep(0.02)
        assert c.waiting == 1
        waiting.cancel()  # a cancelled waiter leaves the queue
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert c.waiting == 0
        stuck.cancel()  # a cancelled request in flight closes its connection
        with pytest.raises(asyncio.CancelledError):
            await stuck
        assert c.open_connections == 0
        answer = await c.request("GET", server.url + "/", b"", None, 5)  # the slot is free again
        release.set()
    assert answer.body == b"{}" and server.accepted == 2


async def test_aclose_closes_every_connection_and_fails_waiters():
    async def handle(reader, writer, server):
        await server.read_request(reader)
        await asyncio.sleep(5)

    async with Server(handle) as server:
        c = WireClient(1)
        first = asyncio.create_task(c.request("GET", server.url + "/", b"", None, 5))
        second = asyncio.create_task(c.request("GET", server.url + "/", b"", None, 5))
        while not server.requests:
            await asyncio.sleep(0.005)
        await c.aclose()
        for task in (first, second):
            with pytest.raises(WireDropped):
                await task
        assert c.open_connections == 0 and c.waiting == 0


def _self_signed(tmp_path) -> tuple[str, str]:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


async def test_https_checks_the_certificate(tmp_path, client):
    cert, key = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    async with Server(answering(ok(b"secure")), tls=context) as server:
        url = server.url.replace("http://127.0.0.1", "https://localhost") + "/"
        with pytest.raises(WireConnectError) as info:  # self-signed: refused by the default context
            await client().request("GET", url, b"", None, 5)
        assert isinstance(info.value.os_error, ssl.SSLError)

        def trusting() -> ssl.SSLContext:
            return ssl.create_default_context(cafile=cert)

        answer = await client(ssl_context_factory=trusting).request("GET", url, b"", None, 5)
    assert answer.body == b"secure"


async def test_idle_connections_older_than_the_ttl_are_dropped(client):
    async with Server(answering(ok(b"{}"))) as server:
        c = client()
        await c.request("GET", server.url + "/", b"", None, 5)
        for idle in c._idle.values():
            for connection in idle:
                connection.last_used -= IDLE_TTL + 1
        await c.request("GET", server.url + "/", b"", None, 5)
    assert server.accepted == 2 and c.open_connections == 1


async def test_at_the_limit_a_connection_to_another_host_makes_room(client):
    async def slow(reader, writer, server):
        while await server.read_request(reader) is not None:
            await asyncio.sleep(0.05)
            writer.write(ok(b"slow"))
            await writer.drain()

    async with Server(answering(ok(b"a"))) as a, Server(slow) as b:
        c = client(limit=1)
        assert (await c.request("GET", a.url + "/", b"", None, 5)).body == b"a"
        assert c.open_connections == 1
        # the idle connection to a is closed for one to b; while b answers slowly, a waits its turn
        # and gets b's slot when b's answer is complete
        first, second = await asyncio.gather(
            c.request("GET", b.url + "/", b"", None, 5), c.request("GET", a.url + "/", b"", None, 5)
        )
        assert (first.body, second.body) == (b"slow", b"a")
        assert c.open_connections == 1 and c.waiting == 0
    assert a.accepted == 2 and b.accepted == 1
