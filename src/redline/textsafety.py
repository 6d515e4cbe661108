"""Text from models, datasets and servers, made safe for where it goes.

Model outputs are hostile data: they may hold terminal escape sequences (colour, window title,
cursor moves), carriage returns and backspaces that overwrite what was printed, right-to-left
overrides (U+202E) and zero-width or tag characters that reorder or hide text, and lone
surrogates (``"\\udcff"`` is valid JSON) that no UTF-8 file can hold. Each destination gets one
function:

* a terminal: :func:`visible` — every control and format character but the newline is shown as
  its Python escape (``\\x1b``, ``\\r``, ``\\u202e``); lossy, for people.
* a file a person opens in a viewer (Markdown, CSV in a spreadsheet, the HTML report):
  :func:`inert` — as :func:`visible`, but tabs and the zero-width joiners that emoji and some
  scripts need are kept; lossy, for people.
* JSON a program reads (JSONL exports, the hitlog, garak's ``report.jsonl``): :func:`dumps` —
  those characters and lone surrogates are written as JSON ``\\uXXXX`` escapes, so the file is
  valid UTF-8, prints safely, and ``json.loads`` gives back exactly the same text: lossless.
* anything else that must be valid UTF-8 (a SQLite text column, a message):
  :func:`escape_surrogates` — only lone surrogates become their escape.

Which characters count: the Unicode categories Cc (controls), Cf (format: bidi overrides and
isolates, zero-width characters, tags), Cs (surrogates), Zl and Zp (line and paragraph
separators). The table is built once, the first time a text holds such a character outside ASCII.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any

__all__ = ["dumps", "escape_surrogates", "inert", "json_escape", "visible"]

_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

#: Kept by :func:`inert`: zero-width non-joiner and joiner (emoji sequences, Indic and Persian
#: scripts need them; they reorder nothing).
_JOINERS = frozenset({0x200C, 0x200D})

_SURROGATES = re.compile("[\ud800-\udfff]")

# Planes where Unicode puts format characters (BMP, SMP, and tags in plane 14); the other planes
# hold none, so the table is built from these alone.
_PLANES = (range(0x20000), range(0xE0000, 0xF0000))


@functools.cache
def _unsafe_code_points() -> tuple[int, ...]:
    points = []
    for plane in _PLANES:
        for code in plane:
            if unicodedata.category(chr(code)) in _CATEGORIES:
                points.append(code)
    return tuple(points)


def _char_class(points: list[int] | tuple[int, ...]) -> re.Pattern[str]:
    ranges: list[tuple[int, int]] = []
    for code in points:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    parts = [
        f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"  # escapes: surrogates stay inside the regex
        for lo, hi in ranges
    ]
    return re.compile("[" + "".join(parts) + "]")


@functools.cache
def _pattern(keep: frozenset[int]) -> re.Pattern[str]:
    """Every character of :data:`_CATEGORIES` except those in ``keep``."""
    return _char_class([code for code in _unsafe_code_points() if code not in keep])


@functools.cache
def _ascii_pattern(keep: frozenset[int]) -> re.Pattern[str]:
    """:func:`_pattern` for ASCII text, without building the whole table."""
    return _char_class([code for code in (*range(0x20), 0x7F) if code not in keep])


def _python_escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape", "backslashreplace").decode("ascii")


def _replace(text: str, keep: frozenset[int], escape: Callable[[re.Match[str]], str]) -> str:
    if text.isascii() or not any(unicodedata.category(c) in _CATEGORIES for c in set(text) if not c.isascii()):
        # no character outside ASCII to replace: the small pattern finds the same (and a summary
        # with a "≥" in it need not build the whole table)
        return _ascii_pattern(keep).sub(escape, text)
    return _pattern(keep).sub(escape, text)


_VISIBLE_KEEP = frozenset({0x0A})
_INERT_KEEP = frozenset({0x0A, 0x09}) | _JOINERS


def visible(text: str) -> str:
    """``text`` made safe to print on a terminal, for text that comes from a model or a dataset.

    Every control or format character except the newline (ESC and the CSI it starts, carriage
    return, backspace, bell, tab, bidi overrides, zero-width and tag characters, lone surrogates,
    line separators) is replaced by its Python escape (``\\x1b``, ``\\r``, ``\\u202e``,
    ``\\U000e0041``), so the text can neither move the cursor, recolour or retitle the terminal,
    nor hide or reorder what is shown. ``\\r\\n`` counts as one newline. Everything else,
    backslashes included, is kept as it is.
    """
    return _replace(text.replace("\r\n", "\n"), _VISIBLE_KEEP, _python_escape)


def inert(text: str) -> str:
    """``text`` made safe for a file a person opens in a viewer (Markdown, a CSV cell, HTML):
    as :func:`visible`, except that tabs and the zero-width (non-)joiners are kept. Bidi
    overrides, other controls and lone surrogates are shown as Python escapes (``\\u202e``);
    ``\\r\\n`` becomes ``\\n``."""
    return _replace(text.replace("\r\n", "\n"), _INERT_KEEP, _python_escape)


def _json_escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


#: The newline of indented JSON: ``json.dumps`` writes one only between values, never raw
#: inside a string.
_JSON_KEEP: frozenset[int] = frozenset({ord("\n")})


def json_escape(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``, indented or not) with every
    control, format, separator and lone surrogate character written as a ``\\uXXXX`` escape,
    except the newlines indentation puts between values. The others can only stand inside JSON
    strings, so the result is the same JSON value: lossless."""
    return _replace(text, _JSON_KEEP, _json_escape_char)


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` through :func:`json_escape`: readable
    UTF-8 for any script, safe to print, and loaded back exactly, lone surrogates included. (As
    with ``json.dumps``, a high surrogate followed by a low one reads back as the one character
    the pair encodes; no JSON answer, UTF-8 file or ``surrogateescape`` decoding gives such a
    str.)"""
    return json_escape(json.dumps(value, ensure_ascii=False, **options))


def _surrogate_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (which UTF-8 cannot encode) written as its escape
    ``\\udcff``; every other character kept."""
    return _SURROGATES.sub(_surrogate_escape, text) if not text.isascii() else text
