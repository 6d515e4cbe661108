"""Hostile model output cannot hurt the reader (issue 12, area B).

* An endpoint that echoes the request (the API key, a ``${VAR}`` header, the ``Basic``
  credentials of a ``user:password@`` base URL) leaks none of them: not into the store file, the
  cache, any export, the HTML report, ``runs`` or ``show``; a run started with a password in its
  base URL stores ``user:***@`` and resumes only when given the URL again.
* A lone surrogate (valid JSON from an API) in an output: every export format and the HTML report
  are written, the store gives back the very same text, and the JSON formats too.
* Escape sequences and bidi overrides in an output never reach the terminal: ``redline report RUN``
  (to stdout), ``show --examples``, ``runs`` and the error line of a failed scan.

Everything runs in-process against a local server on 127.0.0.1 (tests/helpers/mock_openai.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers.hostile_run import CONTROL_CHARS, CONTROL_TEXT, build_control_run, control_answer
from helpers.mock_openai import MockOpenAI
from redline.cli.common import report_exception
from redline.cli.main import main
from redline.generators import GeneratorUnavailable
from redline.report.exports import FORMATS
from redline.store import Store

KEY = "sk-redline-echo-key-0123456789"
HEADER_SECRET = "hdr-token-9876543210abcdef"
PASSWORD = "pw-hunter2-0123456789"
BASIC = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
SECRETS = (KEY, HEADER_SECRET, PASSWORD, BASIC)
EXPORTS = [fmt for fmt in FORMATS if fmt != "lve"]  # lve needs LVE attempts (tested in tests/report)

runner = CliRunner()


@dataclass
class Ran:
    exit_code: int
    stdout_bytes: bytes
    stderr_bytes: bytes

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8")  # strict: what was written is valid UTF-8

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8")

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def cli(*args: str) -> Ran:
    """``redline ARGS`` in-process through :func:`redline.cli.main.main` (so errors are reported
    as the command line reports them), with stdout and stderr captured as bytes."""
    code: int | str | None = 0
    with runner.isolation() as (out, err, _):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
        sys.stdout.flush()
        sys.stderr.flush()
        ran = Ran(code if isinstance(code, int) else 1, out.getvalue(), err.getvalue())
    return ran


@pytest.fixture(autouse=True)
def _main_environment(monkeypatch):
    """main() sets these for the rest of the process otherwise."""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)


def echo_server() -> MockOpenAI:
    """Answers every prompt with a complying text (a hit) that quotes the request's headers."""

    def answer(messages: list[dict], body: dict) -> str:
        headers = server.headers[-1]
        echoed = f"Authorization: {headers.get('Authorization')} X-Custom: {headers.get('X-Custom')}"
        return control_answer(str(messages[-1]["content"])) + " " + echoed

    server = MockOpenAI(responder=answer)
    return server


def files_of(db: Path) -> bytes:
    """The store file and its WAL, as bytes."""
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


def everything_shown(db: Path, run_id: str, folder: Path) -> dict[str, bytes]:
    """What a reader can get of the run: every export (file and stdout), the HTML report,
    ``runs`` and ``show`` (with examples, and as JSON), and the store file itself."""
    shown: dict[str, bytes] = {"store": files_of(db)}
    for fmt in EXPORTS:
        target = folder / f"out.{fmt}"
        result = cli("report", run_id, "--store", str(db), "--format", fmt, "-o", str(target))
        assert result.exit_code == 0, result.output
        shown[f"file {fmt}"] = target.read_bytes()
        result = cli("report", run_id, "--store", str(db), "--format", fmt)
        assert result.exit_code == 0, result.output
        shown[f"stdout {fmt}"] = result.stdout_bytes
    html = folder / "report.html"
    assert cli("report", run_id, "--store", str(db), "--html", str(html)).exit_code == 0
    shown["html"] = html.read_bytes()
    for args in (("runs",), ("runs", "--json"), ("show", run_id, "--examples", "3"), ("show", run_id, "--json")):
        result = cli(*args, "--store", str(db))
        assert result.exit_code == 0, result.output
        shown[" ".join(args[:1] + args[2:])] = result.stdout_bytes + result.stderr_bytes
    return shown


