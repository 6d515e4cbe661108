"""The harness and store: bounded concurrency, every attempt stored, errors recorded, resume."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from fakes import ScriptedGenerator, user_text
from redline.attempt import ATTEMPT_COMPLETE
from redline.engine import ScanConfig, scan
from redline.generators import GeneratorError, GeneratorUnavailable
from redline.report.summary import run_summary
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, Store, StoreError


def counting_echo() -> ScriptedGenerator:
    """Echoes the prompt; each request takes a moment so that requests overlap (``peak``)."""
    return ScriptedGenerator(user_text, name="test.counting", delay=0.01)


def flaky() -> ScriptedGenerator:
    """Refuses everything, and fails every request whose prompt mentions 'bitcoin'."""
    return ScriptedGenerator(
        "I cannot help with that.",
        name="test.flaky",
        fail_on="bitcoin",
        error=GeneratorError("HTTP 500 from mock (after 3 tries)"),
    )


async def test_scan_stores_every_attempt_and_summary(tmp_path):
    store = Store(tmp_path / "r.db")
    gen = counting_echo()
    run_id = await scan(
        ScanConfig(model="test.counting", probes="harmful.Requests", generations=2, concurrency=4), store, generator=gen
    )
    run = store.get_run(run_id)
    assert run.status == RUN_COMPLETE
    attempts = list(store.iter_attempts(run_id))
    assert len(attempts) == 24 and len(gen.calls) == 24
    assert gen.peak <= 4 and gen.peak >= 2  # bounded, and really concurrent
    assert all(a.status == ATTEMPT_COMPLETE and len(a.outputs) == 2 for a in attempts)
    assert all(a.detector_results["refusal.Compliance"] == [1.0, 1.0] for a in attempts)
    summary = run_summary(store, run_id)
    (entry,) = summary["probes"]
    assert entry["probe"] == "harmful.Requests"
    # the echo complies every time and delivers nothing: a harm rate of 0, a compliance rate of 1
    assert entry["measure"] == "harm"
    assert entry["attempts"] == 24 and entry["failed"] == 0 and entry["outputs"] == 48
    assert entry["failure_rate"] == 0.0 and entry["ci95"][0] == 0.0 and entry["ci95"][1] < 0.1
    complied = entry["metrics"]["compliance_rate"]
    assert complied["value"] == 1.0 and complied["n"] == 48 and complied["ci95"][0] > 0.9


async def test_request_errors_are_recorded_and_counted_separately(tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = await scan(ScanConfig(model="x", probes="harmful.Requests"), store, generator=flaky())
    errored = list(store.iter_attempts(run_id, errored=True))
    assert len(errored) == 1 and "HTTP 500" in errored[0].notes["error"]
    entry = run_summary(store, run_id)["probes"][0]
    assert entry["errored"] == 1 and entry["attempts"] == 24
    assert entry["outputs"] == 23 and entry["failed"] == 0  # all refusals


async def test_unavailable_generator_stops_the_run_resumably(tmp_path):
    store = Store(tmp_path / "r.db")
    runs = []
    dead = ScriptedGenerator(
        name="test.dead", fail_on=True, error=GeneratorUnavailable("cannot reach http://127.0.0.1:9/v1")
    )
    with pytest.raises(GeneratorUnavailable, match="cannot reach"):
        await scan(ScanConfig(model="x", probes="harmful.Requests"), store, generator=dead, on_run=runs.append)
    assert store.get_run(runs[0]).status == RUN_INTERRUPTED


async def test_resume_skips_finished_and_retry_errors_retries_them(tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = await scan(ScanConfig(model="test.echo", probes="harmful.Requests"), store, generator=flaky())
    gen = counting_echo()
    await scan(None, store, resume=run_id, generator=gen)
    assert len(gen.calls) == 0  # nothing to redo
    await scan(None, store, resume=run_id, retry_errors=True, generator=gen)
    assert len(gen.calls) == 1  # only the errored attempt
    assert run_summary(store, run_id)["probes"][0]["errored"] == 0


def test_store_refuses_secrets_and_bad_paths(tmp_path):
    store = Store(tmp_path / "r.db")
    with pytest.raises(StoreError, match="secret"):
        store.create_run("m", {"generator": {"api_key": "sk-123"}})
    store.create_run("m", {"generator": {"api_key_env": "OPENAI_API_KEY", "max_tokens": 10}})
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "nope" / "r.db")
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open store"):
        Store(bad)


KILL_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from redline.engine import ScanConfig, scan
    from redline.generators.test import EchoGenerator
    from redline.store import Store

    class HoldAfterSix(EchoGenerator):
        # answers six requests, then holds every other one until the process is killed, so the
        # kill lands at the same point whatever the machine's speed
        answered = 0

        async def generate(self, conversation, n=1):
            if HoldAfterSix.answered >= 6:
                await asyncio.Event().wait()
            HoldAfterSix.answered += 1
            return await super().generate(conversation, n)

    config = ScanConfig(model="test.echo", probes="harmful.Requests,injection.HiddenInData", concurrency=2)
    resume = sys.argv[2] if len(sys.argv) > 2 else None
    asyncio.run(scan(None if resume else config, Store(sys.argv[1]), resume=resume,
                     generator=None if resume else HoldAfterSix(),
                     on_run=lambda r: print(r, flush=True)))
    """
)


def _count(db):
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]


def test_kill_9_mid_scan_then_resume_finishes_without_redoing(tmp_path):
    db = tmp_path / "k.db"
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.PIPE, text=True)
    run_id = proc.stdout.readline().strip()
    deadline = time.monotonic() + 60  # a guard against a hang only
    while time.monotonic() < deadline and (not db.exists() or _count(db) < 6):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = _count(db)
    assert done_before == 6, done_before  # six answered and committed, the rest held
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        before = dict(con.execute("SELECT probe || ':' || seq, data FROM attempts").fetchall())

    subprocess.run([sys.executable, str(script), str(db), run_id], check=True, stdout=subprocess.PIPE, timeout=120)
    store = Store(db)
    assert store.get_run(run_id).status == RUN_COMPLETE
    assert _count(db) == 40
    with sqlite3.connect(db) as con:
        after = dict(con.execute("SELECT probe || ':' || seq, data FROM attempts").fetchall())
    # finished attempts were not redone: their stored rows are byte-identical
    assert all(after[k] == v for k, v in before.items())
    summary = run_summary(store, run_id)
    assert [p["attempts"] for p in summary["probes"]] == [24, 16]


def test_an_unknown_probe_option_is_one_user_error_naming_probe_and_option():
    from redline.engine import ScanError, build_probes

    config = ScanConfig(model="test.echo", probes="harmful.Requests", probe_options={"harmful.Requests": {"bogus": 1}})
    with pytest.raises(ScanError, match=r"^probe_options for harmful.Requests: the probe has no option 'bogus'$"):
        build_probes(config)
