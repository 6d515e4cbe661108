"""Kill -9 and resume against a local OpenAI-compatible server; group commit; streaming."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from fakes import ScriptedGenerator
from helpers.mock_openai import MockOpenAI
from helpers.stored_rows import comparable, rows
from redline.attempt import Message
from redline.engine import ScanConfig, ScanError, StoredAttempts, scan
from redline.generators.base import Generator
from redline.probes.base import ProbeItem, Prompt, PromptProbe
from redline.probes.runner import AttemptRunner
from redline.report.summary import run_summary
from redline.store import BatchWriter, RunLocked, Store

FOUR_PROBES = "harmful.Requests,encoding.Base64,encoding.Hex,encoding.ROT13"  # 24 + 3 × 12 attempts
PROBES = FOUR_PROBES + ",injection.HiddenInData"  # 76 attempts, every prompt distinct


def responder(messages, body):
    prompt = messages[-1]["content"]
    return "I'm sorry, I can't help with that." if len(prompt) % 3 == 0 else f"Sure! {prompt[:30]}"


def scan_cli(server: MockOpenAI, db, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "redline",
            "scan",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--probes",
            PROBES,
            "--concurrency",
            "4",
            "--store",
            str(db),
            "--json",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_kill_9_mid_scan_then_resume_equals_an_uninterrupted_run(tmp_path):
    with MockOpenAI(responder=responder) as server:
        proc = scan_cli(server, tmp_path / "whole.db")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        whole = json.loads(out)
        assert len(server.requests) == 76

    db = tmp_path / "killed.db"
    # The first 12 requests are answered; every later one is held until the scan has been killed,
    # so the kill lands at the same point whatever the machine's speed: 12 attempts stored and
    # 4 (--concurrency) requests in flight.
    release = threading.Event()

    def hold_after_twelve(index: int, body: dict) -> None:
        if index >= 12:
            release.wait(timeout=120)  # a guard against a hang only

    with MockOpenAI(responder=responder, faults=hold_after_twelve) as server:
        proc = scan_cli(server, db)
        deadline = time.monotonic() + 120  # a guard against a hang only
        stored = 0
        while stored < 12 and time.monotonic() < deadline and proc.poll() is None:
            if db.exists():
                try:
                    with sqlite3.connect(db) as con:
                        stored = con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
                except sqlite3.OperationalError:
                    stored = 0
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        release.set()
        with sqlite3.connect(db) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            (run_id,) = con.execute("SELECT run_id FROM runs").fetchone()
        before = rows(db)
        assert len(before) == 12, len(before)
        sent_before = sum(server.counts.values())
        assert sent_before == 16  # 12 answered, 4 held when the scan died

        proc = scan_cli(server, db, "--resume", run_id)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        resumed = json.loads(out)

        after = rows(db)
        # no finished attempt was redone: its row is byte-for-byte the same, its prompt sent once
        for key, data in before.items():
            assert after[key] == data
            assert server.counts[data["prompt"]["turns"][-1]["content"]["text"]] == 1
        # only requests in flight at the kill (at most --concurrency) were sent twice; a request
        # the kill cut off half-way through its body reaches the mock as unreadable JSON: not a prompt
        prompts = {d["prompt"]["turns"][-1]["content"]["text"] for d in after.values()}
        counts = {p: c for p, c in server.counts.items() if p in prompts}
        assert len(counts) == 76 and set(server.counts) - prompts <= {
            k for k in server.counts if k.startswith('{"raw"')
        }
        twice = [p for p, c in counts.items() if c > 1]
        assert len(twice) <= 4 and all(c <= 2 for c in counts.values())
        assert sum(counts.values()) == 76 + len(twice) and sent_before >= len(before)

    assert resumed["status"] == "complete"
    assert resumed["probes"] == whole["probes"]  # same counts, rates, intervals
    reference = rows(tmp_path / "whole.db")
    assert {k: comparable(v) for k, v in after.items()} == {k: comparable(v) for k, v in reference.items()}


# kept local rather than a fakes.ScriptedGenerator: it holds requests back until a whole wave is waiting
class Gate(Generator):
    """Answers requests in waves, without any clock: a request waits until ``width`` requests
    (or all that are left of ``total``) are waiting, then the whole wave is answered at once —
    so the attempts of a wave finish together whatever the machine's speed."""

    family = "test.gate"

    def __init__(self, total: int, width: int) -> None:
        super().__init__()
        self.left, self.width = total, width
        self.waiting: list[asyncio.Future] = []
        self.waves: list[int] = []

    async def generate(self, conversation, n=1):
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        if len(self.waiting) == min(self.width, self.left):
            wave, self.waiting = self.waiting, []
            self.left -= len(wave)
            self.waves.append(len(wave))
            for waiter in wave:
                waiter.set_result(None)
        await future
        return [Message("ok") for _ in range(n)]


