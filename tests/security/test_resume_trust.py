"""A store from someone else cannot send the victim's secrets anywhere or run code (issue 35, part 1).

The attacker crafts a store: a run whose stored settings name an endpoint of theirs (on
127.0.0.1 here) and a header that reads ``${SOME_SECRET}`` from the environment of whoever resumes
it, or a run that says ``trust_code``. The victim resumes it with ``redline scan --resume RUN
--store theirs.db``. Nothing is sent and no code runs until the resuming command confirms it,
and the one line printed says what to confirm; ``--resume --plan`` shows the same, sending
nothing. A configuration file cannot turn ``trust_code`` on either.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes import ScriptedGenerator
from helpers.cli import CliRun, cli_runner
from helpers.lve_repos import write_lve
from helpers.mock_openai import MockOpenAI
from redline.engine import scan
from redline.engine.trust import UntrustedRun
from redline.errors import RedlineError
from redline.store import Store

SECRET = "victims-secret-0123456789"
KEY = "sk-victims-key-0123456789"


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    monkeypatch.setenv("SOME_SECRET", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return cli_runner(monkeypatch, capsys)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A socket on 127.0.0.1 that accepts nothing: a connection made to it waits in its backlog."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def connected(sock: socket.socket) -> bool:
    """Whether anyone connected to ``sock``."""
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def craft_store(cli: CliRun, db: Path, **scan: object) -> str:
    """A store holding an interrupted run with nothing finished, whose stored settings are the
    attacker's ``scan`` values (over those of a test.echo run); returns the run id."""
    code, out, err = cli("scan", "-m", "test.echo", "-p", "encoding.Hex", "--sample", "2", "--store", str(db), "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        config = json.loads(raw)
        config["scan"].update(scan)
        conn.execute(
            "UPDATE runs SET config = ?, model = ?, status = 'interrupted' WHERE run_id = ?",
            (json.dumps(config), str(config["scan"]["model"]), run_id),
        )
        conn.execute("DELETE FROM attempts")
        conn.execute("DELETE FROM probe_results")
        conn.execute("DELETE FROM cache")
    conn.close()
    return run_id


def attacker_run(cli: CliRun, db: Path, base_url: str) -> str:
    return craft_store(
        cli,
        db,
        model="openai:m",
        generator_options={"base_url": base_url, "headers": {"X-Leak": "${SOME_SECRET}"}},
    )


def test_resuming_a_crafted_store_without_confirmation_sends_nothing_and_says_what_to_confirm(cli, tmp_path, listener):
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    run_id = attacker_run(cli, tmp_path / "theirs.db", url)

    code, out, err = cli("scan", "--resume", run_id, "--store", str(tmp_path / "theirs.db"))

    assert (code, out, len(err)) == (1, "", 1)
    line = err[0]
    assert line.startswith(f"error: run {run_id} was not resumed, nothing was sent")
    assert url in line and "X-Leak (reads $SOME_SECRET)" in line
    assert "OPENAI_API_KEY" in line and "--trust-settings" in line
    assert SECRET not in line and KEY not in line
    assert not connected(listener)


def test_resume_plan_shows_the_endpoint_headers_and_variables_and_sends_nothing(cli, tmp_path, listener):
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    run_id = attacker_run(cli, tmp_path / "theirs.db", url)

    code, out, err = cli("scan", "--resume", run_id, "--store", str(tmp_path / "theirs.db"), "--plan")

    assert code == 0, err
    shown = " ".join(err)
    assert url in shown and "X-Leak (reads $SOME_SECRET)" in shown
    assert "SOME_SECRET" in shown and "OPENAI_API_KEY" in shown
    assert SECRET not in out + shown and KEY not in out + shown
    assert not connected(listener)


def test_giving_the_model_and_endpoint_again_is_not_enough_while_a_header_reads_a_variable(cli, tmp_path, listener):
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    run_id = attacker_run(cli, tmp_path / "theirs.db", url)

    code, _, err = cli(
        "scan", "--resume", run_id, "--store", str(tmp_path / "theirs.db"), "-m", "openai:m", "--base-url", url
    )

    assert code == 1 and len(err) == 1
    assert err[0].endswith("(or give --gen-opt headers again with the run's values)")
    assert not connected(listener)


def test_a_confirmed_resume_says_where_it_sends_then_sends_there(cli, tmp_path):
    with MockOpenAI() as server:
        run_id = attacker_run(cli, tmp_path / "s.db", server.base_url)

        code, out, err = cli(
            "scan", "--resume", run_id, "--store", str(tmp_path / "s.db"), "--trust-settings", "--json"
        )

        assert code == 0, err
        assert err[0] == (
            f"run {run_id}: model openai:m sends to {server.base_url} with headers X-Leak (reads $SOME_SECRET); "
            "it reads the environment variables OPENAI_API_KEY, SOME_SECRET"
        )
        assert server.headers and server.headers[-1]["X-Leak"] == SECRET
        assert json.loads(out)["status"] == "complete"


def test_every_setting_given_again_confirms_the_resume(cli, tmp_path):
    with MockOpenAI() as server:
        run_id = attacker_run(cli, tmp_path / "s.db", server.base_url)

        code, out, err = cli(
            "scan", "--resume", run_id, "--store", str(tmp_path / "s.db"), "--json",
            "-m", "openai:m", "--base-url", server.base_url, "--gen-opt", "headers={X-Leak: '${SOME_SECRET}'}",
        )  # fmt: skip

        assert code == 0, err
        assert json.loads(out)["status"] == "complete"


def test_an_auxiliary_model_of_the_store_needs_confirming_too(cli, tmp_path, listener):
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    run_id = craft_store(cli, tmp_path / "theirs.db", judge="llm:openai:judge", generator_options={}, model="test.echo")

    code, _, err = cli("scan", "--resume", run_id, "--store", str(tmp_path / "theirs.db"))

    assert code == 1 and len(err) == 1
    assert "judge openai:judge sends to https://api.openai.com/v1" in err[0] and "(or give --judge again" in err[0]
    assert url not in err[0] and not connected(listener)


def test_a_local_run_resumes_without_confirmation(cli, tmp_path):
    run_id = craft_store(cli, tmp_path / "s.db")

    code, out, err = cli("scan", "--resume", run_id, "--store", str(tmp_path / "s.db"), "--json")

    assert code == 0, err
    assert json.loads(out)["status"] == "complete"


MARKER_CHECKER = """
from pathlib import Path
Path({marker!r}).write_text("the checker's code ran")
from lve.checkers import BaseChecker

class Marker(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return True
"""


def test_a_stored_trust_code_runs_no_checker_code_without_trust_code_on_the_command_line(cli, tmp_path):
    marker = tmp_path / "ran.txt"
    folder = write_lve(
        tmp_path / "lves", "a_marker", {"checker_name": "Marker"}, [({"x": "hi"}, "hi", True)],
        custom=MARKER_CHECKER.format(marker=str(marker)),
    )  # fmt: skip
    run_id = craft_store(cli, tmp_path / "theirs.db", lve_paths=[str(folder)], trust_code=True, probes=None)

    code, out, err = cli("scan", "--resume", run_id, "--store", str(tmp_path / "theirs.db"))
    assert (code, out, len(err)) == (1, "", 1)
    assert err[0] == (
        f"error: run {run_id} was not resumed: it runs the custom checker code of its LVEs, which runs only with "
        "--trust-code on the command line that runs it (trust_code=True in the Python API); "
        "add --trust-code if you trust that code"
    )
    code, out, err = cli("scan", "--resume", run_id, "--store", str(tmp_path / "theirs.db"), "--plan")
    assert code == 0 and "a_marker/m" in out  # the plan lists the LVE...
    assert not marker.exists()  # ...without running its code


def test_a_configuration_file_cannot_turn_on_trust_code(cli, tmp_path):
    config = tmp_path / "scan.yaml"
    config.write_text("model: test.echo\ntrust_code: true\n", encoding="utf-8")

    code, out, err = cli("scan", "--config", str(config), "--store", str(tmp_path / "s.db"))

    assert (code, out) == (1, "")
    assert err == [
        f"error: {config}: trust_code: is not read from a file: LVE checker code runs only with --trust-code "
        "on the command line; remove it from the file"
    ]
    assert not (tmp_path / "s.db").exists()


def test_trust_settings_without_resume_is_one_line(cli, tmp_path):
    code, out, err = cli("scan", "-m", "test.echo", "--trust-settings", "--store", str(tmp_path / "s.db"))

    assert (code, out) == (1, "")
    assert err == ["error: --trust-settings needs --resume RUN_ID (a new run's settings are those given)"]


def test_the_python_api_resumes_a_crafted_store_only_when_the_caller_trusts_its_settings(cli, tmp_path, listener):

    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    run_id = attacker_run(cli, tmp_path / "theirs.db", url)

    with Store(tmp_path / "theirs.db") as store:
        with pytest.raises(UntrustedRun, match=r"nothing was sent: .*trust_settings=True") as refused:
            asyncio.run(scan(None, store, resume=run_id))
    assert isinstance(refused.value, RedlineError)
    assert url in str(refused.value) and "$SOME_SECRET" in str(refused.value) and SECRET not in str(refused.value)
    assert not connected(listener)


def test_the_python_api_runs_stored_checker_code_only_with_trust_code(cli, tmp_path):

    marker = tmp_path / "ran.txt"
    folder = write_lve(
        tmp_path / "lves", "a_marker", {"checker_name": "Marker"}, [({"x": "hi"}, "hi", True)],
        custom=MARKER_CHECKER.format(marker=str(marker)),
    )  # fmt: skip
    run_id = craft_store(cli, tmp_path / "theirs.db", lve_paths=[str(folder)], trust_code=True, probes=None)

    with Store(tmp_path / "theirs.db") as store:
        with pytest.raises(UntrustedRun, match="trust_code=True"):
            asyncio.run(scan(None, store, resume=run_id, generator=ScriptedGenerator("hi")))
        assert not marker.exists()
        asyncio.run(scan(None, store, resume=run_id, generator=ScriptedGenerator("hi"), trust_code=True))
    assert marker.exists()
