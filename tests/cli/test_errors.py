"""How the command line tells an expected error from a bug: by the exception's type.

A :class:`~redline.errors.RedlineError` (or an :class:`OSError`) escaping a command is printed as
one ``error: …`` line with exit status 1; any other exception is a bug in redline, printed as
``error: internal error …`` with exit status 70. The exceptions are raised in-process from a
patched step of a real command, so the whole path (command → ``report_exception`` → exit status)
is exercised.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil

import pytest

import redline
import redline.cli.lve as lve_cli
import redline.engine.pipeline as pipeline
from redline.cli.common import EXIT_INTERNAL_ERROR, EXIT_USER_ERROR
from redline.cli.main import main
from redline.detectors.judge import Rubric
from redline.errors import RedlineError, UsageError
from redline.lve.checkers.consistency import MonotonicityChecker
from redline.lve.checkers.match import FuzzyMatchChecker
from redline.lve.checkers.regex import RegexChecker
from redline.probes import get_probe

MESSAGE = "stage problem: the first line names it\nand a second line that must not be printed"


@functools.cache
def redline_exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the ``redline`` package, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(redline.__path__, "redline."):
        if info.name.rsplit(".", 1)[-1] == "__main__":  # importing it would run the CLI
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("redline"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def expected_error_classes() -> list[type[BaseException]]:
    classes = [cls for cls in redline_exception_classes().values() if issubclass(cls, RedlineError)]
    return sorted(classes, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """``run_cli(*args)`` → (exit status, non-empty stderr lines) of ``redline ARGS`` in-process."""
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")  # main() sets it otherwise, for the rest of the session

    def run(*args: str) -> tuple[int, list[str]]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        captured = capsys.readouterr()
        return exit_info.value.code, [line for line in captured.err.splitlines() if line.strip()]

    return run


def fail_in_pipeline(monkeypatch, exc: BaseException) -> None:
    """Make the scan's probe-building step (engine stage) raise ``exc``."""

    def build_probes(config):
        raise exc

    monkeypatch.setattr(pipeline, "build_probes", build_probes)


def scan_args(tmp_path) -> list[str]:
    return ["scan", "-m", "test.echo", "-p", "encoding.Hex", "--store", str(tmp_path / "r.db")]


def test_every_expected_error_class_is_found():
    """The collection below is not empty by accident: classes of several stages are in it."""
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in expected_error_classes()}
    assert {
        "redline.errors.UsageError",
        "redline.engine.pipeline.ScanError",
        "redline.lve.errors.LVEFormatError",
        "redline.detectors.base.DetectorUnavailable",
        "redline.plugins.UnknownPluginError",
    } <= names


