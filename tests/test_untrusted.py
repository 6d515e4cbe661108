"""Bounded readers of untrusted files and values: sizes, lines, UTF-8, JSON and YAML nesting,
YAML alias expansion. Each bound is proven with an input just past it (or a lowered limit)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time

import pytest
import yaml

from redline.errors import RedlineError
from redline.untrusted import (
    MAX_DEPTH,
    MAX_YAML_VALUES,
    NotJSONObjectError,
    UntrustedInputError,
    _bounded_loader,
    check_depth,
    csv_field_limit,
    csv_lines,
    describe_size,
    iter_lines,
    json_object,
    json_object_lines,
    load_json,
    load_yaml,
    option_value,
    read_bytes,
    read_text,
)


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The classic YAML bomb: each anchor a list of ``width`` aliases of the one before."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_the_error_is_a_redline_error_with_problem_and_line():
    error = UntrustedInputError("too long", 3)
    assert isinstance(error, RedlineError) and isinstance(error, ValueError)
    assert (str(error), error.problem, error.line) == ("line 3: too long", "too long", 3)
    assert str(UntrustedInputError("too large")) == "too large"


def test_describe_size():
    assert [describe_size(n) for n in (16 * 1024 * 1024, 512 * 1024, 300, 1025)] == [
        "16 MiB",
        "512 KiB",
        "300 bytes",
        "1025 bytes",
    ]


# -- files ------------------------------------------------------------------------------------------
def test_read_bytes_refuses_a_file_one_byte_over_the_limit(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, 100) == b"x" * 100
    with pytest.raises(UntrustedInputError, match=r"^too large \(more than 99 bytes\)$"):
        read_bytes(path, 99)


def test_read_bytes_bounds_a_stream_whose_size_is_unknown(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as handle:
            handle.write(b"y" * 5000)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(UntrustedInputError, match="too large"):
            read_bytes(fifo, 1000)
    finally:
        writer.join()


def test_read_text_decodes_strictly_and_names_the_line(tmp_path):
    path = tmp_path / "t"
    path.write_bytes("\ufeffline one\nline two\n".encode())
    assert read_text(path, 1000) == "line one\nline two\n"  # the byte-order mark is dropped
    path.write_bytes(b"ok\nok\ncaf\xe9\n")
    with pytest.raises(UntrustedInputError) as info:
        read_text(path, 1000)
    assert (info.value.line, info.value.problem) == (3, "not UTF-8 text (byte 0xe9 at column 4)")
    path.write_bytes(b"ok\nbin\x00ary\n")
    with pytest.raises(UntrustedInputError, match=r"line 2: a NUL byte") as info:
        read_text(path, 1000)
    assert read_text(path, 1000, nul_ok=True) == "ok\nbin\x00ary\n"
    path.write_bytes("utf-16 text\n".encode("utf-16"))
    with pytest.raises(UntrustedInputError, match="not UTF-8 text"):
        read_text(path, 1000)


def test_read_text_lets_os_errors_through(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path / "missing", 10)
    with pytest.raises(IsADirectoryError):
        read_text(tmp_path, 10)


def test_iter_lines_reports_a_bad_line_in_place_and_goes_on(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_bytes(b"first\r\n" + b"x" * 50 + b"\n" + b"bad \xff\n" + b"nul\x00\n" + b"x" * 10 + b"\nlast")
    items = list(iter_lines(path, max_line=20, max_file=1000))
    assert [n for n, _ in items] == [1, 2, 3, 4, 5, 6]
    texts = {n: item for n, item in items if isinstance(item, str)}
    errors = {n: item for n, item in items if isinstance(item, UntrustedInputError)}
    assert texts == {1: "first", 5: "x" * 10, 6: "last"}
    assert errors[2].problem == "too long (more than 20 bytes in one line)" and errors[2].line == 2
    assert errors[3].problem.startswith("not UTF-8 text") and errors[4].problem.startswith("a NUL byte")


def test_iter_lines_line_limit_is_exact_and_line_ends_can_be_kept(tmp_path):
    path = tmp_path / "l"
    path.write_bytes(b"a" * 20 + b"\n" + b"b" * 21 + b"\n")
    items = list(iter_lines(path, max_line=20, max_file=1000, keepends=True))
    assert items[0] == (1, "a" * 20 + "\n")
    assert isinstance(items[1][1], UntrustedInputError)


def test_iter_lines_raises_for_a_file_over_the_limit(tmp_path):
    path = tmp_path / "l"
    path.write_bytes(b"line\n" * 10)
    assert len(list(iter_lines(path, max_line=100, max_file=50))) == 10
    with pytest.raises(UntrustedInputError, match=r"too large \(more than 49 bytes\)"):
        list(iter_lines(path, max_line=100, max_file=49))


def test_csv_field_limit_is_put_back():
    import csv

    before = csv.field_size_limit()
    with csv_field_limit(before * 4):
        assert csv.field_size_limit() == before * 4
    assert csv.field_size_limit() == before


# -- JSON -------------------------------------------------------------------------------------------
def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_nesting_is_bounded_just_past_the_limit():
    assert load_json(nested(MAX_DEPTH)) is not None
    with pytest.raises(UntrustedInputError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_json(nested(MAX_DEPTH + 1))
    with pytest.raises(UntrustedInputError, match="nested more than"):  # past Python's own recursion limit
        load_json('{"a": ' + nested(100_000) + "}")


def test_json_errors_keep_their_kind():
    with pytest.raises(json.JSONDecodeError):
        load_json("{oops")
    with pytest.raises(UntrustedInputError, match="a value cannot be read: Exceeds the limit"):
        load_json("1" * 5000)


def test_json_object_says_what_is_wrong_with_the_line():
    assert json_object('{"a": [1]}') == {"a": [1]}
    with pytest.raises(NotJSONObjectError) as info:
        json_object('{"a": oops}', 7)
    error = info.value
    assert (str(error), error.found, error.detail, error.column) == (
        "line 7: not valid JSON (Expecting value at column 7)",
        None,
        "Expecting value",
        7,
    )
    with pytest.raises(NotJSONObjectError) as info:
        json_object("[1, 2]", 3)
    assert (str(info.value), info.value.found) == ("line 3: not a JSON object", "list")
    with pytest.raises(UntrustedInputError) as deep:
        json_object('{"a": ' + nested(MAX_DEPTH + 1) + "}", 2)
    assert not isinstance(deep.value, NotJSONObjectError)
    assert (deep.value.line, deep.value.problem) == (2, f"values nested more than {MAX_DEPTH} levels deep")


def test_json_object_lines_skips_blank_lines_and_raises_the_first_bad_one(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \n{"b": 2}\n"text"\n{"never": "read"}\n')
    lines = json_object_lines(path, max_line=100, max_file=1000)
    assert [next(lines), next(lines)] == [(1, {"a": 1}), (4, {"b": 2})]
    with pytest.raises(NotJSONObjectError, match=r"^line 5: not a JSON object$"):
        next(lines)
    path.write_bytes(b'{"a": 1}\n{"b": "' + b"x" * 100 + b'"}\n')
    with pytest.raises(UntrustedInputError, match=r"^line 2: too long \(more than 100 bytes in one line\)$"):
        list(json_object_lines(path, max_line=100, max_file=1000))
    with pytest.raises(UntrustedInputError, match=r"^too large \(more than 50 bytes\)$"):
        list(json_object_lines(path, max_line=100, max_file=50))


def _outcome(path, **limits):
    """What :func:`json_object_lines` gives for ``path``: its (line, object) pairs, then the
    refusal that ended it (type, message), if any."""
    read = []
    try:
        for number, value in json_object_lines(path, **limits):
            read.append((number, repr(value)))
    except UntrustedInputError as exc:
        read.append((type(exc).__name__, str(exc)))
    return read


@pytest.mark.parametrize(
    "content",
    [
        b'{"a": 1}\r\n{"b": [1, 2.5, -0.0, 1e-400]}\r\n',
        b"\xef\xbb\xbf" + b'{"bom": "first line"}\n{"b": 2}',  # no line end at the end
        b'{"a": 1}\n\xef\xbb\xbf{"bom": "not first"}\n',
        b'{"big": 123456789012345678901234567890, "neg": -9223372036854775809}\n',
        b'{"nan": NaN, "inf": 1e400}\n{"lone": "\\ud800"}\n',
        b'{"nul": "\x00"}\n',
        b'{"a": "\xff"}\n',
        "\n".join(
            json.dumps({"text": "x"}, ensure_ascii=False).encode("utf-16").decode("latin-1") for _ in range(2)
        ).encode("latin-1"),
        b'{"deep": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}\n",
        b'{"ok": ' + b"[" * (MAX_DEPTH - 2) + b"]" * (MAX_DEPTH - 2) + b"}\n",
        b'{"a": 1, "a": 2}\n[1]\n',
        b'{"a": "' + b"x" * 91 + b'"}\n{"b": 1}\n',  # 100 bytes: the most a line may hold
        b'{"a": "' + b"x" * 92 + b'"}\n',  # 101
        b'{"a": "' + b"x" * 92 + b'"}',  # 101, the last line without its end
        b"\n\n  \r\n",
    ],
)
def test_json_object_lines_reads_a_whole_file_as_it_streams_one(tmp_path, monkeypatch, content):
    """A file read at once (parsed by orjson) gives the values and refusals, messages and lines
    included, that the same file gives streamed line by line (parsed by :mod:`json`)."""
    path = tmp_path / "d.jsonl"
    path.write_bytes(content)
    whole = _outcome(path, max_line=100, max_file=10_000)
    monkeypatch.setattr("redline.untrusted.WHOLE_READ_BYTES", 0)
    assert whole == _outcome(path, max_line=100, max_file=10_000)


def test_check_depth_counts_lists_and_objects():
    check_depth({"a": [{"b": [1]}]}, 4)
    with pytest.raises(UntrustedInputError):
        check_depth({"a": [{"b": [1]}]}, 3)
    check_depth("a string is no level", 0)


# -- YAML -------------------------------------------------------------------------------------------
def test_yaml_alias_bomb_is_refused_at_once():
    bomb = alias_bomb()
    assert len(bomb) < 600  # a few hundred bytes standing for 9**9 strings
    started = time.perf_counter()
    with pytest.raises(UntrustedInputError, match="more than 100000 values once its aliases are expanded") as info:
        load_yaml(bomb)
    assert info.value.line is not None
    assert time.perf_counter() - started < 5  # milliseconds in fact; generous for a loaded machine


def test_yaml_aliases_within_the_budget_still_work():
    text = "base: &b {temperature: 0, stop: [END]}\nfirst: *b\nsecond: {<<: *b, temperature: 1}\n"
    assert load_yaml(text) == {
        "base": {"temperature": 0, "stop": ["END"]},
        "first": {"temperature": 0, "stop": ["END"]},
        "second": {"temperature": 1, "stop": ["END"]},
    }


def test_yaml_expansion_limit_is_exact(monkeypatch):
    assert MAX_YAML_VALUES == 100_000
    monkeypatch.setattr(_bounded_loader(), "max_values", 10)
    assert load_yaml("[1, 2, 3, 4, 5, 6, 7, 8, 9]") == list(range(1, 10))  # 9 scalars + the list: 10
    with pytest.raises(UntrustedInputError, match="more than 10 values once its aliases are expanded"):
        load_yaml("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]")
    assert load_yaml("a: &a [1, 2]\nb: [*a]") == {"a": [1, 2], "b": [[1, 2]]}  # 1 + (1 + 3) + (1 + 1 + 3)
    with pytest.raises(UntrustedInputError, match="more than 10 values"):
        load_yaml("a: &a [1, 2]\nb: [*a, *a]")  # an alias counts all it stands for, each time


def test_yaml_nesting_is_bounded_in_flow_and_block_style():
    assert load_yaml(nested(MAX_DEPTH)) is not None
    for text in (nested(MAX_DEPTH + 1), "- " * (MAX_DEPTH + 1) + "x", "x: " + "[" * 200_000):
        with pytest.raises(UntrustedInputError, match="nested more than"):
            load_yaml(text)


@pytest.mark.parametrize("text", ["a: &a [*a]", "a: &a {k: [1, *a]}"])
def test_yaml_alias_inside_its_own_anchor_is_refused(text):
    with pytest.raises(UntrustedInputError, match="an alias refers to a collection that holds it"):
        load_yaml(text)


def test_yaml_builds_only_json_like_values():
    assert load_yaml("day: 2001-01-01\nn: 1_000\nf: .inf") == {"day": "2001-01-01", "n": 1000, "f": float("inf")}
    for tag in ("!!binary aGk=", "!!set {a}", "!!timestamp 2001-01-01", "!!omap [{a: 1}]", "!!pairs [{a: 1}]"):
        with pytest.raises(yaml.YAMLError, match="is not supported here"):
            load_yaml(f"x: {tag}")
    with pytest.raises(yaml.YAMLError, match="could not determine a constructor"):
        load_yaml("x: !!python/object/apply:os.system [echo]")


@pytest.mark.parametrize("text", ["x: " + "1" * 5000, "x: !!float abc", "x: !!int 0x", "x: !!timestamp"])
def test_yaml_values_python_refuses_are_yaml_errors_with_a_line(text):
    with pytest.raises(yaml.YAMLError) as info:
        load_yaml(text)
    assert info.value.problem_mark.line == 0  # type: ignore[attr-defined]


def test_csv_lines_split_lone_carriage_returns_and_raise_bad_lines(tmp_path):
    path = tmp_path / "mac.csv"
    path.write_bytes(b'prompt\r"a\rb"\rlast')
    assert list(csv_lines(path, max_line=100, max_file=100)) == ["prompt\r", '"a\r', 'b"\r', "last"]
    path.write_bytes(b"a\r\nb\n")
    assert list(csv_lines(path, max_line=100, max_file=100)) == ["a\r\n", "b\n"]
    path.write_bytes(b"ok\nbad \xff\n")
    with pytest.raises(UntrustedInputError, match="line 2: not UTF-8"):
        list(csv_lines(path, max_line=100, max_file=100))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.7", 0.7),
        ("[a, b]", ["a", "b"]),
        ("{a: 1}", {"a": 1}),
        ("2001-01-01", "2001-01-01"),  # dates stay text
        ("~", "~"),  # null: the text as it is
        ("  ", ""),
        ("[*undefined]", "[*undefined]"),  # not YAML: the text as it is
        ("a: b: c", "a: b: c"),
    ],
)
def test_option_value_reads_yaml_else_keeps_the_text(text, value):
    assert option_value(text) == value


def test_option_value_refuses_yaml_past_the_bounds():
    with pytest.raises(UntrustedInputError, match="the YAML stands for more than"):
        option_value(alias_bomb())
