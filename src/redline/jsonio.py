"""JSON text of attempts, cached outputs and request bodies: :func:`dumps` and :func:`loads`,
with orjson when it is installed and :mod:`json` for what orjson does not take.

* :func:`dumps` gives compact JSON text. Keys that are not strings (``1``, ``None``) become strings
  as with :mod:`json`; an integer beyond 64 bits, or an object neither knows, goes to
  :func:`json.dumps` (which raises ``TypeError`` for the latter). A float that is not a number
  (``nan``, ``inf``) is written as ``null`` by orjson: such a score reads back as "no score".
* :func:`loads` reads JSON text or bytes; text orjson refuses (``NaN`` written by an older redline
  with :mod:`json`, say) is read by :func:`json.loads`, whose ``ValueError`` is what a caller
  sees for text that is not JSON at all, or that nests too deep to read (orjson refuses deep
  nesting from 3.9.15, the version this package asks for; :mod:`json` then runs out of recursion).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "dumps_bytes", "loads", "orjson_loads"]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; a bare install still works
    _orjson = None


def dumps(value: Any) -> str:
    """``value`` as compact JSON text."""
    return dumps_bytes(value).decode()


def dumps_bytes(value: Any) -> bytes:
    """``value`` as compact JSON, UTF-8 bytes (a request body)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_NON_STR_KEYS)
        except TypeError:
            pass
    return json.dumps(value, separators=(",", ":")).encode()


def loads(text: str | bytes) -> Any:
    """The value of the JSON ``text``; ``ValueError`` when it is not JSON or nests too deep."""
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except ValueError:
            pass
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def orjson_loads(data: bytes) -> Any:
    """orjson's value of the JSON ``data``, without :func:`loads`' second reading: ``ValueError``
    when orjson refuses it (or is not installed), for a caller that then reads it its own way.
    Unlike :mod:`json`, orjson reads an integer beyond 64 bits as a float, and refuses ``NaN``,
    an infinite number and a lone surrogate."""
    if _orjson is None:
        raise ValueError("orjson is not installed")
    return _orjson.loads(data)
