"""``redline scan --executor local|ray --ray-address --workers --gpus-per-worker``: the flags reach
the engine as an ExecutorConfig (never stored with the run), mistakes are one line, and without
Ray ``--executor ray`` names the install command before any run is created. No Ray cluster here:
the equality of the two executors is tests/engine/test_ray_executor.py's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import redline.cli.scan_run as scan_run
from helpers.cli import CliRun, cli_runner
from redline.engine.executors import ExecutorConfig
from redline.store import Store

INSTALL_LINE = "error: --executor ray needs Ray: pip install 'redline[ray]'"
SCAN = ("scan", "-m", "test.echo", "-p", "encoding.Hex", "--sample", "3", "--json")


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    return cli_runner(monkeypatch, capsys)


@pytest.fixture
def seen(monkeypatch) -> list[Any]:
    """The ``executor`` each scan of the test is given; the scan itself runs locally, and Ray is
    taken as installed (this test is about the plumbing, not about Ray)."""
    executors: list[Any] = []
    real_scan = scan_run.scan

    async def recording_scan(*args: Any, executor: ExecutorConfig | None = None, **kwargs: Any) -> str:
        executors.append(executor)
        return await real_scan(*args, **kwargs)

    monkeypatch.setattr(scan_run, "scan", recording_scan)
    monkeypatch.setattr(scan_run, "import_ray", lambda: None)
    return executors


def summary_without_run(out: str) -> dict[str, Any]:
    data = json.loads(out)
    # "cached": a second identical scan is answered from the response cache
    return {k: v for k, v in data.items() if k not in ("run_id", "created", "finished", "duration", "cached")}


def stored_config(db: Path, run_id: str) -> dict[str, Any]:
    with Store(db) as store:
        return store.get_run(run_id).scan


def test_the_flags_reach_the_scan_and_are_not_stored_with_the_run(cli, seen, tmp_path):
    db = tmp_path / "r.db"
    code, out, err = cli(*SCAN, "--store", str(db))
    assert code == 0, err
    local = json.loads(out)
    code, out, err = cli(
        *SCAN, "--store", str(db), "--executor", "ray", "--ray-address", "127.0.0.1:6379",
        "--workers", "2", "--gpus-per-worker", "0.5",
    )  # fmt: skip
    assert code == 0, err
    assert seen == [
        ExecutorConfig(),
        ExecutorConfig(kind="ray", ray_address="127.0.0.1:6379", workers=2, gpus_per_worker=0.5),
    ]
    ray = json.loads(out)
    assert summary_without_run(out) == summary_without_run(json.dumps(local))
    assert stored_config(db, ray["run_id"]) == stored_config(db, local["run_id"])


def test_the_config_files_executor_reaches_the_scan_and_flags_override_it(cli, seen, tmp_path):
    config = tmp_path / "scan.yaml"
    config.write_text("model: test.echo\nprobes: encoding.Hex\nsample: 2\nexecutor: ray\nworkers: 4\n")
    db = str(tmp_path / "r.db")
    assert cli("scan", "--config", str(config), "--store", db, "--json")[0] == 0
    assert cli("scan", "--config", str(config), "--store", db, "--json", "--workers", "2")[0] == 0
    assert cli("scan", "--config", str(config), "--store", db, "--json", "--executor", "local")[0] == 0
    assert seen == [
        ExecutorConfig(kind="ray", workers=4),
        ExecutorConfig(kind="ray", workers=2),
        ExecutorConfig(),
    ]


def test_resume_takes_the_executor_flags(cli, seen, tmp_path):
    db = str(tmp_path / "r.db")
    code, out, err = cli(*SCAN, "--store", db)
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    code, out, err = cli("scan", "--resume", run_id, "--store", db, "--json", "--executor", "ray", "--workers", "3")
    assert code == 0, err
    assert json.loads(out)["run_id"] == run_id
    assert seen[-1] == ExecutorConfig(kind="ray", workers=3)


@pytest.mark.parametrize(
    "extra, line",
    [
        (("--workers", "2"), "error: --workers needs --executor ray"),
        (("--executor", "local", "--gpus-per-worker", "1"), "error: --gpus-per-worker needs --executor ray"),
        (
            ("--ray-address", "h:1", "--workers", "2"),
            "error: --ray-address, --workers need --executor ray",
        ),
        (("--executor", "ray", "--ray-address", ""), "error: --ray-address is empty"),
        (("--executor", "spark"), "error: invalid value for '--executor': 'spark' is not one of"),
        (("--executor", "ray", "--workers", "0"), "error: invalid value for '--workers'"),
        (("--executor", "ray", "--gpus-per-worker", "-1"), "error: invalid value for '--gpus-per-worker'"),
        (
            ("--executor", "ray", "--gpus-per-worker", "1.5"),
            "error: --gpus-per-worker must be a whole number above 1 (fractions share one GPU), not 1.5",
        ),
        (("--executor", "ray", "--workers", "5000"), "error: --workers must be an integer from 1 to 1024, not 5000"),
        (("--executor", "ray", "--gpus-per-worker", "nan"), "error: "),  # typer's or our range check
        (
            ("--executor", "ray", "--gpus-per-worker", "inf"),
            "error: --gpus-per-worker must be a number from 0 to 64, not inf",
        ),
    ],
)
def test_an_executor_mistake_is_one_line_before_anything_runs(cli, tmp_path, extra, line):
    db = tmp_path / "r.db"
    code, out, err = cli(*SCAN, "--store", str(db), *extra)
    assert (code, out) == (1, "")
    assert len(err) == 1 and err[0].startswith(line), err
    assert extra[-2] in err[0]  # the line names the option
    assert not db.exists()  # no store, no run


def test_a_ray_flag_without_ray_is_refused_with_resume_too(cli, tmp_path):
    db = str(tmp_path / "r.db")
    code, out, err = cli(*SCAN, "--store", db)
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    code, out, err = cli("scan", "--resume", run_id, "--store", db, "--workers", "2")
    assert (code, out, err) == (1, "", ["error: --workers needs --executor ray"])


def test_a_config_files_ray_key_without_executor_ray_is_one_line_naming_the_file(cli, tmp_path):
    config = tmp_path / "scan.yaml"
    config.write_text("model: test.echo\nworkers: 2\n")
    code, out, err = cli("scan", "--config", str(config), "--store", str(tmp_path / "r.db"))
    assert (code, out, err) == (1, "", [f"error: {config}: workers needs executor: ray"])


@pytest.fixture
def without_ray(monkeypatch):
    """``import ray`` fails, as on a machine without the extra."""
    monkeypatch.setitem(sys.modules, "ray", None)


def test_without_ray_executor_ray_is_one_line_with_the_install_command_and_no_run(cli, without_ray, tmp_path):
    db = tmp_path / "r.db"
    code, out, err = cli(*SCAN, "--store", str(db), "--executor", "ray", "--workers", "2")
    assert (code, out, err) == (1, "", [INSTALL_LINE])
    assert not db.exists()
    config = tmp_path / "scan.yaml"
    config.write_text("model: test.echo\nprobes: encoding.Hex\nexecutor: ray\n")
    code, out, err = cli("scan", "--config", str(config), "--store", str(db))
    assert (code, out, err) == (1, "", [INSTALL_LINE])
    assert not db.exists()


def test_without_ray_a_resume_on_ray_leaves_the_run_as_it_was(cli, without_ray, tmp_path):
    db = tmp_path / "r.db"
    code, out, err = cli(*SCAN, "--store", str(db))  # the local executor needs no Ray
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    with Store(db) as store:
        before = store.get_run(run_id)
    code, out, err = cli("scan", "--resume", run_id, "--store", str(db), "--executor", "ray")
    assert (code, out, err) == (1, "", [INSTALL_LINE])  # no "the run can be continued" hint
    with Store(db) as store:
        assert store.get_run(run_id) == before


def test_help_lists_the_executor_flags(cli):
    code, out, _ = cli("scan", "--help")
    assert code == 0
    for flag in ("--executor", "--ray-address", "--workers", "--gpus-per-worker"):
        assert flag in out


def test_the_removed_processes_flag_and_key_are_one_line_each(cli, tmp_path):
    db = tmp_path / "r.db"
    code, out, err = cli(*SCAN, "--store", str(db), "--processes", "2")
    assert (code, out) == (1, "") and len(err) == 1 and "no such option: --processes" in err[0], err
    config = tmp_path / "scan.yaml"
    config.write_text("model: test.echo\nprocesses: 2\n")
    code, out, err = cli("scan", "--config", str(config), "--store", str(db))
    assert (code, out, err) == (1, "", [f"error: {config}: processes: was removed; use executor: ray with workers: N"])
    assert not db.exists()
