"""Dataset files read within bounds: every hostile file is one DatasetError line naming the file
(and line). Limits are proven just past them, most with a lowered limit."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import redline.datasets as datasets
from redline.datasets import DatasetError, load_rows


def error_of(path: Path, columns: dict[str, str] | None = None) -> str:
    with pytest.raises(DatasetError) as info:
        load_rows(path, columns)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message[len(f"{path}: ") :]


def test_the_limits_are_documented_values():
    assert datasets.MAX_DATASET_BYTES == 256 * 1024 * 1024
    assert datasets.MAX_VALUE_BYTES == 16 * 1024 * 1024
    assert datasets.MAX_JSON_BYTES == 64 * 1024 * 1024
    assert datasets.MAX_ROWS == 1_000_000


# -- CSV --------------------------------------------------------------------------------------------
def test_a_csv_field_over_the_csv_module_default_is_read(tmp_path):
    path = tmp_path / "long.csv"
    long = "a" * (200 * 1024)  # the csv module alone refuses fields over 128 KiB
    path.write_text(f'prompt,target\n"{long}",t\nshort,u\n')
    rows = load_rows(path, {"target": "target"})
    assert [len(r.prompt) for r in rows] == [len(long), 5] and rows[0].target == "t"


def test_a_csv_field_over_the_limit_names_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "MAX_VALUE_BYTES", 100)
    path = tmp_path / "big.csv"
    # every line is under the limit, the quoted field spanning them is not
    path.write_text('prompt\nfine\n"' + ("x" * 60 + "\n") * 2 + 'x"\nafter\n')
    assert error_of(path) == "line 4: a field is too large (more than 100 bytes)"  # where it went past
    path.write_text("prompt\n" + "y" * 101 + "\n")
    assert error_of(path) == "line 2: too long (more than 100 bytes in one line)"


def test_the_csv_field_limit_of_the_process_is_left_as_it_was(tmp_path):
    before = csv.field_size_limit()
    path = tmp_path / "d.csv"
    path.write_text("prompt\nhello\n")
    load_rows(path)
    assert csv.field_size_limit() == before


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"prompt\nok\ncaf\xe9\n", "line 3: not UTF-8 text (byte 0xe9 at column 4)"),
        (b"prompt\nok\nnul\x00byte\n", "line 3: a NUL byte in text (is it a binary or UTF-16 file?)"),
        ("prompt\nhello\n".encode("utf-16"), "line 1: not UTF-8 text (byte 0xff at column 1)"),
    ],
)
def test_csv_encoding_problems_name_the_line(tmp_path, content, problem):
    path = tmp_path / "enc.tsv"
    path.write_bytes(content)
    assert error_of(path) == problem


def test_a_byte_order_mark_and_extra_columns_are_fine(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffid,prompt,notes\n1,hello,x\n2,,y\n3,bye\n".encode())
    assert [(r.index, r.prompt) for r in load_rows(path)] == [(0, "hello"), (2, "bye")]


def test_line_ends_of_every_kind_still_read(tmp_path):
    for name, content in {
        "unix.csv": b'prompt,target\nhello,x\n"two\nlines",y\n',
        "dos.csv": b'prompt,target\r\nhello,x\r\n"two\r\nlines",y\r\n',
        "mac.csv": b'prompt,target\rhello,x\r"two\rlines",y\r',
    }.items():
        path = tmp_path / name
        path.write_bytes(content)
        rows = load_rows(path, {"target": "target"})
        assert (rows[0].prompt, rows[0].target, rows[1].target) == ("hello", "x", "y"), name
        assert rows[1].prompt.replace("\r\n", "\n").replace("\r", "\n") == "two\nlines", name


def test_rows_and_file_size_are_capped(tmp_path, monkeypatch):
    path = tmp_path / "rows.csv"
    path.write_text("prompt\na\nb\nc\n")
    monkeypatch.setattr(datasets, "MAX_ROWS", 3)
    assert len(load_rows(path)) == 3
    monkeypatch.setattr(datasets, "MAX_ROWS", 2)
    assert error_of(path) == "too many rows (more than 2; sample or split the dataset)"
    monkeypatch.setattr(datasets, "MAX_ROWS", 10)
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 13)  # the file's size
    assert len(load_rows(path)) == 3
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 12)
    assert error_of(path) == "too large (more than 12 bytes)"


def test_a_missing_column_lists_only_the_first_columns(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(1000)) + "\n" + ",".join("x" * 1000) + "\n")
    message = error_of(path)
    assert message.startswith("no column 'prompt' for prompt (columns: c0, c1,") and "(1000 in all)" in message
    assert len(message) < 400


# -- JSONL and JSON ---------------------------------------------------------------------------------
def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"prompt": "x", "deep": ' + nested(100_000) + "}", "line 2: values nested more than 64 levels deep"),
        ('{"prompt": "x", "deep": ' + nested(65) + "}", "line 2: values nested more than 64 levels deep"),
        ('{"prompt": ' + "1" * 5000 + "}", "line 2: a value cannot be read: Exceeds the limit"),
        ("{oops", "line 2 is not valid JSON"),
        ('"text"', "line 2 is not a JSON object"),
    ],
    ids=["very-deep", "just-too-deep", "huge-int", "bad-json", "not-an-object"],
)
def test_a_hostile_jsonl_line_is_named(tmp_path, line, problem):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "fine"}\n' + line + "\n")
    assert error_of(path).startswith(problem)


def test_a_jsonl_line_over_the_limit_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "MAX_VALUE_BYTES", 64)
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "fine"}\n{"prompt": "' + "x" * 60 + '"}\n')
    assert error_of(path) == "line 2: too long (more than 64 bytes in one line)"


def test_jsonl_keeps_only_the_mapped_columns(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"goal": "g", "target": ["t1", "t2"], "blob": list(range(1000))}) + "\n")
    rows = load_rows(path, {"prompt": "goal", "target": "target"})
    assert [(r.prompt, r.target) for r in rows] == [("g", "t1")]


def test_a_json_document_is_bounded(tmp_path, monkeypatch):
    path = tmp_path / "d.json"
    path.write_text('[{"prompt": "x", "deep": ' + nested(5000) + "}]")
    assert error_of(path) == "values nested more than 64 levels deep"
    path.write_text(json.dumps([{"prompt": "a"}, {"prompt": "b"}]))
    monkeypatch.setattr(datasets, "MAX_JSON_BYTES", 20)
    assert error_of(path) == "too large (more than 20 bytes)"


# -- Parquet ----------------------------------------------------------------------------------------
@pytest.fixture
def pq():
    return pytest.importorskip("pyarrow.parquet")


def test_garbage_truncated_and_empty_parquet_files_are_one_line(tmp_path, pq):
    import pyarrow as pa

    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"prompt": ["a", "b"]}), good)
    assert [r.prompt for r in load_rows(good)] == ["a", "b"]
    cases = {
        "garbage.parquet": bytes(range(256)) * 8,
        "truncated.parquet": good.read_bytes()[: good.stat().st_size // 2],
        "empty.parquet": b"",
        "magic-only.parquet": b"PAR1" + b"\x00" * 16 + b"PAR1",
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        assert error_of(path).startswith("not a readable Parquet file ("), name


def test_a_parquet_value_repeated_by_its_dictionary_is_bounded(tmp_path, pq, monkeypatch):
    """A small file whose one long value is repeated many times is refused before it is decoded."""
    import pyarrow as pa

    path = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"prompt": ["x" * 1000] * 50}), path, compression="zstd")
    assert path.stat().st_size < 5000
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 40_000)
    assert error_of(path) == "too large (more than 40000 bytes of data once decoded)"
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 60_000)
    assert len(load_rows(path)) == 50


def test_parquet_reads_only_the_mapped_columns(tmp_path, pq, monkeypatch):
    import pyarrow as pa

    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({"prompt": ["a", "b"], "blob": ["y" * 20_000, "z" * 20_000]}), path)
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 10_000)  # the blob alone is over it
    assert error_of(path).startswith("too large")  # declared uncompressed size counts every column
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 50_000)
    assert [r.prompt for r in load_rows(path)] == ["a", "b"]
    names, rows = datasets._read_parquet(path, ["prompt"])  # every name known, the blob never read
    assert (names, rows) == (["prompt", "blob"], [{"prompt": "a"}, {"prompt": "b"}])


def test_parquet_rows_are_capped(tmp_path, pq, monkeypatch):
    import pyarrow as pa

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"prompt": ["a", "b", "c"]}), path)
    monkeypatch.setattr(datasets, "MAX_ROWS", 2)
    assert error_of(path) == "too many rows (more than 2; sample or split the dataset)"


@pytest.mark.parametrize(("cell", "kind"), [({"role": "user", "content": "hi"}, "an object"), (["a", "b"], "a list")])
def test_a_prompt_that_is_not_text_is_refused_naming_its_row(tmp_path, cell, kind):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"prompt": "fine"}) + "\n" + json.dumps({"prompt": cell}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_rows(path)
    assert str(info.value) == f"{path}: row 2: the 'prompt' column (prompt) holds {kind}, not text"


def test_a_list_of_targets_keeps_its_first_and_numbers_are_text(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"q": 42, "answers": ["first", "second"]}) + "\n", encoding="utf-8")
    (row,) = load_rows(path, {"prompt": "q", "target": "answers"})
    assert (row.prompt, row.target) == ("42", "first")