async def test_group_commit_batches_attempts_and_commits_before_reporting(tmp_path, monkeypatch):
    store = Store(tmp_path / "g.db")
    reported: list[int] = []
    config = ScanConfig(model="test.gate", probes=FOUR_PROBES, concurrency=16)
    gate = Gate(total=60, width=16)

    def progress(event, done, total):
        if event == "advance":
            # an attempt is reported finished only once it is in the file (read by another connection)
            with sqlite3.connect(tmp_path / "g.db") as con:
                reported.append(con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])

    commits: list[int] = []
    original = Store.write_batch

    def counting(self, attempt_rows, cache_items=None):
        if attempt_rows:
            commits.append(len(attempt_rows))
        return original(self, attempt_rows, cache_items)

    monkeypatch.setattr(Store, "write_batch", counting)
    async with asyncio.timeout(60):  # a hang guard only (a gate that never opens): no assertion rests on time
        run_id = await scan(config, store, generator=gate, progress=progress)

    assert store.count_attempts(run_id) == 60
    assert gate.waves == [16, 16, 16, 12]  # the gate really released the requests in waves
    # an attempt is reported finished only once it is in the file: every report finds the
    # attempts of every transaction committed so far, its own included
    assert all(count >= i + 1 for i, count in enumerate(reported))
    assert set(reported) <= set(itertools.accumulate(commits))
    # attempts finishing together share a transaction (the first wave at once, later ones with
    # those that finish within the scan's commit interval): never more transactions than waves
    assert commits[0] >= 16  # the first wave whole (an attempt of the next may join it)
    assert sum(commits) == 60 and len(commits) <= len(gate.waves)


async def test_batch_writer_sees_queued_cache_entries_and_flushes_on_close(tmp_path):
    store = Store(tmp_path / "w.db")
    async with BatchWriter(store) as writer:
        writer.cache_put("k", [{"text": "v"}])
        assert writer.cache_get("k") == [{"text": "v"}]
        assert store.cache_get("k") is None  # not committed yet…
    assert store.cache_get("k") == [{"text": "v"}]  # …but committed when the writer closes


class Many(PromptProbe):
    """A probe with many prompts, produced lazily (as the benchmark's synthetic probe does)."""

    name = "test.Many"
    recommended_detectors = ("refusal.Compliance",)

    def __init__(self, count: int, **kwargs):
        super().__init__(**kwargs)
        self.count = count
        self.made = 0

    def _create_probe_items(self):
        return []

    def create_attempts(self):
        probe = self

        class Lazy:
            def __len__(self):
                return probe.count

            def __iter__(self):
                item = ProbeItem([Prompt("p")])
                for seq in range(probe.count):
                    probe.made += 1
                    yield probe.make_attempt(seq, seq, item, 0, Prompt(f"prompt {seq}"), 0)

        return Lazy()


async def test_attempts_are_pulled_lazily_and_not_kept(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.db")
    probe = Many(200)
    pulled_when_first_done = []

    def note_first_request(conversation):
        if not pulled_when_first_done:
            pulled_when_first_done.append(probe.made)
        return "Sure, here is how: step 1, open it; step 2, use it."

    def watch():
        """Answers with two steps (after yielding to the loop once) and notes how many attempts were
        made when the first request came."""
        return ScriptedGenerator(note_first_request, name="test.watch")

    monkeypatch.setattr("redline.engine.pipeline.build_probes", lambda config: [probe])
    run_id = await scan(ScanConfig(model="test.watch", concurrency=4), store, generator=watch())
    assert pulled_when_first_done[0] <= 5  # not the 200 attempts up front
    assert store.count_attempts(run_id) == 200
    assert run_summary(store, run_id)["probes"][0]["failure_rate"] == 1.0
    stored = StoredAttempts(store, run_id, "test.Many")
    assert len(stored) == 200 and stored[5].seq == 5 and sum(1 for _ in stored) == 200

    saved: list[int] = []

    async def save(attempt):
        store.save_attempt(run_id, attempt)
        saved.append(attempt.seq)

    runner = AttemptRunner(watch(), concurrency=4, on_done=save, keep=False)
    await runner.start_detectors([probe])
    assert await runner.run_all((probe, a) for a in Many(10).create_attempts()) == []  # nothing kept
    assert sorted(saved) == list(range(10))  # every attempt went through on_done


def test_two_scans_share_a_new_store_at_the_same_moment(tmp_path):
    for round_ in range(3):  # the race is at the store's creation: give it a few chances to show
        db = tmp_path / f"shared{round_}.db"
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "redline",
                    "scan",
                    "-m",
                    model,
                    "-p",
                    "harmful.Requests",
                    "--sample",
                    "5",
                    "--store",
                    str(db),
                    "--json",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for model in ("test.echo", "test.blank")
        ]
        results = [p.communicate(timeout=120) for p in procs]
        for proc, (out, err) in zip(procs, results):
            assert proc.returncode == 0, err
            assert json.loads(out)["status"] == "complete"
        with sqlite3.connect(db) as con:
            assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
            assert con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 10


