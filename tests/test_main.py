"""``redline.__main__``: the console script's and ``python -m redline``'s entry."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def test_the_command_lines_modules_are_frozen_out_of_the_collector_and_it_runs_again() -> None:
    enabled, frozen = _python("import gc, redline.__main__; print(gc.isenabled(), gc.get_freeze_count())").split()
    assert enabled == "True"
    assert int(frozen) > 10_000  # typer's, rich's and redline's objects: out of every later pass


def test_a_library_import_leaves_the_collector_as_it_is() -> None:
    assert _python("import gc, redline.cli.main; print(gc.isenabled(), gc.get_freeze_count())") == "True 0"


def test_the_console_script_enters_through_it() -> None:
    scripts = [ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == "redline"]
    if not scripts:
        pytest.skip("redline is not installed (no console script)")
    assert [ep.value for ep in scripts] == ["redline.__main__:main"]


def test_python_dash_m_runs_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "redline", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert "Probe large language models" in done.stdout
