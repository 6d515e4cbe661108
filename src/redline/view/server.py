"""Serving the view: :func:`bind` takes the port before anything is printed (so a port in use is
one line, not a traceback from the server), :func:`allowed_hosts` says which ``Host`` names the
app answers to, and :func:`serve` runs uvicorn on the bound socket until Ctrl-C."""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any

from redline.view.errors import ViewError

__all__ = ["WILDCARD_HOSTS", "allowed_hosts", "bind", "is_loopback", "serve", "url_of"]

WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
"""``--host`` values that listen on every interface."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a ``--host`` value) can only be reached from this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str) -> tuple[str, ...]:
    """The ``Host`` names a server listening on ``host`` answers to: the loopback names, the
    host itself, and for a wildcard (``0.0.0.0``, ``::``) this machine's names and addresses."""
    names = ["127.0.0.1", "localhost", "::1", host.strip("[]").lower()]
    if host in WILDCARD_HOSTS:
        machine = socket.gethostname()
        names += [machine, socket.getfqdn(machine)]
        try:
            names += [str(info[4][0]) for info in socket.getaddrinfo(machine, None)]
        except OSError:
            pass  # a machine whose own name does not resolve: its names above still count
    return tuple(dict.fromkeys(n.lower() for n in names if n and n not in WILDCARD_HOSTS))


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0 picks a free port); raises :class:`ViewError`
    with one line when the port is in use, not allowed or the host cannot be used."""
    where = f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ViewError(f"cannot listen on {where}: host {host!r} is unknown ({exc})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ViewError(
                f"port {port} on {host} is in use (another 'redline view'?): choose another with --port"
            ) from None
        if exc.errno == errno.EACCES:
            raise ViewError(f"cannot listen on {where}: permission denied (use a port above 1023)") from None
        raise ViewError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    """The address people open for a server on ``sock``: ``http://HOST:PORT/`` (127.0.0.1 for
    a wildcard host)."""
    port = sock.getsockname()[1]
    name = "127.0.0.1" if host in WILDCARD_HOSTS else host
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    return f"http://{name}:{port}/"


def serve(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` on the bound ``sock`` until Ctrl-C or SIGTERM (uvicorn, quiet: no access
    log); returns once the server has stopped."""
    import uvicorn  # the server loads when it starts, not at CLI start

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn stops on Ctrl-C, then raises it again for the caller: stopping is the normal end
