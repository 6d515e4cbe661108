"""The executor keys of a scan configuration (``executor``, ``ray_address``, ``workers``,
``gpus_per_worker``) and their flags: one :class:`ExecutorConfig` next to the ScanConfig, never in it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from redline.engine import ConfigError, ScanConfig, build_scan_config, load_config
from redline.engine.config_file import build_executor_config
from redline.engine.executors import ExecutorConfig
from redline.errors import UsageError

NOT_GIVEN = {"executor": None, "ray_address": None, "workers": None, "gpus_per_worker": None}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scan.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def flags(**given: object) -> dict[str, object]:
    return {**NOT_GIVEN, **given}


def test_a_file_with_the_ray_keys_gives_a_ray_executor_and_the_same_scan_config(tmp_path):
    values = load_config(
        write(
            tmp_path,
            """
            model: test.echo
            probes: encoding.Hex
            executor: ray
            ray_address: 10.0.0.1:6379
            workers: 4
            gpus_per_worker: 1
            """,
        )
    )
    assert build_executor_config(values, flags()) == ExecutorConfig(
        kind="ray", ray_address="10.0.0.1:6379", workers=4, gpus_per_worker=1.0
    )
    # how the run executes is not what it is: the ScanConfig (stored with the run) does not change
    plain = load_config(write(tmp_path, "model: test.echo\nprobes: encoding.Hex\n"))
    assert build_scan_config(values, {}, {}).as_dict() == build_scan_config(plain, {}, {}).as_dict()
    stored = set(ScanConfig().as_dict())
    assert not stored & {"executor", "ray_address", "workers", "gpus_per_worker"}


def test_no_executor_anywhere_is_the_local_executor(tmp_path):
    values = load_config(write(tmp_path, "model: test.echo\n"))
    assert build_executor_config(values, flags()) == ExecutorConfig()
    assert build_executor_config({}, flags(executor="local")) == ExecutorConfig(kind="local")
    assert load_config(write(tmp_path, "executor: local\n")) == {"executor": "local"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("executor: spark\n", "executor must be local or ray, not 'spark'"),
        ("executor: [ray]\n", "executor must be local or ray, not ['ray']"),
        ("executor: ray\nworkers: 0\n", "workers must be an integer from 1 to 1024, not 0"),
        ("executor: ray\nworkers: 1025\n", "workers must be an integer from 1 to 1024, not 1025"),
        (
            "executor: ray\nworkers: 1000000000000000000000\n",
            "workers must be an integer from 1 to 1024, not 1000000000000000000000",
        ),
        ("executor: ray\nworkers: true\n", "workers must be an integer from 1 to 1024, not True"),
        ("executor: ray\nworkers: 2.5\n", "workers must be an integer from 1 to 1024, not 2.5"),
        ("executor: ray\ngpus_per_worker: -1\n", "gpus_per_worker must be a number from 0 to 64, not -1"),
        ("executor: ray\ngpus_per_worker: .nan\n", "gpus_per_worker must be a number from 0 to 64, not nan"),
        ("executor: ray\ngpus_per_worker: .inf\n", "gpus_per_worker must be a number from 0 to 64, not inf"),
        ("executor: ray\ngpus_per_worker: one\n", "gpus_per_worker must be a number from 0 to 64, not 'one'"),
        (
            "executor: ray\ngpus_per_worker: 1.5\n",
            "gpus_per_worker must be a whole number above 1 (fractions share one GPU), not 1.5",
        ),
        ("executor: ray\nray_address: ''\n", "ray_address must be a non-empty string, not ''"),
        ("workers: 2\n", "workers needs executor: ray"),
        ("executor: local\nworkers: 2\ngpus_per_worker: 1\n", "workers, gpus_per_worker need executor: ray"),
        ("ray_adress: h:1\n", "unknown key 'ray_adress' (did you mean 'ray_address'?)"),
    ],
)
def test_a_bad_executor_key_is_one_line_naming_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: {message}"


def test_flags_override_the_file(tmp_path):
    values = load_config(write(tmp_path, "executor: ray\nworkers: 4\nray_address: h:1\n"))
    assert build_executor_config(values, flags(workers=2, gpus_per_worker=0.5)) == ExecutorConfig(
        kind="ray", ray_address="h:1", workers=2, gpus_per_worker=0.5
    )
    # --executor local overrides the file's ray, and its Ray keys with it
    assert build_executor_config(values, flags(executor="local")) == ExecutorConfig()
    # --executor ray on the command line, the rest from the flags
    assert build_executor_config({}, flags(executor="ray", ray_address=" auto ")) == ExecutorConfig(
        kind="ray", ray_address="auto"
    )


@pytest.mark.parametrize(
    "given, file, message",
    [
        (flags(workers=2), {}, "--workers needs --executor ray"),
        (flags(ray_address="h:1", gpus_per_worker=1.0), {}, "--ray-address, --gpus-per-worker need --executor ray"),
        (flags(executor="local", workers=2), {"executor": "ray"}, "--workers needs --executor ray"),
        (flags(workers=2), {"executor": "local"}, "--workers needs --executor ray"),
        (flags(executor="ray", ray_address="  "), {}, "--ray-address is empty"),
        (
            flags(executor="ray", gpus_per_worker=float("nan")),
            {},
            "--gpus-per-worker must be a number from 0 to 64, not nan",
        ),
        (
            flags(executor="ray", gpus_per_worker=float("inf")),
            {},
            "--gpus-per-worker must be a number from 0 to 64, not inf",
        ),
        (flags(executor="ray", gpus_per_worker=2.5), {}, "--gpus-per-worker must be a whole number above 1"),
        (flags(executor="ray", workers=1025), {}, "--workers must be an integer from 1 to 1024, not 1025"),
    ],
)
def test_a_ray_flag_without_ray_is_a_usage_error_naming_it(given, file, message):
    with pytest.raises(UsageError) as info:
        build_executor_config(file, given)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_whole_gpus_above_one_and_fractions_below_are_taken(tmp_path):
    values = load_config(write(tmp_path, "executor: ray\ngpus_per_worker: 2\nworkers: 1024\n"))
    assert build_executor_config(values, flags()) == ExecutorConfig(kind="ray", workers=1024, gpus_per_worker=2.0)
    assert build_executor_config({}, flags(executor="ray", gpus_per_worker=0.25)).gpus_per_worker == 0.25


def test_a_ray_flag_with_the_files_executor_ray_is_taken(tmp_path):
    values = load_config(write(tmp_path, "executor: ray\n"))
    assert build_executor_config(values, flags(workers=3)) == ExecutorConfig(kind="ray", workers=3)


def test_the_removed_processes_key_says_what_to_write_instead(tmp_path):
    path = write(tmp_path, "model: test.echo\nprocesses: 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: processes: was removed; use executor: ray with workers: N"
