"""Files the CLI writes (reports, exports): a link or a device at the path is written through, never replaced."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from redline.cli.report import write_file
from redline.errors import UsageError


def test_a_pipe_at_the_output_path_is_written_into_and_stays_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "out.pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so that opening it to write does not wait
    try:
        write_file(fifo, ["hello ", "pipe"])
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert os.read(reader, 100) == b"hello pipe"
    finally:
        os.close(reader)


def test_a_symbolic_link_at_the_output_path_keeps_pointing_at_the_file_written(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    real = tmp_path / "site" / "report.html"
    real.write_text("old")
    link = tmp_path / "report.html"
    link.symlink_to(real)
    write_file(link, ["new"])
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_text() == "new"
    assert [p.name for p in (tmp_path / "site").iterdir()] == ["report.html"]  # no temporary file left


def test_a_folder_or_a_missing_folder_at_the_output_path_is_one_error_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="it is a folder"):
        write_file(tmp_path, ["x"])
    with pytest.raises(UsageError, match="does not exist"):
        write_file(tmp_path / "missing" / "out.json", ["x"])
