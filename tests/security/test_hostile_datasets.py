"""A dataset from someone else costs at most its own refusal (issue 35, part 4).

* A 4.6 KiB Parquet file whose nested column repeats one long value through its dictionary once
  decoded to 1.4 GB in memory past every size check: it is refused in one line, before its
  values are made, whether the value sits in a list, a struct in a list, or a map.
* A FIFO (or a device) given as a dataset, or found in a dataset folder, blocked the scan forever
  on open: it is refused at once, without being opened.
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

import pytest

import redline.datasets as datasets
from redline.cli.main import main
from redline.datasets import DatasetError, load_rows

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS, PER_ROW, LENGTH = 1000, 1400, 1000  # 1.4 million uses of one 1,000-character value: 1.4 GB


def repeated_value() -> pa.DictionaryArray:
    """One long text, used ROWS * PER_ROW times through a dictionary (the indices are all 0)."""
    indices = pa.array([0] * (ROWS * PER_ROW), type=pa.int32())
    return pa.DictionaryArray.from_arrays(indices, pa.array(["x" * LENGTH]))


def offsets() -> pa.Array:
    return pa.array(range(0, ROWS * PER_ROW + 1, PER_ROW), type=pa.int32())


def write_bomb(path: Path, column: pa.Array) -> Path:
    pq.write_table(pa.table({"prompt": column}), path, compression="zstd")
    return path


BOMBS = {
    "list": lambda: pa.ListArray.from_arrays(offsets(), repeated_value()),
    "struct in a list": lambda: pa.ListArray.from_arrays(
        offsets(), pa.StructArray.from_arrays([repeated_value()], names=["text"])
    ),
    "map": lambda: pa.MapArray.from_arrays(
        offsets(), pa.array([0] * (ROWS * PER_ROW), type=pa.int32()), repeated_value()
    ),
}


def one_line_error(source: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_rows(source)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{source}"), message
    return message


def peak_rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


@pytest.mark.parametrize("shape", list(BOMBS))
def test_a_tiny_parquet_file_decoding_to_gigabytes_is_refused_in_one_line(tmp_path, shape):
    path = write_bomb(tmp_path / "bomb.parquet", BOMBS[shape]())
    assert path.stat().st_size < 16 * 1024
    before = peak_rss_mib()
    message = one_line_error(path)
    assert message == f"{path}: too large (more than 256 MiB of data once decoded)"
    assert peak_rss_mib() - before < 512  # the 1.4 GB of repetitions were never made


def test_the_same_shapes_of_a_sane_size_are_read(tmp_path):
    path = tmp_path / "fine.parquet"
    nested = pa.array([[{"text": "hello"}], [{"text": "bye"}]])
    table = {"prompt": pa.array(["hi", "bye"]), "nested": nested, "other": pa.array([["a", "b"], ["c"]])}
    pq.write_table(pa.table(table), path)
    rows = load_rows(path, {"target": "other"})
    assert [(r.prompt, r.target) for r in rows] == [("hi", "a"), ("bye", "c")]
    with pytest.raises(DatasetError, match="row 1: the 'nested' column \\(prompt\\) holds a list, not text"):
        load_rows(path, {"prompt": "nested"})


def test_a_parquet_file_declaring_more_values_than_the_bound_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "many.parquet"
    pq.write_table(pa.table({"prompt": pa.array([["a"] * 100] * 10)}), path)
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 1000)  # 1,000 values take 4,000 bytes at least
    monkeypatch.setattr(datasets, "_decoded_size", None)  # no batch is decoded: the metadata says enough
    assert one_line_error(path) == f"{path}: too large (more than 1000 bytes of data once decoded)"


@pytest.mark.parametrize("name", ["prompts.csv", "prompts.jsonl", "prompts.parquet", "prompts.json"])
def test_a_fifo_given_as_a_dataset_is_refused_without_being_opened(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)  # nobody writes to it: opening it to read would block forever
    assert one_line_error(fifo) == f"{fifo}: not a regular file (a FIFO, device or socket is not read as a dataset)"


def test_a_fifo_inside_a_dataset_folder_is_refused_naming_it(tmp_path):
    folder = tmp_path / "data"
    (folder / "train").mkdir(parents=True)
    (folder / "train" / "a.csv").write_text("prompt\nhello\n")
    os.mkfifo(folder / "train" / "b.csv")
    message = one_line_error(folder)
    assert message == f"{folder}: train/b.csv: not a regular file (a FIFO, device or socket is not read as a dataset)"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_device_given_as_a_dataset_is_refused():
    assert "not a regular file" in one_line_error(Path("/dev/zero"))


def test_a_scan_given_a_fifo_as_its_dataset_stops_at_once_with_that_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    fifo = tmp_path / "prompts.csv"
    os.mkfifo(fifo)
    with pytest.raises(SystemExit) as exited:
        main(["scan", "-m", "test.blank", "--dataset", str(fifo), "--store", str(tmp_path / "s.db")])
    assert exited.value.code not in (0, None)
    out = capsys.readouterr()
    assert "not a regular file" in out.out + out.err
