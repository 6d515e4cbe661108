"""Hostile executor settings (a shared scan.yaml or a pasted command line): actor counts and GPU
amounts Ray cannot take or that would make the driver ask for millions of actors, values of the
wrong type, NaN and infinity. Each ends ``redline scan`` at once with exit status 1 and one
``error:`` line naming the file and key (or the flag), before a store or a Ray instance exists:
never a traceback, an "internal error" (70) or a scan that waits forever for resources."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.cli import CliRun, cli_runner


@pytest.fixture
def run_cli(monkeypatch, capsys) -> CliRun:
    return cli_runner(monkeypatch, capsys)


HOSTILE_FILES = [
    ("workers: 99999999999999999999", "workers must be an integer from 1 to 1024"),
    ("workers: -3", "workers must be an integer from 1 to 1024"),
    ("workers: {a: 1}", "workers must be an integer from 1 to 1024"),
    ("gpus_per_worker: .nan", "gpus_per_worker must be a number from 0 to 64, not nan"),
    ("gpus_per_worker: -.inf", "gpus_per_worker must be a number from 0 to 64, not -inf"),
    ("gpus_per_worker: 1.000001", "gpus_per_worker must be a whole number above 1"),
    ("gpus_per_worker: [1]", "gpus_per_worker must be a number from 0 to 64"),
    ("ray_address: [a, b]", "ray_address must be a non-empty string"),
]


@pytest.mark.parametrize("line, problem", HOSTILE_FILES, ids=[line for line, _ in HOSTILE_FILES])
def test_a_hostile_executor_key_is_one_line_naming_the_file(tmp_path, run_cli, line, problem):
    config = tmp_path / "scan.yaml"
    config.write_text(f"model: test.echo\nexecutor: ray\n{line}\n")
    db = tmp_path / "r.db"
    code, out, err = run_cli("scan", "--config", str(config), "--store", str(db))
    assert (code, out) == (1, "")
    assert len(err) == 1 and err[0].startswith(f"error: {config}: {problem}"), err
    assert not Path(db).exists()


HOSTILE_FLAGS = [
    (("--workers", "100000000"), "error: --workers must be an integer from 1 to 1024"),
    (("--gpus-per-worker", "inf"), "error: --gpus-per-worker must be a number from 0 to 64, not inf"),
    (("--gpus-per-worker", "1e300"), "error: --gpus-per-worker must be a number from 0 to 64, not 1e+300"),
    (("--gpus-per-worker", "65"), "error: --gpus-per-worker must be a number from 0 to 64, not 65.0"),
    (("--ray-address", " \t "), "error: --ray-address is empty"),
]


@pytest.mark.parametrize("flags, line", HOSTILE_FLAGS, ids=[" ".join(f) for f, _ in HOSTILE_FLAGS])
def test_a_hostile_executor_flag_is_one_line(tmp_path, run_cli, flags, line):
    db = tmp_path / "r.db"
    code, out, err = run_cli("scan", "-m", "test.echo", "--executor", "ray", *flags, "--store", str(db))
    assert (code, out) == (1, "")
    assert len(err) == 1 and err[0].startswith(line), err
    assert not db.exists()
