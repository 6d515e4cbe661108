"""What keeps ``redline view`` to its own pages: the response headers every answer carries, and
the checks a request must pass.

* Every response: a strict Content-Security-Policy (our own script and stylesheets only, nothing
  inline, nothing from elsewhere), ``nosniff``, no referrer, not cacheable, not embeddable.
* Every request: its ``Host`` must name this server (one of the allowed names, with the server's
  port). A page on another site that makes its own name resolve to 127.0.0.1 (DNS rebinding)
  sends its own name as ``Host`` and gets nothing.
* A request that writes (a label): when the browser says where it comes from (``Origin``,
  ``Sec-Fetch-Site``), that must be this server (:func:`origin_allowed` says how ``Origin: null``
  is read); and the form must carry the app's token
  (:class:`FormToken`), random per app instance, which only our own pages hold.

These are plain functions of header values, so they are tested without a server.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "FormToken",
    "fetch_site_allowed",
    "host_allowed",
    "origin_allowed",
    "split_host",
]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every response."""

SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""The headers every response carries (CSP, no sniffing, no referrer, our pages only)."""

#: ``Sec-Fetch-Site`` values of a request made by our own pages (or typed by the user).
_OWN_FETCH_SITES = frozenset({"same-origin", "none"})


def split_host(value: str | None, default_port: int = 80) -> tuple[str, int] | None:
    """``"name:port"`` / ``"[v6]:port"`` / ``"name"`` → ``(name, port)`` with the name in lower
    case and without brackets (``default_port`` when none is given); ``None`` when it cannot be
    read."""
    if not value:
        return None
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else ""
    else:
        name, sep, port_text = value.rpartition(":")
        if not sep:
            name, port_text = value, ""
        elif ":" in name:  # a bare IPv6 address is no valid Host
            return None
    if not name:
        return None
    if not port_text:
        return name, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return name, int(port_text)


def host_allowed(host: str | None, names: Iterable[str], port: int | None) -> bool:
    """Whether a request's ``Host`` header names this server: one of ``names`` (any case) with
    the server's ``port`` (80 when the header gives none). ``port`` ``None`` (unknown) allows no
    request."""
    found = split_host(host)
    if found is None or port is None:
        return False
    name, given = found
    return given == port and name in {n.strip("[]").lower() for n in names}


def origin_allowed(origin: str | None, host: str | None, fetch_site: str | None = None) -> bool:
    """Whether a request's ``Origin`` header (when present) is this server as the request's
    ``Host`` names it: ``http://`` and the same host and port. A missing header is allowed (not
    every browser sends one on a same-origin form). ``null`` is allowed only next to
    ``Sec-Fetch-Site: same-origin``: a browser sends ``Origin: null`` for a form posted from a page
    whose referrer policy is ``no-referrer`` (ours), and ``Sec-Fetch-Site`` then says where the
    form was; a sandboxed frame of another site sends ``null`` too, with ``cross-site``."""
    if origin is None:
        return True
    if origin.strip() == "null":
        return (fetch_site or "").strip().lower() == "same-origin"
    parts = urlsplit(origin.strip())
    if parts.scheme.lower() != "http" or not parts.netloc or parts.path not in ("", "/"):
        return False
    return split_host(parts.netloc) is not None and split_host(parts.netloc) == split_host(host)


def fetch_site_allowed(value: str | None) -> bool:
    """Whether ``Sec-Fetch-Site`` (when present) says the request comes from our own pages."""
    return value is None or value.strip().lower() in _OWN_FETCH_SITES


class FormToken:
    """The token our forms carry (random per app instance). A page of another site cannot read
    it (no CORS, and the Host check stops rebinding), so a form it posts cannot hold it."""

    def __init__(self, value: str | None = None) -> None:
        self.value = value or secrets.token_urlsafe(32)

    def check(self, given: str | None) -> bool:
        """Whether ``given`` is the token (compared in constant time)."""
        return given is not None and secrets.compare_digest(given.encode("utf-8", "replace"), self.value.encode())
