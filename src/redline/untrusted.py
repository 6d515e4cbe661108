"""Bounded reading of files and values that come from people we do not trust.

Configuration files, datasets, labels files and LVE repositories are written by others. Reading
one must not hang, exhaust memory or end in a traceback, whatever it holds. The readers here put
a limit on everything the input controls:

* size: a file is refused once it is larger than the caller's limit (checked before reading and
  again while reading, so a growing file or a pipe is bounded too); a line longer than its limit
  is refused without being read whole;
* encoding: text must be UTF-8 (a byte-order mark is dropped), and a NUL byte, the mark of a
  binary or UTF-16 file, is refused where text is expected;
* nesting: JSON and YAML values nest at most :data:`MAX_DEPTH` levels, so that neither the parser
  nor any later ``repr``, ``copy`` or ``json.dumps`` of the value can overflow the stack;
* YAML expansion: anchors and aliases are expanded to at most :data:`MAX_YAML_VALUES` values (a
  few hundred bytes of nested aliases otherwise stand for billions), an alias may not refer to
  the collection that holds it, and only JSON-like values are built (strings, numbers, booleans,
  null, lists, mappings: dates stay text, ``!!binary``, ``!!set``, ``!!omap`` and ``!!pairs`` are
  refused).

Every refusal is an :class:`UntrustedInputError` carrying the problem and, where known, the line;
the caller re-raises it as its own error naming the file (``DatasetError``, ``ConfigError``,
``LVEFormatError``...). A JSONL file of objects is read with :func:`json_object_lines`, one such
value with :func:`json_object`. PyYAML is imported only when YAML is read.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from redline import jsonio
from redline.errors import RedlineError

__all__ = [
    "KIB",
    "MAX_DEPTH",
    "MAX_YAML_VALUES",
    "MIB",
    "NotJSONObjectError",
    "UntrustedInputError",
    "check_depth",
    "csv_field_limit",
    "csv_lines",
    "describe_size",
    "iter_lines",
    "json_object",
    "json_object_lines",
    "load_json",
    "load_yaml",
    "option_value",
    "read_bytes",
    "read_text",
]

KIB = 1024
MIB = 1024 * KIB

MAX_DEPTH = 64
"""How deeply JSON and YAML values may nest (lists and mappings inside each other). Real
configurations, datasets and LVE files nest a handful of levels; Python's own recursion limit is
reached near 1,000, and by ``copy.deepcopy`` or ``repr`` of a value much sooner."""

MAX_YAML_VALUES = 100_000
"""How many values (scalars, lists, mappings) a YAML document may stand for once its aliases are
expanded. A configuration holds a few dozen."""

_SKIP_CHUNK = 64 * KIB


class UntrustedInputError(RedlineError, ValueError):
    """Input refused by a bound or for its encoding. ``problem`` says what is wrong, ``line`` where
    (``None`` when it is not about one line); callers name the file."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {problem}" if line else problem)
        self.problem = problem
        self.line = line


class NotJSONObjectError(UntrustedInputError):
    """Text that should hold one JSON object and does not (:func:`json_object`). ``found`` is the
    type of the JSON value it holds instead (``"list"``, ``"str"``...), or ``None`` when it is not
    JSON at all: then ``detail`` is what the parser found wrong and ``column`` where. The
    ``problem`` reads ``not valid JSON (...)`` or ``not a JSON object``; a caller may word it its
    own way from these."""

    def __init__(
        self,
        problem: str,
        line: int | None = None,
        *,
        found: str | None = None,
        detail: str = "",
        column: int | None = None,
    ) -> None:
        super().__init__(problem, line)
        self.found = found
        self.detail = detail
        self.column = column


def describe_size(size: int) -> str:
    """``16 MiB``, ``512 KiB``, ``300 bytes``: a limit as people write it."""
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"


def _too_large(limit: int) -> UntrustedInputError:
    return UntrustedInputError(f"too large (more than {describe_size(limit)})")


