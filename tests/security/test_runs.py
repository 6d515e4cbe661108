"""Hostile conditions around a run (issue 12, area C): two scans of one run, a scan killed with -9,
a store damaged mid-file, an endpoint answering garbage with HTTP 200. Each ends in a clear state
or one line, never in requests sent twice, a run shown 'running' forever, or an internal error.

The scans that must be separate processes run as subprocesses against a local server whose
answers are held back by a gate, so the state the test looks at does not depend on timing."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers.cli import CliRun, cli_runner
from helpers.mock_openai import MockOpenAI
from redline.attempt import Attempt, Conversation, Message, Turn
from redline.store import Store

PROBE = "encoding.Hex"  # 12 attempts, every prompt distinct


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    """``redline ARGS`` run in this process (which is never the process scanning in the tests below)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return cli_runner(monkeypatch, capsys)


def redline_process(*args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.Popen(
        [sys.executable, "-m", "redline", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def held_scan(server: MockOpenAI, db: Path) -> tuple[subprocess.Popen, str]:
    """Start a scan in a subprocess and wait until its requests reach ``server`` (whose gate holds
    them): the run exists and the process holds it. Returns the process and the run id."""
    proc = redline_process(
        "scan", "-m", "openai:m", "--base-url", server.base_url, "-p", PROBE,
        "--concurrency", "2", "--store", str(db), "--json",
    )  # fmt: skip
    deadline = time.monotonic() + 60  # a guard against a hang only
    while not server.requests and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.requests and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    with sqlite3.connect(db) as con:
        (run_id,) = con.execute("SELECT run_id FROM runs").fetchone()
    return proc, run_id


@pytest.fixture
def gated_server():
    """A local OpenAI-compatible server whose answers wait until ``gate`` is set."""
    gate = threading.Event()
    with MockOpenAI(faults=lambda index, body: gate.wait(60) and None) as server:
        server.gate = gate  # type: ignore[attr-defined]
        yield server
        gate.set()


def test_a_second_resume_of_a_live_run_is_refused_naming_the_scanning_process(tmp_path, gated_server, cli):
    db = tmp_path / "runs.db"
    proc, run_id = held_scan(gated_server, db)
    try:
        code, out, _ = cli("runs", "--store", str(db), "--json")
        assert code == 0 and [r["status"] for r in json.loads(out)] == ["running"]  # live: shown as it is

        code, out, err = cli("scan", "--resume", run_id, "--store", str(db), "--trust-settings")  # a second process
        assert (code, out) == (1, "")
        assert err[0].startswith(f"run {run_id}: model openai:m sends to ")  # what it would reach, then why not
        assert err[1:] == [
            f"error: run {run_id} is being scanned by process {proc.pid} (store {db}): "
            "wait for that scan to end, or stop it and resume again"
        ]
        sent = len(gated_server.requests)
        assert sent <= 2  # only the first scan's requests (--concurrency 2): the second sent none

        gated_server.gate.set()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert json.loads(out)["status"] == "complete"
        assert sorted(gated_server.counts.values()) == [1] * 12  # every prompt sent once
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_scan_killed_with_9_is_shown_interrupted_everywhere_and_resumes(tmp_path, gated_server, cli):
    db = tmp_path / "runs.db"
    proc, run_id = held_scan(gated_server, db)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:  # the store still says running: nobody could record an end
        assert con.execute("SELECT status FROM runs").fetchone() == ("running",)

    code, out, _ = cli("runs", "--store", str(db))
    assert code == 0 and "interrupted" in out and "running" not in out
    code, out, _ = cli("runs", "--store", str(db), "--json")
    assert [r["status"] for r in json.loads(out)] == ["interrupted"]
    code, out, _ = cli("show", run_id, "--store", str(db), "--json")
    assert code == 0 and json.loads(out)["status"] == "interrupted"
    code, out, _ = cli("show", run_id, "--store", str(db))
    assert code == 0 and f"redline scan --resume {run_id}" in out  # the next step says how to finish it
    for fmt in ("json", "md"):
        report = tmp_path / f"report.{fmt}"
        code, _, err = cli("report", run_id, "--store", str(db), "--format", fmt, "-o", str(report))
        assert code == 0, err
        text = report.read_text()
        assert "interrupted" in text and "running" not in text
    html = tmp_path / "report.html"
    assert cli("report", run_id, "--store", str(db), "--html", str(html))[0] == 0
    assert "interrupted" in html.read_text()

    gated_server.gate.set()
    code, out, err = cli("scan", "--resume", run_id, "--store", str(db), "--json", "--trust-settings")
    assert code == 0, err
    assert json.loads(out)["status"] == "complete"
    assert sum(p["attempts"] for p in json.loads(out)["probes"]) == 12
    code, out, _ = cli("runs", "--store", str(db), "--json")
    assert [r["status"] for r in json.loads(out)] == ["complete"]


# -- a damaged store -------------------------------------------------------------------------------


def store_with_a_run(path: Path, attempts: int = 150) -> str:
    with Store(path) as store:
        run_id = store.create_run("test.echo", {"scan": {"model": "test.echo", "probes": PROBE}})
        for seq in range(attempts):
            attempt = Attempt(
                prompt=Conversation(turns=[Turn("user", Message(f"prompt {seq}"))]), probe_classname=PROBE, seq=seq
            )
            attempt.outputs = [Message("x" * 400)]
            store.save_attempt(run_id, attempt)
        store.release_run(run_id)
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return run_id


def overwrite_page(path: Path, page: int) -> None:
    with open(path, "r+b") as f:
        f.seek(page * 4096)
        f.write(bytes(range(256)) * 16)


@pytest.mark.parametrize("where", ["middle", "header"])
def test_a_damaged_store_is_one_line_for_every_command_and_is_never_written(tmp_path, cli, where):
    db = tmp_path / "hurt.db"
    run_id = store_with_a_run(db)
    pages = db.stat().st_size // 4096
    overwrite_page(db, pages // 2 if where == "middle" else 0)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    store = ["--store", str(db)]
    commands = [
        ["runs", *store],
        ["runs", *store, "--json"],
        ["show", run_id, *store],
        ["show", run_id, *store, "--json"],
        ["report", run_id, *store, "--format", "json", "-o", str(tmp_path / "r.json")],
        ["report", run_id, *store, "--html", str(tmp_path / "r.html")],
        ["review", run_id, *store],
        ["scan", "-m", "test.echo", "-p", PROBE, *store],
        ["scan", "--resume", run_id, *store],
    ]
    for args in commands:
        code, _, err = cli(*args)
        assert code == 1, (args, err)
        assert len(err) == 1 and err[0].startswith("error: "), (args, err)
        if where == "middle":
            assert err[0].startswith(f"error: store {db} is damaged ("), (args, err)
        else:
            assert err[0].startswith(f"error: cannot open store {db}: file is not a database"), (args, err)
        assert ".recover" in err[0] and "internal error" not in err[0]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # no scan wrote into it
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "r.html").exists()


# -- an endpoint answering garbage with HTTP 200 -----------------------------------------------------

GARBAGE = [
    "<html><body>502 Bad Gateway</body></html>",
    '{"choices": [{"message": {"content": "cut off',
    "[" * 100_000,  # nested too deeply for a JSON parser
    '{"choices": [{"message": {"content": {"not": "text"}}}]}',
    '{"choices": "none"}',
    "",
]


def test_malformed_200_bodies_are_retried_and_end_as_attempt_errors_naming_the_problem(tmp_path, cli):
    # prompt k (in arrival order of first tries) gets garbage on every try when k is even, and
    # garbage once then a good answer when k is odd
    first_seen: dict[str, int] = {}
    lock = threading.Lock()

    def faults(index: int, body: dict):
        prompt = body["messages"][-1]["content"]
        with lock:
            k = first_seen.setdefault(prompt, len(first_seen))
            tries = server.counts[prompt]
        if k % 2 == 0 or tries == 1:
            return (200, {}, GARBAGE[k % len(GARBAGE)])
        return None

    with MockOpenAI(faults=faults) as server:
        db = tmp_path / "g.db"
        code, out, err = cli(
            "scan", "-m", "openai:m", "--base-url", server.base_url, "-p", PROBE, "--store", str(db),
            "--max-retries", "2", "--gen-opt", "backoff_base=0", "--json",
        )  # fmt: skip
        assert code == 5, err  # complete with errors: the garbled answers' attempts
    summary = json.loads(out)
    (probe,) = summary["probes"]
    assert summary["status"] == "complete" and probe["attempts"] == 12 and probe["errored"] == 6
    with Store(db) as store:
        errors = [a.notes["error"] for a in store.iter_attempts(summary["run_id"], errored=True)]
    assert len(errors) == 6
    for error in errors:
        assert error.startswith("malformed response from http://127.0.0.1:") and error.endswith("(after 3 tries)")
        assert "\n" not in error
    assert sorted(server.counts.values()) == [2] * 6 + [3] * 6  # same budget as a 5xx, no more