# -- what a resume may change, and the run lock -----------------------------------------------------


async def test_a_resume_applies_transport_options_and_refuses_ones_that_change_the_run(tmp_path):
    first_try_fails = lambda index, body: (500, {}, '{"error": "busy"}') if index == 0 else None
    with MockOpenAI(faults=first_try_fails) as server:
        options = {"base_url": server.base_url, "max_retries": 0, "backoff_base": 0.0}
        with Store(tmp_path / "r.db") as store:
            run_id = await scan(
                ScanConfig(model="openai:m", probes="encoding.Hex", concurrency=1, generator_options=options), store
            )
            assert store.count_attempts(run_id, errored=True) == 1  # no retry allowed: the 500 stuck
            for change, named in (
                (ScanConfig(model="openai:other"), "model"),
                (ScanConfig(probes="encoding.Base64", sample=2), "probes, sample"),
                (ScanConfig(generator_options={"temperature": 0.9, "timeout": 5}), "generator_options.temperature"),
            ):
                with pytest.raises(ScanError, match=f"resuming run {run_id} keeps its own settings; .*: {named}"):
                    await scan(change, store, resume=run_id, retry_errors=True)
            assert len(server.requests) == 12  # refused before anything was sent
            # how requests travel is the resuming process's own business
            server.faults = lambda index, body: (500, {}, "{}") if index == 12 else None
            await scan(
                ScanConfig(concurrency=2, generator_options={"max_retries": 2, "timeout": 5}),
                store,
                resume=run_id,
                retry_errors=True,
                trust_settings=True,
            )
            assert store.count_attempts(run_id, errored=True) == 0 and len(server.requests) == 14
            assert store.get_run(run_id).config["scan"]["generator_options"]["max_retries"] == 0  # stored as started


async def test_a_resume_of_a_run_another_scan_holds_is_refused_before_anything_runs(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store, Store(db) as other:
        run_id = await scan(ScanConfig(model="test.echo", probes="encoding.Hex"), store)
        other.claim_run(run_id)  # another scan of the run is live
        gen = ScriptedGenerator()
        with pytest.raises(RunLocked, match=f"run {run_id} is being scanned by process {os.getpid()}"):
            await scan(None, store, resume=run_id, generator=gen)
        assert gen.calls == [] and store.is_live(run_id)  # held by the other store
        other.release_run(run_id)
        await scan(None, store, resume=run_id, generator=gen)
        assert not store.is_live(run_id)  # released once the scan ended
        assert store.get_run(run_id).status == "complete"


async def test_a_base_url_password_is_not_stored_and_must_be_given_again_to_resume(tmp_path):
    """The store keeps ``user:***@``; resuming takes the password from the same URL given again."""
    with MockOpenAI(faults=lambda index, body: (401, {}, "{}") if index == 0 else None) as server:
        url = server.base_url.replace("http://", "http://bob:pw-0123456789@")
        store = Store(tmp_path / "s.db")
        config = ScanConfig(model="openai:m", probes="harmful.Requests", sample=2, generator_options={"base_url": url})
        with pytest.raises(Exception, match="refused the key"):
            await scan(config, store)
        (run,) = store.list_runs()
        masked = url.replace("pw-0123456789", "***")
        assert store.get_run(run.run_id).config["scan"]["generator_options"]["base_url"] == masked
        with pytest.raises(ScanError, match="--base-url"):
            await scan(None, store, resume=run.run_id)
        sent = len(server.headers)
        await scan(ScanConfig(generator_options={"base_url": url}), store, resume=run.run_id, trust_settings=True)
        assert len(server.headers) > sent and store.get_run(run.run_id).status == "complete"
        assert server.headers[-1]["Authorization"] == "Basic " + base64.b64encode(b"bob:pw-0123456789").decode()
        store.close()
