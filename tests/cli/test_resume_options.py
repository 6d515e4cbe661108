"""``redline scan --resume``: options that would change the run are refused in one line naming
them; the run's own values and the per-process options (concurrency, timeouts, retries) are taken."""

from __future__ import annotations

import json

import pytest

from helpers.cli import CliRun, cli_runner


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    return cli_runner(monkeypatch, capsys)


@pytest.fixture
def run(cli, tmp_path) -> tuple[str, str]:
    """A complete run of test.echo on encoding.Hex: (store path, run id)."""
    db = str(tmp_path / "r.db")
    code, out, err = cli("scan", "-m", "test.echo", "-p", "encoding.Hex", "--sample", "3", "--store", db, "--json")
    assert code == 0, err
    return db, json.loads(out)["run_id"]


def test_options_that_would_change_the_run_are_refused_in_one_line_naming_them(cli, run):
    db, run_id = run
    code, out, err = cli(
        "scan", "--resume", run_id, "--store", db,
        "-m", "test.repeat:x", "-p", "encoding.Base64", "--sample", "2", "-g", "2",
        "--base-url", "http://127.0.0.1:9/v1", "--gen-opt", "top_p=0.5", "--no-cache",
    )  # fmt: skip
    assert (code, out) == (1, "")
    assert err == [
        "error: --resume continues a run with its own settings: -m/--model, -p/--probes, -g/--generations, "
        "--sample, --cache/--no-cache, --base-url, --gen-opt top_p would change it; leave them out (with "
        "--resume only --concurrency, --timeout, --max-retries, --rpm, --tpm and --gen-opt "
        "timeout/max_retries/backoff_base/backoff_cap/max_retry_after/concurrency/rpm/tpm/ca_bundle/client_cert/"
        "client_key are applied)"
    ]


def test_the_runs_own_values_and_per_process_options_are_accepted(cli, run):
    db, run_id = run
    # the command that started the run, with --resume added: nothing would change
    code, out, err = cli(
        "scan", "--resume", run_id, "--store", db, "--json",
        "-m", "test.echo", "-p", "encoding.Hex", "--sample", "3", "--cache", "--concurrency", "2",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["status"] == "complete"


def test_an_unknown_run_is_one_line_before_options_are_looked_at(cli, run):
    db, _ = run
    code, _, err = cli("scan", "--resume", "nope", "--store", db, "-m", "test.repeat:x")
    assert code == 1 and len(err) == 1 and err[0].startswith("error: no run 'nope' in ")


def test_help_says_what_a_resume_applies(cli):
    code, out, _ = cli("scan", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "are refused; only --concurrency, --timeout, --max-retries, --rpm, --tpm" in text
