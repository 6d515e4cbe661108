"""Secrets a request carries: API keys, ``${VAR}`` references to environment variables, and a
``user:password@`` in an endpoint's URL.

Values are read from the environment when a generator starts and are never written to the store,
logs or reports: a configuration keeps the ``${VAR}`` form, a URL is stored with its password
replaced by ``***`` (:func:`mask_url`), and every message a generator records passes through its
``redact``.

An endpoint may also echo the request back (a debugging proxy, a hostile server, a model told to
repeat its headers). So every answer is masked where it enters redline, in the transport, before a
backend reads outputs from it (:func:`redact_data`): the stored outputs, the cache, every report
and export, and the detectors, see ``***`` instead of the key, a ``${VAR}`` header's value, the
URL's password or the ``Basic`` credentials built from it. Detectors score the masked text on
purpose: a key the endpoint echoed is the endpoint's behaviour, not the model's. In outputs only
values of at least :data:`OUTPUT_SECRET_MIN` characters are masked: shorter ones are placeholders
(``EMPTY``, ``ollama``, ``test``), and masking them would rewrite ordinary words of an answer; and
only the secrets redline sent: a credential the model writes itself (``ftp://user:pass@host``) is
what a leakage detector looks for, and is kept.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from redline.generators.base import GeneratorUnavailable

__all__ = [
    "ENV_REFERENCE",
    "MASK",
    "OUTPUT_SECRET_MIN",
    "SECRET_MIN",
    "env_references",
    "expand_env",
    "has_masked_userinfo",
    "header_safe",
    "mask_url",
    "redact",
    "redact_data",
    "url_secrets",
]

#: What a secret is replaced by.
MASK = "***"
#: Secrets shorter than this are not masked in messages (a one-letter value would mask every
#: occurrence of that letter).
SECRET_MIN = 4
#: Secrets shorter than this are not masked in model outputs (see the module docstring).
OUTPUT_SECRET_MIN = 8

# scheme://USER:PASSWORD@ or scheme://TOKEN@ in a URL, also inside a longer text. The password
# runs to the last "@" before the path, as urllib and httpx read it.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s]*)@(?![^/?#\s]*@)")

#: A ``${VAR}`` reference to an environment variable.
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def header_safe(value: str) -> bool:
    """True when ``value`` can be sent as an HTTP header value (visible ASCII, spaces, tabs)."""
    return all(ch == "\t" or 32 <= ord(ch) < 127 for ch in value)


def env_references(value: str) -> list[str]:
    """The names of the environment variables ``value`` refers to as ``${VAR}``."""
    return ENV_REFERENCE.findall(value)


def expand_env(value: str, where: str) -> str:
    """Replace each ``${VAR}`` in ``value`` by the environment variable ``VAR`` (without the
    whitespace around it: a secret read from a file often ends in a newline). A missing or empty
    variable, or one holding a character no HTTP header may carry, raises
    :class:`GeneratorUnavailable` naming the variable, never its value."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise GeneratorUnavailable(f"{where} needs the environment variable {name}, which is not set")
        text = os.environ[name].strip()
        if not text:
            raise GeneratorUnavailable(f"{where} needs the environment variable {name}, which is empty")
        if not header_safe(text):
            raise GeneratorUnavailable(
                f"{where}: the environment variable {name} contains a line break or another character "
                "an HTTP header cannot hold"
            )
        return text

    return ENV_REFERENCE.sub(replace, value)


def _split_userinfo(userinfo: str) -> tuple[str, str]:
    """``user:password`` as (``"user:"``, the password); a lone ``TOKEN`` (``https://TOKEN@host``,
    no colon) as (``""``, the token): the part to keep and the secret."""
    user, colon, password = userinfo.partition(":")
    return (user + colon, password) if colon else ("", user)


def _mask_userinfo(match: re.Match[str]) -> str:
    kept, secret = _split_userinfo(match.group("userinfo"))
    return f"{match.group('scheme')}{kept}{MASK}@" if secret else match.group()


def mask_url(text: str) -> str:
    """``text`` (a URL, or a message quoting URLs) with the password of every ``user:password@``
    replaced by ``***`` (``https://user:***@host/v1``), and a userinfo without a password, often a
    token (``https://TOKEN@host``), replaced whole."""
    return _USERINFO.sub(_mask_userinfo, text) if "@" in text else text


def has_masked_userinfo(url: str) -> bool:
    """True when ``url`` holds a userinfo :func:`mask_url` masked (its password is lost)."""
    match = _USERINFO.search(url)
    return match is not None and _split_userinfo(match.group("userinfo"))[1] == MASK


def url_secrets(url: str | None) -> list[str]:
    """The secrets in ``url``'s userinfo as a server may echo them: the password (as written and
    percent-decoded; a lone token when there is no password), and the ``Basic`` credentials an
    HTTP client builds from ``user:password`` (base64)."""
    if not url or "@" not in url:
        return []
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    if password is None:
        if user:
            found += [user, unquote(user)]
        return found
    found += [password, unquote(password)]
    for pair in (f"{user or ''}:{password}", f"{unquote(user or '')}:{unquote(password)}"):
        found.append(base64.b64encode(pair.encode("utf-8", "surrogatepass")).decode("ascii"))
    return found


def _written_forms(secret: str) -> set[str]:
    """``secret`` as an answer may hold it: as it is, and escaped inside a JSON string (a quoted
    body of an answer shows it so), with ``/`` escaped or not."""
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    return {secret, escaped, escaped.replace("/", "\\/"), json.dumps(secret)[1:-1]}


def redact(text: str, secrets: Iterable[str], minimum: int = SECRET_MIN, *, urls: bool = True) -> str:
    """``text`` with every secret of at least ``minimum`` characters replaced by ``***``, also as
    a JSON string escapes it (the longest first, so that a secret holding another is masked whole)
    and, with ``urls`` (for a message), the password of any URL in it masked (:func:`mask_url`). A
    model output is redacted without ``urls``: a credential the model itself wrote is evidence for
    the detectors."""
    forms = {form for s in secrets if len(s) >= minimum for form in _written_forms(s)}
    for secret in sorted(forms, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return mask_url(text) if urls else text


def redact_data(value: Any, secrets: Iterable[str], minimum: int = OUTPUT_SECRET_MIN, *, urls: bool = False) -> Any:
    """``value`` (parsed JSON: dicts, lists, strings, numbers) with :func:`redact` applied to
    every string in it, keys included; other values are returned as they are. With no secrets and
    ``urls``, only URL passwords are masked (a run's stored configuration)."""
    found = [s for s in secrets if len(s) >= minimum]

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return redact(node, found, minimum, urls=urls)
        if isinstance(node, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(value)