@pytest.mark.parametrize("cls", expected_error_classes(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_a_redline_error_from_any_stage_is_one_line_and_exit_1(tmp_path, monkeypatch, run_cli, cls):
    fail_in_pipeline(monkeypatch, cls(MESSAGE))
    code, lines = run_cli(*scan_args(tmp_path))
    assert code == EXIT_USER_ERROR == 1
    assert lines == ["error: stage problem: the first line names it"]


def test_an_os_error_is_one_line_and_exit_1(tmp_path, monkeypatch, run_cli):
    fail_in_pipeline(monkeypatch, FileNotFoundError(2, "No such file or directory", "/nowhere/data.csv"))
    code, lines = run_cli(*scan_args(tmp_path))
    assert code == 1
    assert lines == ["error: [Errno 2] No such file or directory: '/nowhere/data.csv'"]


def test_a_plain_exception_is_an_internal_error_exit_70(tmp_path, monkeypatch, run_cli):
    fail_in_pipeline(monkeypatch, KeyError("probe_options"))
    code, lines = run_cli(*scan_args(tmp_path))
    assert code == EXIT_INTERNAL_ERROR == 70
    assert lines == ["error: internal error KeyError: 'probe_options' (set REDLINE_DEBUG=1 for the traceback)"]


def test_the_decision_is_by_type_not_by_module(tmp_path, monkeypatch, run_cli):
    """A class that claims a redline module but is no RedlineError is still a bug."""

    class Stray(RuntimeError):
        pass

    Stray.__module__ = "redline.engine.pipeline"
    fail_in_pipeline(monkeypatch, Stray("not raised on purpose"))
    code, lines = run_cli(*scan_args(tmp_path))
    assert code == 70
    assert lines == ["error: internal error Stray: not raised on purpose (set REDLINE_DEBUG=1 for the traceback)"]


def test_redline_debug_prints_the_traceback(tmp_path, monkeypatch, run_cli):
    fail_in_pipeline(monkeypatch, KeyError("probe_options"))
    monkeypatch.setenv("REDLINE_DEBUG", "1")
    code, lines = run_cli(*scan_args(tmp_path))
    assert code == 70
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1].startswith("error: internal error KeyError")


def test_lve_commands_decide_the_same_way(tmp_path, monkeypatch, run_cli):
    """``redline lve …`` reports through the same function: a UsageError of its own (exit 1),
    a RedlineError of the LVE stage (exit 1), a plain exception (exit 70)."""
    code, lines = run_cli("lve", "verify", str(tmp_path / "missing"))
    assert (code, lines) == (1, [f"error: {tmp_path / 'missing'}: no such file or folder"])

    from redline.lve.errors import LVEFormatError

    def verify_format_error(path, trust_code=False, pool=None):
        raise LVEFormatError(f"{path}/test.json:3: 'checker_args' needs a 'checker_name'")

    monkeypatch.setattr(lve_cli, "run_verify", verify_format_error)
    code, lines = run_cli("lve", "verify", str(tmp_path))
    assert (code, lines) == (1, [f"error: {tmp_path}/test.json:3: 'checker_args' needs a 'checker_name'"])

    def verify_bug(path, trust_code=False, pool=None):
        raise AttributeError("'NoneType' object has no attribute 'checker'")

    monkeypatch.setattr(lve_cli, "run_verify", verify_bug)
    code, lines = run_cli("lve", "verify", str(tmp_path))
    assert code == 70
    assert lines == [
        "error: internal error AttributeError: 'NoneType' object has no attribute 'checker' "
        "(set REDLINE_DEBUG=1 for the traceback)"
    ]


# Constructors that reject a value a user wrote (an LVE's checker_args, --detector-opt,
# probe_options): (id, what to call, the message it must give).
BAD_VALUES = [
    ("regex flags", lambda: RegexChecker("x", match_safe=True, flags="Q"), "unknown regex flag 'Q'"),
    ("regex match_safe", lambda: RegexChecker("x", match_safe="yes"), "match_safe must be true or false"),
    ("fuzzy threshold", lambda: FuzzyMatchChecker("text", threshold=2), "threshold must be between 0 and 1"),
    ("monotonicity order", lambda: MonotonicityChecker(order="up"), "order must be 'asc' or 'desc'"),
    ("judge rubric", lambda: Rubric(rubric="  "), "the rubric option is empty"),
    (
        "num_repetitions",
        lambda: get_probe("harmful.Requests", num_repetitions=-1),
        "num_repetitions must be at least 1",
    ),
]


@pytest.mark.parametrize("make, message", [row[1:] for row in BAD_VALUES], ids=[row[0] for row in BAD_VALUES])
def test_bad_user_values_raise_redline_errors_that_are_still_value_errors(make, message):
    with pytest.raises(RedlineError, match=message) as info:
        make()
    assert isinstance(info.value, ValueError)  # callers' ``except ValueError`` still catch it


def test_usage_error_is_a_value_error():
    """Existing ``except ValueError`` clauses around option parsing keep catching it."""
    assert issubclass(UsageError, RedlineError) and issubclass(UsageError, ValueError)


def test_every_exception_class_redline_defines_is_a_redline_error():
    """One base for every error raised on purpose, so the CLI can decide by type (see
    :mod:`redline.errors`). An exception class that is not one would be reported as a bug."""
    stray = sorted(name for name, cls in redline_exception_classes().items() if not issubclass(cls, RedlineError))
    assert stray == []
