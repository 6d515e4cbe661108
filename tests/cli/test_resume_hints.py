"""Every ``redline scan --resume`` command that redline prints runs as printed: it carries
``--trust-settings`` when the run sends outside this process and ``--trust-code`` when it runs LVE
checker code (issue 35)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from helpers.cli import CliRun, cli_runner
from helpers.mock_openai import MockOpenAI
from redline.cli.budget import EXIT_BUDGET_STOPPED
from redline.cli.common import ERRORED_EXIT_CODE
from redline.cli.resume_trust import confirm_flags
from redline.engine import ScanConfig


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return cli_runner(monkeypatch, capsys)


def printed_command(lines: list[str], before: str) -> list[str]:
    """The arguments of the ``'redline scan --resume …'`` command quoted after ``before`` in ``lines``."""
    for line in lines:
        found = re.search(re.escape(before) + r" '(redline scan --resume [^']+)'", line)
        if found:
            argv = shlex.split(found.group(1))
            assert argv[0] == "redline"
            return argv[1:]
    raise AssertionError(f"no command after {before!r} in {lines}")


def test_the_retry_command_of_a_run_with_errored_attempts_runs_as_printed(cli, tmp_path):
    db = str(tmp_path / "r.db")
    with MockOpenAI(faults=lambda index, body: (500, {}, '{"error": "x"}') if index < 2 else None) as server:
        args = ("scan", "-m", "openai:m", "--base-url", server.base_url, "-p", "harmful.Requests", "--sample", "2")
        code, _, err = cli(*args, "--max-retries", "0", "--concurrency", "1", "--store", db)
        assert code == ERRORED_EXIT_CODE, err
        command = printed_command(err, "retry them with")
        assert command[-1] == "--trust-settings"

        code, out, err = cli(*command, "--json")
    assert code == 0, err
    assert json.loads(out)["errored"] == 0


def test_the_continue_command_of_a_run_its_budget_stopped_runs_as_printed(cli, tmp_path):
    db = str(tmp_path / "b.db")
    with MockOpenAI() as server:
        args = ("scan", "-m", "openai:m", "--base-url", server.base_url, "-p", "harmful.Requests", "--sample", "3")
        code, _, err = cli(*args, "--max-requests", "1", "--concurrency", "1", "--store", db)
        assert code == EXIT_BUDGET_STOPPED, err
        command = printed_command(err, "continue with")
        assert "--trust-settings" in command

        code, out, err = cli(*command, "--json")
    assert code == 0, err
    assert json.loads(out)["attempts"] == 3


def test_a_run_that_runs_checker_code_is_resumed_with_trust_code_and_a_local_run_with_no_flag():
    assert confirm_flags(ScanConfig(model="test.echo", lve_paths=["x"], trust_code=True)) == ["--trust-code"]
    assert confirm_flags(ScanConfig(model="test.echo", probes="encoding.Hex")) == []
    assert confirm_flags(ScanConfig(model="openai:m", generator_options={"base_url": "http://127.0.0.1:1/v1"})) == [
        "--trust-settings"
    ]
