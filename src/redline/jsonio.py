"""JSON on a scan's hot path: :func:`dumps` and :func:`loads`, with orjson when it is installed.

Every attempt is written to the store as JSON and read back for phase 4 and reports; every
request body and answer of a remote model is JSON. orjson does the same work several times
faster than the standard library (``bench/bench_throughput.py``), so these two functions use it and
fall back to :mod:`json` for what it does not take, with the same result for readers:

* :func:`dumps` gives compact JSON text. Keys that are not strings (``1``, ``None``) become strings
  as with :mod:`json`; an integer beyond 64 bits, or an object neither knows, goes to
  :func:`json.dumps` (which raises ``TypeError`` for the latter, as before). A float that is not a
  number (``nan``, ``inf``) is written as ``null`` by orjson: such a score reads back as "no score".
* :func:`loads` reads JSON text or bytes; text orjson refuses (``NaN`` written by an older redline
  with :mod:`json`, say) is read by :func:`json.loads`, whose ``ValueError`` is what a caller
  sees for text that is not JSON at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["dumps", "dumps_bytes", "dumps_objects", "loads", "orjson_loads"]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; a bare install still works
    _orjson = None


_OBJECTS_OPTIONS = (_orjson.OPT_NON_STR_KEYS | _orjson.OPT_PASSTHROUGH_DATACLASS) if _orjson is not None else 0


def dumps(value: Any) -> str:
    """``value`` as compact JSON text."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            pass
    return json.dumps(value, separators=(",", ":"))


def dumps_objects(value: Any, default: Callable[[Any], Any]) -> str:
    """``value`` as compact JSON text, as :func:`dumps` writes it, where ``default`` turns each
    object orjson does not write itself (a dataclass instance included) into one it writes.
    ``TypeError`` where :func:`dumps` would go to :mod:`json` (an integer beyond 64 bits, or
    orjson not installed) or ``default`` raises it: the caller then writes the value another way."""
    if _orjson is None:
        raise TypeError("orjson is not installed")
    return _orjson.dumps(value, default=default, option=_OBJECTS_OPTIONS).decode()


def dumps_bytes(value: Any) -> bytes:
    """``value`` as compact JSON, UTF-8 bytes (a request body)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_NON_STR_KEYS)
        except TypeError:
            pass
    return json.dumps(value, separators=(",", ":")).encode()


def loads(text: str | bytes) -> Any:
    """The value of the JSON ``text``; ``ValueError`` when it is not JSON."""
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except ValueError:
            pass
    return json.loads(text)


def orjson_loads(data: bytes) -> Any:
    """orjson's value of the JSON ``data``, without :func:`loads`' second reading: ``ValueError``
    when orjson refuses it (or is not installed), for a caller that then reads it its own way.
    Unlike :mod:`json`, orjson reads an integer beyond 64 bits as a float, and refuses ``NaN``,
    an infinite number and a lone surrogate."""
    if _orjson is None:
        raise ValueError("orjson is not installed")
    return _orjson.loads(data)
