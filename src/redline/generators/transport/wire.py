"""A lean HTTP/1.1 client on :class:`asyncio.Protocol`: :class:`WireClient`.

Remote generators send one small JSON request and read one small JSON answer, tens of thousands of
times a scan. A general client (aiohttp) spends about 100 µs of CPU on each against a local server;
this one does only what those requests need, so a scan is not bound by its client:

* a keep-alive pool per (scheme, host, port), idle connections reused last-in first-out and dropped
  after :data:`IDLE_TTL` seconds; ``limit`` caps the connections a client holds open, and requests
  beyond it wait their turn (first come, first served);
* one write per request (its bytes built from a cached head), answers parsed as they arrive: a
  ``Content-Length`` body, ``Transfer-Encoding: chunked`` (trailers skipped), or a body read to the
  end of the connection; ``gzip`` and ``deflate`` bodies decoded; headers capped at
  :data:`MAX_HEAD` bytes and bodies at :data:`MAX_BODY` (a hostile server cannot exhaust memory);
* https with the system's certificates (:func:`ssl.create_default_context`);
* a per-request timeout covering the wait for a connection, the connect and the answer;
* a request sent on a kept-alive connection that the server closed before answering a single byte
  (servers close idle connections) is sent once more on a fresh connection.

Errors: :class:`WireConnectError` (nobody answers at the address, DNS or TLS failure),
:class:`WireDropped` (the connection closed or broke before the whole answer arrived),
:class:`WireProtocolError` (the answer is not HTTP, or too big), :class:`WireInvalidURL`, and
:class:`TimeoutError` (:class:`WireConnectTimeout`, a subclass, when no connection was had in time). A request whose task is cancelled closes its connection. Proxies are not
supported (:class:`~redline.generators.transport.http.HTTPGenerator` sends through aiohttp when
the environment names one).
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping

from redline import __version__
from redline.errors import RedlineError

__all__ = [
    "IDLE_TTL",
    "MAX_BODY",
    "MAX_HEAD",
    "WireClient",
    "WireConnectError",
    "WireConnectTimeout",
    "WireDropped",
    "WireError",
    "WireHeaders",
    "WireInvalidURL",
    "WireProtocolError",
    "WireResponse",
]

#: Seconds an idle kept-alive connection is kept for reuse.
IDLE_TTL = 30.0
#: Largest status line and headers of an answer, in bytes.
MAX_HEAD = 64 * 1024
#: Largest body of an answer, in bytes (after decoding gzip or deflate too).
MAX_BODY = 64 * 1024 * 1024
USER_AGENT = f"redline/{__version__}"

_HEAD_END = b"\r\n\r\n"
_CRLF = b"\r\n"
_HEX = frozenset(b"0123456789abcdefABCDEF")
_NO_BODY_STATUSES = frozenset((204, 304))

# parser states
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _TRAILER, _EOF, _DONE = range(7)


class WireError(RedlineError):
    """Base of the errors of :class:`WireClient`."""


class WireConnectError(WireError):
    """No connection could be opened (refused, unknown host, TLS handshake or certificate refused);
    the cause is kept in :attr:`os_error`."""

    def __init__(self, message: str, os_error: OSError | None = None) -> None:
        super().__init__(message)
        self.os_error = os_error


class WireConnectTimeout(WireError, TimeoutError):
    """No connection (or no free slot of the pool) within the request's timeout."""


class WireDropped(WireError):
    """The connection closed or broke before the whole answer arrived."""


class WireProtocolError(WireError):
    """The answer is not HTTP/1.x, is garbled, or is larger than the caps."""


class WireInvalidURL(WireError, ValueError):
    """A URL the client cannot send to (no host, a bad port, a control character, not http(s))."""


class _IdleClosed(WireDropped):
    """A connection closed before any byte of the answer (retried once when it was reused)."""


