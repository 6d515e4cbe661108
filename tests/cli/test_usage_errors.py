"""Mistakes on the command line: one ``error:`` line naming the option and the problem, exit 1.

The README promises exit status 1 for a user mistake; click's own behaviour (a usage block and
exit 2) must not leak through for any command, subcommands included. ``redline`` and
``redline lve`` without a command print their help, as ``--help`` does.
"""

from __future__ import annotations

import pytest

import redline.cli.main as cli_main
from helpers.cli import CliRun, cli_runner
from redline.errors import UsageError
from redline.probes import resolve_probes
from redline.store import Store


@pytest.fixture
def run_cli(monkeypatch, capsys) -> CliRun:
    return cli_runner(monkeypatch, capsys)


# (arguments, the command whose --help is named, the text the one error line must start with)
MISTAKES = [
    (["scan", "--sample", "0"], "scan", "invalid value for '--sample': "),
    (["scan", "--generations", "x"], "scan", "invalid value for '--generations'"),
    (["scan", "--fail-above", "2"], "scan", "invalid value for '--fail-above'"),
    (["scan", "--bogus"], "scan", "no such option: --bogus"),
    (["show"], "show", "missing argument 'run_id'"),
    (["list", "bogus"], "list", "invalid value for 'kind': 'bogus' is not one of"),
    (["report"], "report", "missing argument 'run_id'"),
    (["report", "R", "--format", "pdf"], "report", "invalid value for '--format'"),
    (["compare", "A"], "compare", "missing argument 'run_b'"),
    (["demo", "--bogus"], "demo", "no such option: --bogus"),
    (["lve", "run"], "lve run", "missing argument 'path'"),
    (["lve", "verify", ".", "--bogus"], "lve verify", "no such option: --bogus"),
    (["lve", "nosuch"], "lve", "no such command 'nosuch'"),
]


@pytest.mark.parametrize("args, command, needle", MISTAKES, ids=[" ".join(args) for args, _, _ in MISTAKES])
def test_every_usage_error_is_one_line_and_exit_1(run_cli, args, command, needle):
    code, out, lines = run_cli(*args)
    assert code == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {needle}"), lines[0]
    assert lines[0].endswith(f" (see 'redline {command} --help')"), lines[0]
    assert out == ""


@pytest.mark.parametrize("args", [[], ["lve"], ["--help"], ["lve", "--help"], ["scan", "--help"]])
def test_no_command_and_help_print_the_help_and_exit_0(run_cli, args):
    code, out, lines = run_cli(*args)
    assert code == 0
    assert out.startswith("Usage: redline") and "--help" in out
    assert lines == []


def test_resume_of_an_unknown_run_is_one_line_without_a_resume_hint(tmp_path, run_cli):
    db = tmp_path / "r.db"
    code, _, _ = run_cli("scan", "-m", "test.echo", "-p", "encoding.Hex", "--sample", "1", "--store", str(db))
    assert code == 0
    code, _, lines = run_cli("scan", "--resume", "nope", "--store", str(db))
    assert code == 1
    assert lines == [f"error: no run 'nope' in {db} (see 'redline runs --store {db}')"]


@pytest.mark.parametrize("selection", ["", ",", " , "])
def test_an_empty_probe_selection_is_an_error_not_the_default_set(tmp_path, run_cli, selection):
    db = tmp_path / "r.db"
    code, out, lines = run_cli("scan", "-m", "test.echo", "-p", selection, "--store", str(db))
    assert code == 1 and out == ""
    assert lines == ["error: --probes is empty: name probes or families, or leave the option out for the default set"]
    assert not db.exists()  # refused before a store or a run was made


def test_no_probe_option_still_means_the_default_set(tmp_path, run_cli, monkeypatch):
    seen = []

    def run_scan(config, store_path, **kwargs):
        seen.append(config)
        raise UsageError("stopped by the test")

    monkeypatch.setattr(cli_main.scan_run, "run_scan", run_scan)
    code, _, lines = run_cli("scan", "-m", "test.echo", "--store", str(tmp_path / "r.db"))
    assert (code, lines) == (1, ["error: stopped by the test"])
    assert seen[0].probes is None
    assert resolve_probes(seen[0].probes) == resolve_probes(None) and "harmful.Requests" in resolve_probes(None)


def test_a_stored_run_whose_selection_is_empty_still_resumes(tmp_path, run_cli):
    """Runs stored by earlier versions with ``-p ""`` ran the default set; they resume as such."""
    db = tmp_path / "r.db"
    with Store(db) as store:
        config = {
            "scan": {"model": "test.echo", "probes": "", "sample": 1, "seed": 0},
            "probe_names": resolve_probes(None),
            "generator": {},
        }
        run_id = store.create_run("test.echo", config)
    code, _, lines = run_cli("scan", "--resume", run_id, "--store", str(db), "--json")
    assert code == 0, lines
    with Store(db) as store:
        assert store.get_run(run_id).status == "complete"
        assert set(store.attempt_counts(run_id)) == set(resolve_probes(None))
