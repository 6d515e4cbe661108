"""Every ``redline scan --resume`` command that redline prints runs as printed: it carries
``--trust-settings`` when the run sends outside this process and ``--trust-code`` when it runs LVE
checker code (issue 35), and names the store when it is not the default one, in the terminal, the
HTML report and ``redline view`` alike (issue 36)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.cli import CliRun, cli_runner
from helpers.html_dom import Node, parse
from helpers.mock_openai import MockOpenAI
from helpers.view_runs import client_for
from redline.cli.budget import EXIT_BUDGET_STOPPED
from redline.cli.common import ERRORED_EXIT_CODE
from redline.cli.resume_trust import confirm_flags
from redline.engine import ScanConfig
from redline.report.resume import DEFAULT_STORE, resume_args, resume_command


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


@pytest.fixture
def errored_run(cli, tmp_path) -> Iterator[tuple[str, str]]:
    """(store path, run id) of a run whose two attempts errored, sent to a mock endpoint that
    answers from then on, in a store whose path has a space in it (not the default store)."""
    folder = tmp_path / "my runs"
    folder.mkdir()
    db = str(folder / "r.db")
    with MockOpenAI(faults=lambda index, body: (500, {}, '{"error": "x"}') if index < 2 else None) as server:
        args = ("scan", "-m", "openai:m", "--base-url", server.base_url, "-p", "harmful.Requests", "--sample", "2")
        code, out, err = cli(*args, "--max-retries", "0", "--concurrency", "1", "--store", db, "--json")
        assert code == ERRORED_EXIT_CODE, err
        yield db, json.loads(out)["run_id"]


def retry_shown(code: Node) -> list[str]:
    """The arguments after ``redline`` of the retry command a page shows in ``code``."""
    argv = shlex.split(code.text)
    assert argv[:3] == ["redline", "scan", "--resume"], code.text
    return argv[1:]


def assert_retries_as_printed(cli: CliRun, command: list[str], db: str) -> None:
    """``command`` names the store ``db`` and confirms the run's endpoint, and run as printed it
    asks the model again for every errored attempt."""
    assert command[command.index("--store") + 1] == db
    assert "--retry-errors" in command and command[-1] == "--trust-settings"
    code, out, err = cli(*command, "--json")
    assert code == 0, err
    assert json.loads(out)["errored"] == 0


def test_the_html_report_of_a_run_with_errored_attempts_retries_them_in_its_store_as_printed(
    cli, errored_run, tmp_path
):
    db, run_id = errored_run
    page = tmp_path / "report.html"
    code, _, err = cli("report", run_id, "--html", str(page), "--store", db)
    assert code == 0, err
    (shown,) = [c for c in parse(page.read_text()).select("section#errors code") if c.text.startswith("redline ")]
    assert_retries_as_printed(cli, retry_shown(shown), db)


def test_the_view_page_of_a_run_with_errored_attempts_retries_them_in_its_store_as_printed(cli, errored_run):
    db, run_id = errored_run
    response = client_for(Path(db)).get(f"/runs/{run_id}")
    assert response.status_code == 200, response.text[:500]
    assert_retries_as_printed(cli, retry_shown(parse(response.text).one("#live code")), db)


def test_the_markdown_export_of_a_run_with_errored_attempts_names_its_store_and_what_confirms_it(cli, errored_run):
    db, run_id = errored_run
    code, out, err = cli("report", run_id, "--format", "md", "--store", db)
    assert code == 0, err
    assert resume_command(run_id, store=db, retry_errors=True, confirm=["--trust-settings"]) in out.replace("\\", "")


def test_a_resume_command_names_only_a_store_that_is_not_the_default_and_quotes_what_needs_it():
    assert resume_args("r1", store=DEFAULT_STORE, retry_errors=True) == ["scan", "--resume", "r1", "--retry-errors"]
    assert resume_args("r1", store=None, confirm=["--trust-code"]) == ["scan", "--resume", "r1", "--trust-code"]
    command = resume_command("run 1", store="my runs/r.db", retry_errors=True, confirm=["--trust-settings"])
    assert shlex.split(command) == [
        "redline",
        "scan",
        "--resume",
        "run 1",
        "--retry-errors",
        "--store",
        "my runs/r.db",
        "--trust-settings",
    ]