# -- bytes and text ---------------------------------------------------------------------------------
def _size_on_disk(handle: BinaryIO) -> int | None:
    try:
        return os.fstat(handle.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        return None


def read_bytes(path: str | Path, limit: int) -> bytes:
    """The content of ``path``, at most ``limit`` bytes (:class:`UntrustedInputError` beyond it).

    Raises ``OSError`` as ``open`` does (a missing file, a folder, no permission)."""
    with open(path, "rb") as handle:
        size = _size_on_disk(handle)
        if size is not None and size > limit:
            raise _too_large(limit)
        data = handle.read(limit + 1)  # a pipe or a growing file is bounded here
    if len(data) > limit:
        raise _too_large(limit)
    return data


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _decode(data: bytes, *, nul_ok: bool, first_line: int = 1) -> str:
    """``data`` as UTF-8 text; :class:`UntrustedInputError` at the line of the first bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + _line_of(data, exc.start) - 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UntrustedInputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column})", line) from None
    if not nul_ok:
        nul = text.find("\x00")
        if nul >= 0:
            line = first_line + text.count("\n", 0, nul)
            raise UntrustedInputError("a NUL byte in text (is it a binary or UTF-16 file?)", line)
    return text


def read_text(path: str | Path, limit: int, *, nul_ok: bool = False) -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark dropped), at most ``limit`` bytes.

    Raises :class:`UntrustedInputError` for a file over the limit, bytes that are not UTF-8 and,
    unless ``nul_ok``, a NUL byte; ``OSError`` when the file cannot be opened or read."""
    text = _decode(read_bytes(path, limit), nul_ok=nul_ok)
    return text[1:] if text.startswith("\ufeff") else text


def iter_lines(
    path: str | Path,
    *,
    max_line: int,
    max_file: int,
    keepends: bool = False,
    nul_ok: bool = False,
) -> Iterator[tuple[int, str | UntrustedInputError]]:
    """``(line number, text)`` for each line of ``path`` (split at ``\\n`` only), streamed.

    A line that cannot be used (longer than ``max_line`` bytes, not UTF-8, a NUL byte unless
    ``nul_ok``) comes as ``(number, UntrustedInputError)`` in place of its text, so that a caller
    can report it and go on; a long line is skipped without being held in memory. The whole file
    is bounded by ``max_file`` bytes: beyond it an :class:`UntrustedInputError` is *raised* (before
    the first line when the file's size already says so). ``OSError`` as ``open`` raises it."""
    with open(path, "rb") as handle:
        size = _size_on_disk(handle)
        if size is not None and size > max_file:
            raise _too_large(max_file)
        total = 0
        number = 0
        while True:
            raw = handle.readline(max_line + 1)
            if not raw:
                return
            number += 1
            total += len(raw)
            if len(raw) > max_line and not raw.endswith(b"\n"):
                while not raw.endswith(b"\n"):  # skip the rest of the line, a chunk at a time
                    raw = handle.readline(_SKIP_CHUNK)
                    if not raw:
                        break
                    total += len(raw)
                    if total > max_file:
                        raise _too_large(max_file)
                yield number, UntrustedInputError(f"too long (more than {describe_size(max_line)} in one line)", number)
                continue
            if total > max_file:
                raise _too_large(max_file)
            try:
                text = _decode(raw, nul_ok=nul_ok, first_line=number)
            except UntrustedInputError as exc:
                yield number, exc
                continue
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            if not keepends:
                text = text.rstrip("\r\n")
            yield number, text


_CR_LINES = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+$")


def csv_lines(path: str | Path, *, max_line: int, max_file: int) -> Iterator[str]:
    """The lines of a CSV file for the ``csv`` module: line ends kept, bounded and strict UTF-8
    as :func:`iter_lines` reads them, a bad line *raised* as its :class:`UntrustedInputError`. A
    line that old spreadsheets end with a lone ``\r`` is split there, as the ``csv`` module
    expects of a file opened with ``newline=""``."""
    for _, line in iter_lines(path, max_line=max_line, max_file=max_file, keepends=True):
        if isinstance(line, UntrustedInputError):
            raise line
        if "\r" in line.rstrip("\r\n"):
            yield from _CR_LINES.findall(line)
        else:
            yield line


@contextlib.contextmanager
def csv_field_limit(limit: int) -> Iterator[None]:
    """Let the ``csv`` module read fields of up to ``limit`` characters for the ``with`` block
    (its default, 128 KiB, is process-wide state: it is put back afterwards)."""
    previous = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


# -- JSON -------------------------------------------------------------------------------------------
def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`UntrustedInputError` when lists and dicts in ``value`` nest deeper than
    ``limit`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise UntrustedInputError(f"values nested more than {limit} levels deep")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def load_json(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)`` with its nesting bounded.

    Raises ``json.JSONDecodeError`` for text that is not JSON (callers word it with its line and
    column) and :class:`UntrustedInputError` for values nested deeper than ``max_depth`` or that
    Python refuses to build (an integer of more than 4,300 digits)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise UntrustedInputError(f"values nested more than {max_depth} levels deep") from None
    except ValueError as exc:  # e.g. the limit on the digits of an integer
        raise UntrustedInputError(f"a value cannot be read: {str(exc).splitlines()[0]}") from None
    brackets = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    if brackets > max_depth:  # (fewer brackets cannot nest deeper)
        check_depth(value, max_depth)
    return value


def json_object(text: str | bytes, line: int | None = None) -> dict[str, Any]:
    """The JSON object in ``text`` (one line of a JSONL file, say), read by :func:`load_json`.

    Raises :class:`NotJSONObjectError` for text that is not JSON or holds another kind of value,
    and :class:`UntrustedInputError` for one nested too deeply or that Python refuses to build;
    either carries ``line``."""
    try:
        value = load_json(text)
    except json.JSONDecodeError as exc:
        problem = f"not valid JSON ({exc.msg} at column {exc.colno})"
        raise NotJSONObjectError(problem, line, detail=exc.msg, column=exc.colno) from None
    except UntrustedInputError as exc:
        raise UntrustedInputError(exc.problem, line) from None
    if not isinstance(value, dict):
        raise NotJSONObjectError("not a JSON object", line, found=type(value).__name__)
    return value


def json_object_lines(path: str | Path, *, max_line: int, max_file: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each line of the JSONL file at ``path`` that is not blank,
    streamed and bounded as :func:`iter_lines` reads it, each line a :func:`json_object`.

    The first line that cannot be used raises its :class:`UntrustedInputError` (with its line);
    a file over ``max_file`` raises one without a line; ``OSError`` as ``open`` raises it.

    A file of at most :data:`WHOLE_READ_BYTES` on disk is read at once and each of its lines
    parsed by orjson (:func:`redline.jsonio.orjson_loads`); a line that parser refuses or reads
    as anything but an object with few brackets is read again as a streamed line is, so the
    values, refusals and messages are the same either way."""
    whole = _whole_file(path, min(max_file, WHOLE_READ_BYTES))
    if whole is not None:
        yield from _json_object_lines_of(whole, max_line=max_line)
        return
    for number, text in iter_lines(path, max_line=max_line, max_file=max_file):
        if isinstance(text, UntrustedInputError):
            raise text
        if text.strip():
            yield number, json_object(text, number)


#: A JSONL file up to this size on disk is read whole by :func:`json_object_lines`.
WHOLE_READ_BYTES = 16 * MIB


def _whole_file(path: str | Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` when its size on disk is at most ``limit`` (and it
    did not grow past it meanwhile); ``None`` for a larger file, a pipe or another special file,
    to be streamed instead. ``OSError`` as ``open`` raises it."""
    with open(path, "rb") as handle:
        size = _size_on_disk(handle)
        if size is None or size > limit:
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _json_object_lines_of(data: bytes, *, max_line: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`json_object_lines` over the bytes ``data`` of a whole file."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:  # the file ends with a line end
        lines.pop()
    for number, raw in enumerate(lines, 1):
        if len(raw) > max_line:  # as the streamed reader bounds a line (its end not counted)
            raise UntrustedInputError(f"too long (more than {describe_size(max_line)} in one line)", number)
        value = _plain_object(raw)
        if value is None:  # anything unusual: as the streamed reader reads it
            text = _decode(raw, nul_ok=False, first_line=number)
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            text = text.rstrip("\r")
            if not text.strip():
                continue
            value = json_object(text, number)
        yield number, value


_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def _plain_object(raw: bytes) -> dict[str, Any] | None:
    """The JSON object on the line ``raw``, read by :func:`redline.jsonio.orjson_loads`, when the
    bracket count proves it nested no deeper than :data:`MAX_DEPTH` and no number is long enough
    for orjson to read it otherwise than :mod:`json` does (an integer beyond 64 bits); ``None``
    for anything else, left to :func:`json_object`."""
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH or _LONG_NUMBER.search(raw):
        return None
    try:
        value = jsonio.orjson_loads(raw)
    except ValueError:
        return None
    return value if type(value) is dict else None


# -- YAML -------------------------------------------------------------------------------------------
_REFUSED_TAGS = ("binary", "set", "omap", "pairs", "timestamp")


@functools.cache
def _bounded_loader() -> Any:
    """A PyYAML loader class that builds only JSON-like values and bounds nesting and alias
    expansion while it composes the document (made once, on first use)."""
    import yaml  # optional at CLI start: loaded only when YAML is read
    from yaml.composer import Composer
    from yaml.constructor import ConstructorError, SafeConstructor
    from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
    from yaml.resolver import Resolver

    # libyaml's parser turns text into events in C and without recursion; composing (where
    # nesting and aliases are counted) stays in Python. libyaml's own composer is not used: it
    # recurses in C and crashes the interpreter on deeply nested input.
    parser: Any = yaml.parser.Parser
    try:
        from yaml.cyaml import CParser

        parser = CParser
    except ImportError:  # PyYAML built without libyaml
        pass
    reader: tuple[Any, ...] = () if parser is not yaml.parser.Parser else (yaml.reader.Reader, yaml.scanner.Scanner)

    def refuse(loader: Any, node: Any) -> Any:
        raise ConstructorError(None, None, f"the tag {node.tag!r} is not supported here", node.start_mark)

    class BoundedLoader(*reader, parser, Composer, SafeConstructor, Resolver):  # type: ignore[misc]
        max_depth = MAX_DEPTH
        max_values = MAX_YAML_VALUES

        def __init__(self, stream: Any) -> None:
            if reader:
                yaml.reader.Reader.__init__(self, stream)
                yaml.scanner.Scanner.__init__(self)
                parser.__init__(self)
            else:
                parser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._depth = 0
            self._values: dict[int, int] = {}  # id(node) -> values it stands for, once composed

        # the Python composer, even where libyaml's parser is used
        check_node = Composer.check_node
        get_node = Composer.get_node
        get_single_node = Composer.get_single_node
        compose_document = Composer.compose_document

        def compose_node(self, parent: Any, index: Any) -> Any:
            known = self._values
            if self.check_event(AliasEvent):  # the node of an anchor already counted, or an error
                anchored = self.anchors.get(self.peek_event().anchor)
                if anchored is not None and id(anchored) not in known:
                    line = self.peek_event().start_mark.line + 1
                    raise UntrustedInputError("an alias refers to a collection that holds it", line)
                return Composer.compose_node(self, parent, index)
            if not self.check_event(SequenceStartEvent, MappingStartEvent):
                node = Composer.compose_node(self, parent, index)
                known[id(node)] = 1
                return node
            line = self.peek_event().start_mark.line + 1
            if self._depth >= self.max_depth:
                raise UntrustedInputError(f"values nested more than {self.max_depth} levels deep", line)
            self._depth += 1
            try:
                node = Composer.compose_node(self, parent, index)
            finally:
                self._depth -= 1
            total = 1  # the values this collection stands for once its aliases are expanded
            for item in node.value:
                for child in item if isinstance(item, tuple) else (item,):
                    total += known[id(child)]
            if total > self.max_values:
                raise UntrustedInputError(
                    f"the YAML stands for more than {self.max_values} values once its aliases are expanded", line
                )
            known[id(node)] = total
            return node

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                return SafeConstructor.construct_object(self, node, deep)
            except (yaml.YAMLError, UntrustedInputError):
                raise
            except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ConstructorError(None, None, f"cannot read this value ({first})", node.start_mark) from None

    # dates stay text: only JSON-like values are built
    BoundedLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith(":timestamp")]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }
    for name in _REFUSED_TAGS:
        BoundedLoader.add_constructor(f"tag:yaml.org,2002:{name}", refuse)
    return BoundedLoader


def load_yaml(text: str) -> Any:
    """One YAML document, read safely and within bounds (see the module doc).

    Raises ``yaml.YAMLError`` for text that is not YAML or a value that cannot be built (with its
    ``problem`` and ``problem_mark``), and :class:`UntrustedInputError` for a document nested
    deeper than :data:`MAX_DEPTH`, expanding to more than :data:`MAX_YAML_VALUES` values, or with an
    alias inside its own anchor."""
    import yaml  # optional at CLI start: loaded only when YAML is read

    loader = _bounded_loader()(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        # PyYAML 6.0.4 and later stop deep flow collections in their own scanner, before ours
        if "nesting depth" not in str(getattr(exc, "problem", None) or exc):
            raise
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise UntrustedInputError(f"values nested more than {MAX_DEPTH} levels deep", line) from None
    finally:
        loader.dispose()


def option_value(text: str) -> Any:
    """The value of a command-line option such as ``--gen-opt KEY=VALUE``, read as YAML
    (``0.7`` a number, ``[a, b]`` a list, ``{a: 1}`` a mapping) by :func:`load_yaml`; the text as
    it is where it is not YAML or reads as null (``~``), ``""`` for blank text. Raises
    :class:`UntrustedInputError` for YAML past the bounds (an alias bomb)."""
    if not text.strip():
        return ""
    import yaml  # optional at CLI start: loaded only when an option is given

    try:
        value = load_yaml(text)
    except yaml.YAMLError:  # not YAML: the text as it is
        return text
    return text if value is None else value