class WireHeaders(Mapping[str, str]):
    """The headers of an answer, read-only: lowercase names; lookups ignore case. A header sent
    several times holds its values joined by ``", "``."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, str] | None = None) -> None:
        self._fields = {} if fields is None else fields  # lowercase names

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return self._fields.get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return self._fields[key.lower()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        return f"WireHeaders({self._fields!r})"


class WireResponse:
    """One answer: :attr:`status`, :attr:`body` (decoded from gzip or deflate), :attr:`headers`
    and :attr:`charset` (from ``Content-Type``, ``None`` when it names none)."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, body: bytes, headers: WireHeaders) -> None:
        self.status = status
        self.body = body
        self.headers = headers

    @property
    def charset(self) -> str | None:
        content_type = self.headers._fields.get("content-type")
        if not content_type or "charset" not in content_type.lower():
            return None
        for param in content_type.split(";")[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "charset":
                return value.strip().strip('"').strip() or None
        return None

    def __repr__(self) -> str:
        return f"WireResponse(status={self.status}, {len(self.body)} bytes)"


class _Target:
    """Where a URL goes, worked out once per URL."""

    __slots__ = ("host", "key", "path", "port", "tls")

    def __init__(self, url: str) -> None:
        if any(ch <= " " or ch == "\x7f" for ch in url):
            raise WireInvalidURL(f"{url!r}: holds a space or a control character")
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise WireInvalidURL(f"{url}: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise WireInvalidURL(f"{url}: not an http:// or https:// URL")
        if "@" in parts.netloc:
            raise WireInvalidURL("a URL with credentials (user:password@): send them in a header")
        host = parts.hostname or ""
        if not host:
            raise WireInvalidURL(f"{url}: no host")
        if not host.isascii():
            try:
                host = host.encode("idna").decode("ascii")
            except UnicodeError:
                raise WireInvalidURL(f"{url}: a host name that cannot be encoded") from None
        if port == 0:
            raise WireInvalidURL(f"{url}: port 0")
        self.tls = scheme == "https"
        default = 443 if self.tls else 80
        self.port = default if port is None else port
        self.host = host
        self.key = (scheme, host, self.port)
        shown = f"[{host}]" if ":" in host else host
        self.path = (
            urllib.parse.quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
            + (f"?{urllib.parse.quote(parts.query, safe='/?%:@!$&()*+,;=-._~')}" if parts.query else ""),
            shown if self.port == default else f"{shown}:{self.port}",
        )


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection of a :class:`WireClient`; parses one answer at a time."""

    def __init__(self, client: WireClient, key: tuple[str, str, int]) -> None:
        self.client = client
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.counted = False  # holds a slot of the client (False while create_connection runs)
        self.idle = False
        self.last_used = 0.0
        self.future: asyncio.Future[tuple[int, WireHeaders, bytes, bool]] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.buffer = bytearray()
        self.state = _DONE
        self.head_only = False
        self.received = False
        self.status = 0
        self.headers = WireHeaders()
        self.keep_alive = False
        self.remaining = 0
        self.parts: list[bytes] = []
        self.size = 0

    # -- asyncio.Protocol --------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        future = self.future
        if future is None or future.done():  # bytes nobody asked for: the connection is unusable
            self.close()
            return
        self.received = True
        try:
            if not self.buffer and self.state == _HEAD:  # the usual case: a whole small answer at once
                done = self._parse_whole(data)
            else:
                self.buffer += data
                done = self._parse()
        except WireProtocolError as exc:
            self._fail(exc)
            return
        if done:
            self._finish()

    def connection_lost(self, exc: Exception | None) -> None:
        future = self.future
        if future is not None and not future.done():
            if self.state == _EOF:  # a body read to the end of the connection: complete now
                self.keep_alive = False
                self._finish()
            elif not self.received:
                future.set_exception(_IdleClosed())
            else:
                why = f"{type(exc).__name__}: {exc}" if exc else "the server closed it"
                future.set_exception(WireDropped(f"connection lost before the whole answer arrived: {why}"))
        self._closed()

    # -- one exchange ------------------------------------------------------------------------------
    def send(
        self, payload: bytes, head_only: bool, deadline: float | None
    ) -> asyncio.Future[tuple[int, WireHeaders, bytes, bool]]:
        """Write ``payload`` (a whole request); the future answers (status, headers, body, reusable)."""
        loop = self.client.loop
        future: asyncio.Future[tuple[int, WireHeaders, bytes, bool]] = loop.create_future()
        self.future = future
        if self.closed or self.transport is None or self.transport.is_closing():
            future.set_exception(_IdleClosed())
            return future
        self.state = _HEAD
        self.head_only = head_only
        self.received = False
        if self.buffer:
            self.buffer.clear()
        self.transport.write(payload)
        if deadline is not None:
            self.timer = loop.call_at(deadline, self._timed_out)
        return future

    def _timed_out(self) -> None:
        self.timer = None
        future = self.future
        if future is not None and not future.done():
            future.set_exception(TimeoutError("no answer in time"))
        self.close()

    def _finish(self) -> None:
        self.state = _DONE
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        parts = self.parts
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        self.parts = []
        reusable = self.keep_alive and not self.buffer and not self.closed
        future = self.future
        self.future = None
        if future is not None and not future.done():
            future.set_result((self.status, self.headers, body, reusable))

    def _fail(self, exc: BaseException) -> None:
        future = self.future
        if future is not None and not future.done():
            future.set_exception(exc)
        self.close()

    def close(self) -> None:
        """Close the connection now (an answer in progress is lost) and give back its slot."""
        if self._shut() and self.counted:
            self.client._free_slot()

    def _shut(self) -> bool:
        """Close without giving back the slot; False when it was closed already."""
        if self.closed:
            return False
        self.closed = True
        future = self.future
        if future is not None and not future.done():
            future.set_exception(WireDropped("the connection was closed before the answer arrived"))
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.transport is not None:
            self.transport.abort()
        self.client._forget(self)
        return True

    def _closed(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.closed:
            self.closed = True
            self.client._forget(self)
            if self.counted:  # else create_connection was interrupted: its caller gives the slot back
                self.client._free_slot()

    # -- parsing -----------------------------------------------------------------------------------
    def _parse_whole(self, data: bytes) -> bool:
        """:meth:`_parse` for the first bytes of an answer, without copying them when they hold
        its whole head and body."""
        end = data.find(_HEAD_END)
        if end < 0 or end > MAX_HEAD or self._head(data[:end].decode("latin-1")):
            self.buffer += data if end < 0 or end > MAX_HEAD else data[end + 4 :]
            return self._parse()
        if self.state == _LENGTH and len(data) - end - 4 == self.remaining:
            self.parts.append(data[end + 4 :])
            return True
        self.buffer += data[end + 4 :]
        return self._parse()

    def _parse(self) -> bool:
        """Consume what :attr:`buffer` holds; True when the answer is complete."""
        buffer = self.buffer
        while True:
            state = self.state
            if state == _HEAD:
                end = buffer.find(_HEAD_END)
                if end < 0:
                    if len(buffer) > MAX_HEAD:
                        raise WireProtocolError(f"the answer's headers exceed {MAX_HEAD} bytes")
                    if buffer[:5] != b"HTTP/"[: len(buffer)]:
                        raise WireProtocolError(f"not an HTTP answer: {bytes(buffer[:40])!r}")
                    return False
                if end > MAX_HEAD:
                    raise WireProtocolError(f"the answer's headers exceed {MAX_HEAD} bytes")
                head = buffer[:end].decode("latin-1")
                del buffer[: end + 4]
                if self._head(head):
                    return True
            elif state == _LENGTH:
                remaining = self.remaining
                if len(buffer) < remaining:
                    return False
                self.parts.append(bytes(buffer[:remaining]) if len(buffer) > remaining else bytes(buffer))
                del buffer[:remaining]
                return True
            elif state == _CHUNK_SIZE:
                end = buffer.find(_CRLF)
                if end < 0:
                    if len(buffer) > 1024:
                        raise WireProtocolError("a chunk size line longer than 1024 bytes")
                    return False
                digits = bytes(buffer[:end]).split(b";", 1)[0].strip()
                del buffer[: end + 2]
                if not digits or not _HEX.issuperset(digits):
                    raise WireProtocolError(f"a garbled chunk size: {digits[:20]!r}")
                size = int(digits, 16)
                if size == 0:
                    self.state = _TRAILER
                    continue
                self.size += size
                if self.size > MAX_BODY:
                    raise WireProtocolError(f"an answer larger than {MAX_BODY} bytes")
                self.remaining = size
                self.state = _CHUNK_DATA
            elif state == _CHUNK_DATA:
                remaining = self.remaining
                if len(buffer) < remaining + 2:
                    return False
                if buffer[remaining : remaining + 2] != _CRLF:
                    raise WireProtocolError("a chunk not followed by CRLF")
                self.parts.append(bytes(buffer[:remaining]))
                del buffer[: remaining + 2]
                self.state = _CHUNK_SIZE
            elif state == _TRAILER:
                end = buffer.find(_CRLF)
                if end < 0:
                    if len(buffer) > MAX_HEAD:
                        raise WireProtocolError(f"the answer's trailers exceed {MAX_HEAD} bytes")
                    return False
                del buffer[: end + 2]
                if end == 0:
                    return True
                self.size += end
                if self.size > MAX_BODY:
                    raise WireProtocolError(f"an answer larger than {MAX_BODY} bytes")
            elif state == _EOF:
                if buffer:
                    self.size += len(buffer)
                    if self.size > MAX_BODY:
                        raise WireProtocolError(f"an answer larger than {MAX_BODY} bytes")
                    self.parts.append(bytes(buffer))
                    buffer.clear()
                return False
            else:  # _DONE: bytes after a complete answer; the caller sees them and drops the connection
                return True

    def _head(self, head: str) -> bool:
        """Read a status line and headers; set the body's state. True when the answer is complete."""
        lines = head.split("\r\n")
        first = lines[0]
        version, _, rest = first.partition(" ")
        code = rest[:3]
        if (
            version not in ("HTTP/1.1", "HTTP/1.0")
            or not (code.isascii() and code.isdigit())
            or (len(rest) > 3 and rest[3] != " ")
        ):
            raise WireProtocolError(f"not an HTTP/1.x status line: {first[:60]!r}")
        status = int(code)
        headers: dict[str, str] = {}
        name = ""
        for line in lines[1:]:
            field, sep, value = line.partition(":")
            if not sep or not field or field[-1] in " \t" or field[0] in " \t":
                if name and line and line[0] in " \t":  # an obsolete folded continuation line
                    headers[name] = f"{headers[name]} {line.strip()}"
                    continue
                raise WireProtocolError(f"a garbled header line: {line[:60]!r}")
            name = field.lower()
            if name in headers:
                headers[name] = f"{headers[name]}, {value.strip()}"
            else:
                headers[name] = value.strip()
        if status < 200:
            if status == 101:
                raise WireProtocolError("the server switched protocols (HTTP 101)")
            self.state = _HEAD  # 100 Continue, 103 Early Hints: the answer follows
            return False
        self.status = status
        self.headers = WireHeaders(headers)
        self.parts = []
        self.size = 0
        connection = headers.get("connection")
        if version == "HTTP/1.1":
            self.keep_alive = connection is None or "close" not in connection.lower()
        else:
            self.keep_alive = connection is not None and "keep-alive" in connection.lower()
        if self.head_only or status in _NO_BODY_STATUSES:
            self.state = _DONE
            return True
        coding = headers.get("transfer-encoding")
        if coding is not None:
            codings = [c.strip().lower() for c in coding.split(",")]
            if codings[-1] != "chunked":  # the body ends with the connection
                self.state = _EOF
                self.keep_alive = False
                return False
            if len(codings) > 1 and any(c not in ("chunked", "identity") for c in codings[:-1]):
                raise WireProtocolError(f"an unsupported transfer encoding: {coding[:60]!r}")
            self.state = _CHUNK_SIZE
            return False
        length = headers.get("content-length")
        if length is None:
            self.state = _EOF
            self.keep_alive = False
            return False
        values = {v.strip() for v in length.split(",")}
        value = values.pop()
        if values or not (value.isascii() and value.isdigit()):
            raise WireProtocolError(f"a garbled Content-Length: {length[:40]!r}")
        size = int(value)
        if size > MAX_BODY:
            raise WireProtocolError(f"an answer of {size} bytes, more than the {MAX_BODY} accepted")
        if size == 0:
            self.parts.append(b"")
            self.state = _DONE
            return True
        self.remaining = size
        self.state = _LENGTH
        return False


class WireClient:
    """An HTTP/1.1 client with a keep-alive pool: see the module docstring.

    ``limit`` caps the connections open at once (``None`` or 0: no cap); ``headers`` are sent with
    every request (a request's own headers replace those of the same name);
    ``ssl_context_factory`` makes the TLS context, once, when the first https connection opens.
    Use it from one event loop.
    """

    def __init__(
        self,
        limit: int | None = None,
        ssl_context_factory: Callable[[], ssl.SSLContext] = ssl.create_default_context,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.limit = limit or 0
        self._ssl_context_factory = ssl_context_factory
        self._ssl: ssl.SSLContext | None = None
        self._defaults = dict(headers or {})
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._connections: set[_Connection] = set()
        self._slots = 0  # connections open or opening, and slots handed to a waiter
        self._waiters: deque[tuple[tuple[str, str, int], asyncio.Future[_Connection | None]]] = deque()
        self._targets: dict[str, _Target] = {}
        self._heads: dict[tuple, tuple[_Target, bytes, bool]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Connections opened so far.
        self.connects = 0

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    @property
    def open_connections(self) -> int:
        """Connections open now (in use or idle)."""
        return len(self._connections)

    @property
    def waiting(self) -> int:
        """Requests waiting for a connection."""
        return len(self._waiters)

    # -- requests ----------------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        url: str,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> WireResponse:
        """Send one request and return its answer (raises the errors of the module docstring).
        ``timeout`` (seconds; ``None`` or 0: none) covers waiting for a connection, connecting,
        sending and the whole answer."""
        cache_key = (method, url, tuple(headers.items())) if headers else (method, url)
        prepared = self._heads.get(cache_key)
        if prepared is None:
            prepared = self._prepare(method, url, headers)
            if len(self._heads) >= 256:
                self._heads.clear()
            self._heads[cache_key] = prepared
        target, head, head_only = prepared
        if body or method in ("POST", "PUT", "PATCH"):
            payload = b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)
        else:
            payload = head + _CRLF
        loop = self._loop or self.loop
        deadline = loop.time() + timeout if timeout else None
        fresh = False
        while True:
            connection = None if fresh else self._take_idle(target.key, loop.time())
            reused = connection is not None
            if connection is None:
                if deadline is None:
                    connection, reused = await self._get(target, fresh)
                else:
                    try:
                        async with asyncio.timeout_at(deadline):
                            connection, reused = await self._get(target, fresh)
                    except TimeoutError:
                        raise WireConnectTimeout(
                            f"no connection to {target.host}:{target.port} within {timeout:g} s"
                        ) from None
            try:
                status, answer_headers, answer, reusable = await connection.send(payload, head_only, deadline)
            except _IdleClosed:
                connection.close()
                if reused and not fresh:  # the server closed a kept-alive connection: normal
                    fresh = True
                    continue
                raise WireDropped("the server closed the connection without answering") from None
            except BaseException:  # timed out, cancelled, dropped, garbled: the connection is done for
                connection.close()
                raise
            if reusable:
                self._release(connection)
            else:
                connection.close()
            encoding = answer_headers._fields.get("content-encoding")
            if encoding is not None and answer:
                answer = _decode(answer, encoding)
            return WireResponse(status, answer, answer_headers)

    def _prepare(self, method: str, url: str, headers: Mapping[str, str] | None) -> tuple[_Target, bytes, bool]:
        target = self._targets.get(url)
        if target is None:
            target = _Target(url)
            if len(self._targets) >= 256:
                self._targets.clear()
            self._targets[url] = target
        if not method.isascii() or not method.isalpha():
            raise ValueError(f"not an HTTP method: {method[:20]!r}")
        path, host = target.path
        merged = {k.lower(): (k, v) for k, v in self._defaults.items()}
        for k, v in (headers or {}).items():
            merged[k.lower()] = (k, v)
        for name in ("host", "content-length", "transfer-encoding"):
            merged.pop(name, None)
        merged.setdefault("accept-encoding", ("Accept-Encoding", "gzip, deflate"))
        merged.setdefault("user-agent", ("User-Agent", USER_AGENT))
        lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
        for name, value in merged.values():
            if not _token(name):
                raise ValueError(f"not a valid header name: {name[:40]!r}")
            if any(ch in "\r\n\0" for ch in value):
                raise ValueError(f"the value of header {name} holds a line break")
            lines.append(f"{name}: {value}")
        head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
        return target, head, method == "HEAD"

    # -- the pool ----------------------------------------------------------------------------------
    def _take_idle(self, key: tuple[str, str, int], now: float) -> _Connection | None:
        idle = self._idle.get(key)
        if not idle:
            return None
        while idle and now - idle[0].last_used > IDLE_TTL:  # the oldest first
            idle[0].close()
        if not idle:
            return None
        connection = idle.pop()
        connection.idle = False
        return connection

    async def _get(self, target: _Target, fresh: bool) -> tuple[_Connection, bool]:
        """A connection to ``target``: handed over by a finished request (reused), or a new one."""
        if self.limit and self._slots >= self.limit:
            victim = next((conns[0] for conns in self._idle.values() if conns), None)
            if victim is not None:  # an idle connection to another host makes room
                victim._shut()
            else:
                future: asyncio.Future[_Connection | None] = self.loop.create_future()
                entry = (target.key, future)
                self._waiters.append(entry)
                try:
                    handed = await future
                except BaseException:
                    if future.done() and not future.cancelled():  # handed over, but too late
                        late = future.result()
                        if late is None:
                            self._free_slot()
                        else:
                            self._release(late)
                    else:
                        try:
                            self._waiters.remove(entry)
                        except ValueError:
                            pass
                    raise
                if handed is not None:
                    if not fresh:
                        return handed, True
                    handed._shut()  # a retry wants a new connection: this slot opens it
        else:
            self._slots += 1
        try:
            return await self._open(target), False
        except BaseException:
            self._free_slot()
            raise

    async def _open(self, target: _Target) -> _Connection:
        context = None
        if target.tls:
            if self._ssl is None:
                self._ssl = self._ssl_context_factory()
            context = self._ssl
        key = target.key
        try:
            _, connection = await self.loop.create_connection(
                lambda: _Connection(self, key),
                target.host,
                target.port,
                ssl=context,
                server_hostname=target.host if context is not None else None,
            )
        except OSError as exc:  # refused, DNS, TLS (ssl.SSLError is an OSError)
            raise WireConnectError(f"cannot connect to {target.host}:{target.port}: {exc}", exc) from None
        self.connects += 1
        connection.counted = True
        self._connections.add(connection)
        return connection

    def _release(self, connection: _Connection) -> None:
        """A connection whose answer is complete and that may carry another request."""
        if connection.closed:
            return
        connection.last_used = self.loop.time()
        waiters = self._waiters
        while waiters:
            key, future = waiters.popleft()
            if future.done():
                continue
            if key == connection.key:
                future.set_result(connection)
            else:  # a request for another host waits: this connection's slot is its
                connection._shut()
                future.set_result(None)
            return
        connection.idle = True
        idle = self._idle.get(connection.key)
        if idle is None:
            self._idle[connection.key] = [connection]
        else:
            idle.append(connection)

    def _free_slot(self) -> None:
        """A connection closed (or never opened): its slot goes to the first waiter, if any."""
        waiters = self._waiters
        while waiters:
            _, future = waiters.popleft()
            if not future.done():
                future.set_result(None)
                return
        self._slots -= 1

    def _forget(self, connection: _Connection) -> None:
        self._connections.discard(connection)
        if connection.idle:
            connection.idle = False
            idle = self._idle.get(connection.key)
            if idle is not None:
                try:
                    idle.remove(connection)
                except ValueError:
                    pass

    async def aclose(self) -> None:
        """Close every connection; requests still waiting for one fail with :class:`WireDropped`."""
        while self._waiters:
            _, future = self._waiters.popleft()
            if not future.done():
                future.set_exception(WireDropped("the client was closed"))
        for connection in list(self._connections):
            connection.close()
        await asyncio.sleep(0)  # let the transports finish closing


def _token(name: str) -> bool:
    return bool(name) and name.isascii() and all(ch.isalnum() or ch in "!#$%&'*+-.^_`|~" for ch in name)


def _decode(body: bytes, encoding: str) -> bytes:
    """``body`` decoded from its ``Content-Encoding`` (gzip, deflate, identity, in the order sent)."""
    for coding in reversed([c.strip().lower() for c in encoding.split(",")]):
        if coding in ("", "identity"):
            continue
        if coding in ("gzip", "x-gzip"):
            decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":  # usually zlib-wrapped; some servers send it raw
            wrapped = len(body) >= 2 and body[0] & 0x0F == 8 and ((body[0] << 8) | body[1]) % 31 == 0
            decoder = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        else:
            raise WireProtocolError(f"an answer in an unsupported content encoding: {coding[:40]!r}")
        try:
            body = decoder.decompress(body, MAX_BODY + 1)
        except zlib.error as exc:
            raise WireProtocolError(f"a {coding} body that cannot be decoded ({exc})") from None
        if len(body) > MAX_BODY:
            raise WireProtocolError(f"an answer larger than {MAX_BODY} bytes once decoded")
        if not decoder.eof:
            raise WireProtocolError(f"a truncated {coding} body")
    return body