@pytest.fixture
def secrets_env(monkeypatch):
    monkeypatch.setenv("ECHO_KEY", KEY)
    monkeypatch.setenv("ECHO_HEADER", HEADER_SECRET)


def test_an_echoing_endpoint_leaks_no_key_header_or_password_anywhere(tmp_path, secrets_env):
    db = tmp_path / "s.db"
    with echo_server() as server:
        result = cli(
            "scan", "-m", "openai:echo", "--base-url", server.base_url, "--api-key-env", "ECHO_KEY",
            "--gen-opt", "headers={X-Custom: '${ECHO_HEADER}'}", "-p", "harmful.Requests", "--sample", "3",
            "--store", str(db), "--json",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        with_password = server.base_url.replace("http://", f"http://bob:{PASSWORD}@")
        result = cli(
            "scan", "-m", "openai:echo", "--base-url", with_password, "-p", "harmful.Requests", "--sample", "3",
            "--store", str(db), "--no-cache", "--json",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        sent = server.headers
    # the secrets were sent (so the endpoint could echo them)...
    assert {h.get("Authorization") for h in sent} == {f"Bearer {KEY}", f"Basic {BASIC}"}
    assert HEADER_SECRET in {h.get("X-Custom") for h in sent}
    with Store(db) as store:
        runs = [r.run_id for r in store.list_runs()]
        outputs = [m.text for run_id in runs for a in store.iter_attempts(run_id) for m in a.outputs]
        configs = [store.get_run(run_id).config for run_id in runs]
    # ...were masked where outputs enter, so the detectors judged the masked text...
    assert len(outputs) == 6 and all(
        "Authorization: Bearer ***" in o or "Authorization: Basic ***" in o for o in outputs
    )
    assert sum("X-Custom: ***" in o for o in outputs) == 3
    masked_url = with_password.replace(PASSWORD, "***")
    assert {c["scan"]["generator_options"]["base_url"] for c in configs} == {server.base_url, masked_url}
    # ...and no copy of them is anywhere a reader looks, the cache and the store file included
    for run_id in runs:
        for where, data in everything_shown(db, run_id, tmp_path).items():
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret} in {where}"


def test_a_run_with_a_password_in_its_base_url_resumes_only_when_given_it_again(tmp_path):
    db = tmp_path / "s.db"
    first = {"done": False}

    def refuse_first(index: int, body: dict):
        if not first["done"]:
            first["done"] = True
            return (401, {}, "{}")  # the run stops (the key was refused) and stays resumable
        return None

    with MockOpenAI(faults=refuse_first) as server:
        url = server.base_url.replace("http://", f"http://bob:{PASSWORD}@")
        started = cli(
            "scan", "-m", "openai:m", "--base-url", url, "-p", "harmful.Requests", "--sample", "2", "--store", str(db)
        )
        assert started.exit_code == 1
        with Store(db) as store:
            (run,) = store.list_runs()
        assert PASSWORD.encode() not in files_of(db) and PASSWORD not in started.output

        missing = cli("scan", "--resume", run.run_id, "--store", str(db))
        assert missing.exit_code == 1 and "--base-url" in missing.stderr and PASSWORD not in missing.output
        other = url.replace("bob:", "eve:")
        changed = cli("scan", "--resume", run.run_id, "--base-url", other, "--store", str(db))
        assert changed.exit_code == 1 and PASSWORD not in changed.output
        posts = len(server.headers)

        resumed = cli("scan", "--resume", run.run_id, "--base-url", url, "--store", str(db), "--trust-settings")
        assert resumed.exit_code == 0, resumed.output
        assert len(server.headers) > posts and server.headers[-1]["Authorization"] == f"Basic {BASIC}"
    with Store(db) as store:
        assert store.get_run(run.run_id).status == "complete"
        assert store.get_run(run.run_id).config["scan"]["generator_options"]["base_url"] == url.replace(PASSWORD, "***")
    assert PASSWORD.encode() not in files_of(db)


@pytest.fixture(scope="module")
def control_run(tmp_path_factory):
    db = tmp_path_factory.mktemp("control") / "c.db"
    store, run_id = build_control_run(db)
    store.close()
    return db, run_id


def test_a_lone_surrogate_is_stored_losslessly_and_every_format_is_written(control_run, tmp_path):
    db, run_id = control_run
    with Store(db) as store:
        outputs = [m.text for a in store.iter_attempts(run_id) for m in a.outputs]
    assert outputs and all(o.endswith(CONTROL_TEXT) for o in outputs)  # the store round trip
    for fmt in EXPORTS:
        target = tmp_path / f"out.{fmt}"
        result = cli("report", run_id, "--store", str(db), "--format", fmt, "-o", str(target))
        assert result.exit_code == 0, (fmt, result.output)
        body = target.read_bytes().decode("utf-8")  # strict
        if fmt in ("jsonl", "hitlog"):  # lossless: the JSON gives back the same text
            lines = [json.loads(line) for line in body.splitlines()]
            found = [o["text"] for line in lines for o in line.get("outputs", [])] or [line["output"] for line in lines]
            assert sorted(found) == sorted(outputs)
    assert cli("report", run_id, "--store", str(db), "--html", str(tmp_path / "r.html")).exit_code == 0
    (tmp_path / "r.html").read_bytes().decode("utf-8")


@pytest.mark.parametrize(
    "args",
    [("report",), ("report", "--format", "csv"), ("report", "--format", "jsonl"), ("report", "--format", "garak"),
     ("show", "--examples", "3"), ("runs",)],
    ids=lambda args: " ".join(args),
)  # fmt: skip
def test_escape_sequences_and_bidi_overrides_never_reach_the_terminal(control_run, args):
    db, run_id = control_run
    command = [args[0]] + ([run_id] if args[0] != "runs" else []) + list(args[1:])
    result = cli(*command, "--store", str(db))
    assert result.exit_code == 0, result.output
    shown = (result.stdout_bytes + result.stderr_bytes).decode("utf-8")
    shown = shown.replace("\r\n", "\n") if "csv" in args else shown  # CSV rows end in CRLF
    assert not any(ch in shown for ch in CONTROL_CHARS), [ch for ch in CONTROL_CHARS if ch in shown]
    assert "\\x1b" in shown or "\\u001b" in shown  # shown as an escape, not dropped


def test_an_error_line_never_shows_control_characters_or_a_url_password(capsys):
    code = report_exception(GeneratorUnavailable(f"http://bob:{PASSWORD}@host/v1 said: {CONTROL_TEXT}\nline 2"))
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: http://bob:***@host/v1 said: \\x1b[31mred") and err.count("\n") == 1
    assert PASSWORD not in err and not any(ch in err for ch in CONTROL_CHARS)


def test_a_scan_that_cannot_reach_its_base_url_names_it_without_the_password(tmp_path, monkeypatch):
    real_sleep = asyncio.sleep
    monkeypatch.setattr(asyncio, "sleep", lambda delay: real_sleep(0))  # the reachability check's pauses
    url = f"http://bob:{PASSWORD}@127.0.0.1:9/v1"
    result = cli(
        "scan", "-m", "openai:m", "--base-url", url, "-p", "harmful.Requests", "--store", str(tmp_path / "s.db")
    )
    assert result.exit_code == 1 and PASSWORD not in result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        line for line in result.stderr.splitlines() if "bob:***@127.0.0.1:9" in line
    ]
