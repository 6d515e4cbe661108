"""``redline.__main__``: the console script's and ``python -m redline``'s entry."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest


def test_the_console_script_enters_through_it() -> None:
    scripts = [ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == "redline"]
    if not scripts:
        pytest.skip("redline is not installed (no console script)")
    assert [ep.value for ep in scripts] == ["redline.__main__:main"]


def test_python_dash_m_runs_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "redline", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert "Probe large language models" in done.stdout


def test_a_scan_whose_output_streams_are_ascii_escapes_what_they_cannot_encode(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDLINE_DEBUG"} | {"PYTHONIOENCODING": "ascii"}
    command = [sys.executable, "-m", "redline", "scan", "-m", "test.echo", "-p", "encoding.Base64", "--sample", "2"]
    done = subprocess.run(
        [*command, "--store", str(tmp_path / "s.db")], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode in (0, 3), done.stderr
    assert "internal error" not in done.stderr
    assert "\\xb7" in done.stdout + done.stderr  # the summary's separator, escaped
