"""Direct unit tests of the run store: runs, attempts, probe results, the cache, the secrets
check, persistence across connections, and the group-commit :class:`BatchWriter`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sqlite3
import threading
import time

import pytest

from redline.attempt import Attempt, Conversation, Message, Turn
from redline.errors import RedlineError
from redline.evaluation import FAIL, PASS, UNDETECTED
from redline.store import (
    LABEL_FAIL,
    LABEL_PASS,
    RUN_COMPLETE,
    RUN_INTERRUPTED,
    RUN_RUNNING,
    AttemptCounts,
    BatchWriter,
    DamagedRun,
    ProbeResultRecord,
    ReviewRecord,
    RunListing,
    RunNotFound,
    RunRecord,
    Store,
    StoreError,
)


def make_attempt(seq, probe="probe.A", outputs=("ok",), evaluation=None, error=None, status=2):
    attempt = Attempt(
        prompt=Conversation(
            turns=[
                Turn("system", Message("be helpful")),
                Turn("user", Message(f"prompt {seq}", lang="en")),
            ]
        ),
        probe_classname=probe,
        seq=seq,
        status=status,
        targets=["secret"],
    )
    attempt.outputs = list(outputs)
    if evaluation is not None:
        attempt.notes["evaluation"] = list(evaluation)
    if error is not None:
        attempt.notes["error"] = error
    return attempt


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "runs.db") as opened:
        yield opened


# -- runs ---------------------------------------------------------------------------------------


def test_create_get_and_list_runs(store):
    config = {"scan": {"probes": "harmful.Requests", "concurrency": 4}, "generator": {"model": "m"}}
    run_id = store.create_run("openai:m", config)
    run = store.get_run(run_id)
    assert isinstance(run, RunRecord)
    assert run.run_id == run_id
    assert run.model == "openai:m"
    assert run.status == RUN_RUNNING
    assert run.config == config
    assert run.message is None
    assert run.created == run.updated

    other = store.create_run("test.other", {})
    assert other != run_id
    listed = {r.run_id: r for r in store.list_runs()}
    assert set(listed) == {run_id, other}
    assert listed[run_id].model == "openai:m" and listed[run_id].status == RUN_RUNNING
    assert listed[run_id].attempts == listed[run_id].failed == listed[run_id].errored == 0


def test_a_damaged_run_row_is_listed_as_damaged_in_its_place_and_the_other_runs_as_usual(tmp_path):
    path = tmp_path / "runs.db"
    with Store(path) as store:
        good = store.create_run("m", {})
        store.save_attempt(good, make_attempt(0, evaluation=["fail"]))
        bad = store.create_run("m", {})
        store.save_attempt(bad, make_attempt(0))
        newer = store.create_run("m", {})
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE runs SET created = 'yesterday' WHERE run_id = ?", (bad,))
        con.execute("UPDATE runs SET created = created + 10 WHERE run_id = ?", (newer,))
    con.close()
    with Store(path) as store:
        listed = store.list_runs()
    assert listed[0] == DamagedRun(run_id=bad, problem="its creation time is not a time")
    assert [(r.run_id, type(r)) for r in listed[1:]] == [(newer, RunListing), (good, RunListing)]
    assert (listed[2].attempts, listed[2].failed) == (1, 1)
    assert listed[0].as_dict() == {"run_id": bad, "status": "damaged", "problem": "its creation time is not a time"}


def test_list_runs_counts_attempts_failures_and_errors(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, outputs=("a", "b"), evaluation=["fail", "fail"]))
    store.save_attempt(run_id, make_attempt(1, evaluation=["pass"]))
    store.save_attempt(run_id, make_attempt(2, error="timeout"))
    (row,) = store.list_runs()
    assert (row.attempts, row.failed, row.errored) == (3, 2, 1)


def test_an_unknown_run_is_not_found(store):
    store.create_run("m", {})
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        store.get_run("nope")
    assert issubclass(RunNotFound, StoreError)
    assert issubclass(StoreError, RedlineError) and issubclass(StoreError, RuntimeError)


def test_set_run_status_with_and_without_a_message(store):
    run_id = store.create_run("m", {})
    store.set_run_status(run_id, RUN_INTERRUPTED, "stopped by the user")
    run = store.get_run(run_id)
    assert run.status == RUN_INTERRUPTED
    assert run.message == "stopped by the user"
    assert run.updated >= run.created
    store.set_run_status(run_id, RUN_COMPLETE)
    run = store.get_run(run_id)
    assert run.status == RUN_COMPLETE
    assert run.message is None
    assert {r.status for r in store.list_runs()} == {RUN_COMPLETE}


def test_run_status_constants():
    assert (RUN_RUNNING, RUN_COMPLETE, RUN_INTERRUPTED) == ("running", "complete", "interrupted")


# -- secrets --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, where",
    [
        ({"api_key": "sk-live-123"}, "config.api_key"),
        ({"generator": {"OPENAI_API_KEY": "sk-live-123"}}, "config.generator.OPENAI_API_KEY"),
        ({"generator": {"headers": {"Authorization": "Bearer abc123"}}}, "config.generator.headers.Authorization"),
        ({"password": "hunter2"}, "config.password"),
        ({"db": {"passwd": "hunter2"}}, "config.db.passwd"),
        ({"auth_token": "abc"}, "config.auth_token"),
        ({"token": "abc"}, "config.token"),
        ({"client_secret": "abc"}, "config.client_secret"),
        ({"headers": [{"x": 1}, {"credentials": "abc"}]}, "config.headers[1].credentials"),
        # text around an environment reference that is more than a short scheme word is a secret
        ({"authorization": "Bearer ${TOKEN} and the literal key sk-123"}, "config.authorization"),
    ],
)
def test_create_run_refuses_secret_looking_settings(store, config, where):
    with pytest.raises(StoreError, match=re.escape(f"secret-looking setting {where}")):
        store.create_run("m", config)
    assert store.list_runs() == []  # nothing was stored


@pytest.mark.parametrize(
    "config",
    [
        {"api_key_env": "OPENAI_API_KEY"},  # names the variable, does not hold the key
        {"headers": {"Authorization": "Bearer ${API_TOKEN}"}},  # a reference to the environment
        {"api_key": "${OPENAI_API_KEY}"},
        {"api_key": None},
        {"api_key": ""},
        {"max_tokens": 100, "tokenizer": "gpt2", "token_budget": 5},  # not a token setting
        {"prompts": ["my password is hunter2"]},  # values are not checked, only keys
    ],
)
def test_create_run_accepts_settings_that_hold_no_secret(store, config):
    run_id = store.create_run("m", config)
    assert store.get_run(run_id).config == config


# -- attempts -----------------------------------------------------------------------------------


def test_attempts_round_trip_in_probe_and_seq_order(store):
    run_id = store.create_run("m", {})
    saved = [
        make_attempt(2, "probe.B"),
        make_attempt(1, "probe.A"),
        make_attempt(0, "probe.B"),
        make_attempt(0, "probe.A"),
    ]
    for attempt in saved:
        store.save_attempt(run_id, attempt)
    loaded = list(store.iter_attempts(run_id))
    assert [(a.probe_classname, a.seq) for a in loaded] == [
        ("probe.A", 0),
        ("probe.A", 1),
        ("probe.B", 0),
        ("probe.B", 2),
    ]
    by_key = {(a.probe_classname, a.seq): a for a in saved}
    for attempt in loaded:
        original = by_key[(attempt.probe_classname, attempt.seq)]
        assert attempt == original  # the whole attempt, uuid included
        assert [t.role for t in attempt.prompt.turns] == ["system", "user"]
        assert attempt.outputs[0].text == "ok"
    assert [a.seq for a in store.iter_attempts(run_id, probe="probe.B")] == [0, 2]
    assert store.count_attempts(run_id) == 4
    assert store.count_attempts(run_id, probe="probe.A") == 2
    assert store.count_attempts(run_id, probe="probe.C") == 0


def test_attempts_are_kept_per_run(store):
    first = store.create_run("m", {})
    second = store.create_run("m", {})
    store.save_attempt(first, make_attempt(0))
    assert store.count_attempts(first) == 1
    assert store.count_attempts(second) == 0
    assert list(store.iter_attempts(second)) == []


def test_get_attempt_reads_one_attempt_by_run_probe_and_seq(store):
    run_id = store.create_run("m", {})
    other = store.create_run("m", {})
    saved = make_attempt(3, "probe.B", evaluation=["fail"])
    store.save_attempt(run_id, saved)
    store.save_attempt(run_id, make_attempt(3, "probe.A"))
    store.save_attempt(other, make_attempt(4, "probe.B"))
    assert store.get_attempt(run_id, "probe.B", 3) == saved  # the whole attempt, uuid included
    assert store.get_attempt(run_id, "probe.A", 3).probe_classname == "probe.A"
    for where in [(run_id, "probe.B", 4), (run_id, "probe.C", 3), (other, "probe.B", 3), ("no-run", "probe.B", 3)]:
        assert store.get_attempt(*where) is None, where
    for seq in (-1, 2**63, -(2**63) - 1, 10**30):  # beyond SQLite's integers: not stored, no error
        assert store.get_attempt(run_id, "probe.B", seq) is None
    retried = make_attempt(3, "probe.B", evaluation=["pass"])
    store.save_attempt(run_id, retried)
    assert store.get_attempt(run_id, "probe.B", 3) == retried  # the latest write


def test_saving_an_attempt_again_replaces_it(store):
    run_id = store.create_run("m", {})
    attempt = make_attempt(0, error="timeout")
    store.save_attempt(run_id, attempt)
    retried = make_attempt(0, evaluation=["fail"])
    store.save_attempt(run_id, retried)
    assert store.count_attempts(run_id) == 1
    (loaded,) = store.iter_attempts(run_id)
    assert loaded == retried and "error" not in loaded.notes


def test_an_attempt_is_serialised_when_saved(store):
    run_id = store.create_run("m", {})
    attempt = make_attempt(0)
    store.save_attempt(run_id, attempt)
    attempt.notes["evaluation"] = ["fail"]  # changed after saving: not in the store
    (loaded,) = store.iter_attempts(run_id)
    assert "evaluation" not in loaded.notes
    assert store.attempt_counts(run_id)["probe.A"].failed == 0


def test_errored_attempts_are_filtered_and_optionally_left_out_of_finished_seqs(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, evaluation=["pass"]))
    store.save_attempt(run_id, make_attempt(1, error="GeneratorError: 500"))
    store.save_attempt(run_id, make_attempt(2, evaluation=["fail"]))
    store.save_attempt(run_id, make_attempt(3, error="timeout"))
    store.save_attempt(run_id, make_attempt(0, "probe.B", error="timeout"))

    assert store.finished_seqs(run_id, "probe.A") == {0, 1, 2, 3}
    assert store.finished_seqs(run_id, "probe.A", include_errors=True) == {0, 1, 2, 3}
    assert store.finished_seqs(run_id, "probe.A", include_errors=False) == {0, 2}
    assert store.finished_seqs(run_id, "probe.B", include_errors=False) == set()
    assert store.finished_seqs(run_id, "probe.C") == set()

    assert [a.seq for a in store.iter_attempts(run_id, "probe.A", errored=True)] == [1, 3]
    assert [a.seq for a in store.iter_attempts(run_id, "probe.A", errored=False)] == [0, 2]
    assert [(a.probe_classname, a.seq) for a in store.iter_attempts(run_id, errored=True)] == [
        ("probe.A", 1),
        ("probe.A", 3),
        ("probe.B", 0),
    ]
    assert store.count_attempts(run_id, "probe.A", errored=True) == 2
    assert store.count_attempts(run_id, "probe.A", errored=False) == 2
    assert store.count_attempts(run_id, errored=True) == 3
    assert store.count_attempts(run_id, errored=False) == 2


def test_an_empty_error_note_does_not_count_as_an_error(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, error=""))
    assert store.finished_seqs(run_id, "probe.A", include_errors=False) == {0}
    assert store.attempt_counts(run_id)["probe.A"].errored == 0


def test_attempt_counts_per_probe(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, outputs=("a", "b", "c"), evaluation=["fail", "pass", "fail"]))
    store.save_attempt(run_id, make_attempt(1, outputs=("a", "b"), evaluation=["undetected", "fail"]))
    store.save_attempt(run_id, make_attempt(2, outputs=("a",), error="boom"))
    store.save_attempt(run_id, make_attempt(0, "probe.B", outputs=("a",), evaluation=["pass"]))
    assert store.attempt_counts(run_id) == {
        "probe.A": AttemptCounts(attempts=3, outputs=6, failed=3, errored=1),
        "probe.B": AttemptCounts(attempts=1, outputs=1, failed=0, errored=0),
    }
    assert store.attempt_counts(store.create_run("m", {})) == {}


def test_write_batch_is_all_or_nothing(store):
    run_id = store.create_run("m", {})
    good = Store.attempt_row(run_id, make_attempt(0))
    bad = ("too", "short")
    with pytest.raises(StoreError, match="cannot write"):
        store.write_batch([good, bad], {"k": ["v"]})
    assert store.count_attempts(run_id) == 0
    assert store.cache_get("k") is None
    store.write_batch([good, Store.attempt_row(run_id, make_attempt(1))], {"k": ["v"]})
    assert store.count_attempts(run_id) == 2
    assert store.cache_get("k") == ["v"]


# -- probe results and cache -----------------------------------------------------------------


def test_probe_results_come_back_in_position_order(store):
    run_id = store.create_run("m", {})
    store.save_probe_result(run_id, "probe.C", 2, {"metrics": {"failure_rate": {"value": 0.5}}})
    store.save_probe_result(run_id, "probe.A", 0, {"metrics": {}})
    store.save_probe_result(run_id, "probe.B", 1, {"marks": {"failure_rate": {"mark": "B"}}})
    results = store.probe_results(run_id)
    assert list(results) == ["probe.A", "probe.B", "probe.C"]
    assert [r.position for r in results.values()] == [0, 1, 2]
    assert results["probe.C"].as_dict() == {"metrics": {"failure_rate": {"value": 0.5}}}
    assert results["probe.B"].as_dict() == {"marks": {"failure_rate": {"mark": "B"}}}
    # saving a probe's result again replaces it (and its position)
    store.save_probe_result(run_id, "probe.A", 3, {"metrics": {"x": {"value": 1}}})
    results = store.probe_results(run_id)
    assert list(results) == ["probe.B", "probe.C", "probe.A"]
    assert results["probe.A"] == ProbeResultRecord("probe.A", 3, {"metrics": {"x": {"value": 1}}})
    assert store.probe_results(store.create_run("m", {})) == {}


def test_cache_get_and_put(store):
    assert store.cache_get("missing") is None
    outputs = [{"text": "hello", "lang": None}, None]
    store.cache_put("key", outputs)
    assert store.cache_get("key") == outputs
    store.cache_put("key", [{"text": "again"}])
    assert store.cache_get("key") == [{"text": "again"}]
    store.cache_put("empty", [])
    assert store.cache_get("empty") == []


# -- the file -----------------------------------------------------------------------------------


def test_everything_persists_across_store_instances(tmp_path):
    path = tmp_path / "persist.db"
    with Store(path) as first:
        run_id = first.create_run("m", {"scan": {"seed": 1}})
        attempt = make_attempt(0, evaluation=["fail"])
        first.save_attempt(run_id, attempt)
        first.save_probe_result(run_id, "probe.A", 0, {"metrics": {}})
        first.cache_put("k", ["v"])
        first.set_run_status(run_id, RUN_COMPLETE, "done")
    with Store(path) as second:
        run = second.get_run(run_id)
        assert run.status == RUN_COMPLETE and run.message == "done"
        assert run.config == {"scan": {"seed": 1}}
        assert list(second.iter_attempts(run_id)) == [attempt]
        assert second.probe_results(run_id) == {"probe.A": ProbeResultRecord("probe.A", 0, {"metrics": {}})}
        assert second.cache_get("k") == ["v"]


def test_a_write_is_visible_to_another_connection_at_once(tmp_path):
    path = tmp_path / "shared.db"
    with Store(path) as writer, Store(path) as reader:
        run_id = writer.create_run("m", {})
        writer.save_attempt(run_id, make_attempt(0))
        assert reader.count_attempts(run_id) == 1


def test_a_missing_folder_or_a_foreign_file_is_a_store_error(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "nowhere" / "runs.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, " * 100)
    with pytest.raises(StoreError, match="cannot open store"):
        Store(junk)


# -- BatchWriter ----------------------------------------------------------------------------------


def stored(path, run_id) -> int:
    """Attempts of ``run_id`` in the file, seen through a separate connection."""
    with Store(path) as other:
        return other.count_attempts(run_id)


async def test_batch_writer_save_returns_only_once_committed(tmp_path):
    path = tmp_path / "batch.db"
    store = Store(path)
    run_id = store.create_run("m", {})
    async with BatchWriter(store) as writer:
        for seq in range(3):
            await writer.save_attempt(run_id, make_attempt(seq))
            assert stored(path, run_id) == seq + 1  # in the file as soon as the call returns
        assert writer.commits == 3
    assert [a.seq for a in store.iter_attempts(run_id)] == [0, 1, 2]


async def test_batch_writer_commits_attempts_saved_together_in_one_transaction(tmp_path):
    path = tmp_path / "batch.db"
    store = Store(path)
    run_id = store.create_run("m", {})
    seen_on_return: list[int] = []

    async def save(seq):
        await writer.save_attempt(run_id, make_attempt(seq))
        seen_on_return.append(stored(path, run_id))

    async with BatchWriter(store) as writer:
        await asyncio.gather(*(save(seq) for seq in range(10)))
        assert writer.commits == 1
    # the first call to return already found all ten in the file: one transaction
    assert seen_on_return == [10] * 10
    assert store.count_attempts(run_id) == 10


@pytest.mark.parametrize("thread", [True, False])
async def test_batch_writer_commits_at_once_then_at_most_once_per_interval(tmp_path, thread):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    committed: list[int] = []
    async with asyncio.timeout(60):  # a hang guard only
        async with BatchWriter(store, interval=30.0, thread=thread, on_commit=committed.append) as writer:
            first = asyncio.create_task(writer.save_attempt(run_id, make_attempt(0)))
            await first  # the first transaction does not wait for the interval
            assert committed == [1]
            later = []
            for seq in range(1, 10):  # saved one after another, well within the interval
                later.append(asyncio.create_task(writer.save_attempt(run_id, make_attempt(seq))))
                await asyncio.sleep(0.01)
            assert committed == [1]  # held for the next transaction...
        await asyncio.gather(*later)  # ...which closing the writer commits, all nine together
    assert committed == [1, 9] and store.count_attempts(run_id) == 10
    # without an interval, attempts saved apart are committed apart
    committed.clear()
    async with BatchWriter(store, thread=thread, on_commit=committed.append) as writer:
        for seq in range(10, 13):
            await writer.save_attempt(run_id, make_attempt(seq))
    assert committed == [1, 1, 1]


async def test_a_hurried_batch_writer_stops_holding_transactions(tmp_path):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    committed: list[int] = []
    async with asyncio.timeout(20):  # a hang guard: without hurry() the second save waits 60 s
        async with BatchWriter(store, interval=60.0, on_commit=committed.append) as writer:
            await writer.save_attempt(run_id, make_attempt(0))  # at once: nothing committed before
            second = asyncio.create_task(writer.save_attempt(run_id, make_attempt(1)))
            await asyncio.sleep(0.05)
            assert committed == [1]  # held for the interval...
            writer.hurry()
            await second  # ...until hurried
            assert committed == [1, 1] and stored(tmp_path / "batch.db", run_id) == 2
            await writer.save_attempt(run_id, make_attempt(2))  # later ones are not held either
            assert committed == [1, 1, 1]


async def test_batch_writer_splits_at_max_batch(tmp_path, monkeypatch):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    sizes: list[int] = []
    original = Store.write_batch

    def counting(self, rows, cache_items=None):
        sizes.append(len(rows))
        return original(self, rows, cache_items)

    monkeypatch.setattr(Store, "write_batch", counting)  # the writing thread's connection too
    async with BatchWriter(store, max_batch=3) as writer:
        await asyncio.gather(*(writer.save_attempt(run_id, make_attempt(seq)) for seq in range(7)))
    assert sizes == [3, 3, 1]
    assert writer.commits == 3
    assert store.count_attempts(run_id) == 7


async def test_batch_writer_commits_queued_attempts_when_the_block_is_left_by_an_exception(tmp_path):
    path = tmp_path / "batch.db"
    store = Store(path)
    run_id = store.create_run("m", {})
    with pytest.raises(RuntimeError, match="scan stopped"):
        async with BatchWriter(store) as writer:
            pending = [asyncio.create_task(writer.save_attempt(run_id, make_attempt(seq))) for seq in range(4)]
            raise RuntimeError("scan stopped")
    await asyncio.gather(*pending)  # every save completes, none fails
    assert stored(path, run_id) == 4


async def test_on_commit_counts_every_attempt_committed_cancelled_saves_included(tmp_path):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    counted: list[int] = []
    async with BatchWriter(store, max_batch=3, on_commit=counted.append) as writer:
        await asyncio.gather(*(writer.save_attempt(run_id, make_attempt(seq)) for seq in range(7)))
        assert counted == [3, 3, 1]
        saves = [asyncio.create_task(writer.save_attempt(run_id, make_attempt(seq))) for seq in range(7, 11)]
        await asyncio.sleep(0)  # queued
        for task in saves:
            task.cancel()  # a scan stopping: the rows are committed on close all the same
    assert sum(counted) == store.count_attempts(run_id) == 11
    await writer.save_attempt(run_id, make_attempt(11))  # outside the block: at once
    assert sum(counted) == store.count_attempts(run_id) == 12


async def test_batch_writer_cache_entries_are_visible_queued_and_stored_on_close(tmp_path):
    store = Store(tmp_path / "batch.db")
    async with BatchWriter(store) as writer:
        store.cache_put("old", ["stored before"])
        writer.cache_put("new", ["queued"])
        assert writer.cache_get("new") == ["queued"]
        assert writer.cache_get("old") == ["stored before"]
        assert writer.cache_get("missing") is None
    assert store.cache_get("new") == ["queued"]


async def test_batch_writer_outside_its_block_writes_at_once(tmp_path):
    path = tmp_path / "batch.db"
    store = Store(path)
    run_id = store.create_run("m", {})
    writer = BatchWriter(store)  # never entered
    await writer.save_attempt(run_id, make_attempt(0))
    writer.cache_put("k", ["v"])
    assert stored(path, run_id) == 1
    assert store.cache_get("k") == ["v"]
    async with writer:
        pass
    await writer.save_attempt(run_id, make_attempt(1))  # after close: committed one by one
    assert stored(path, run_id) == 2


@pytest.mark.parametrize("thread", [True, False])
async def test_a_failed_commit_raises_store_error_in_every_waiting_save(tmp_path, thread):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    async with BatchWriter(store, thread=thread) as writer:
        await writer.save_attempt(run_id, make_attempt(0))  # the writer's connection is open
        store._db.execute("DROP TABLE attempts")  # every write of an attempt from now on fails
        results = await asyncio.gather(
            *(writer.save_attempt(run_id, make_attempt(seq)) for seq in range(1, 4)), return_exceptions=True
        )
    assert len(results) == 3
    assert all(isinstance(r, StoreError) for r in results)
    assert "attempts" in str(results[0])  # the cause, in one line
    assert writer.commits == 1


async def test_batch_writer_commits_in_its_own_thread_while_the_loop_goes_on(tmp_path, monkeypatch):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    threads: set[str] = set()
    original = Store.write_batch

    def slow(self, rows, cache_items=None):
        threads.add(threading.current_thread().name)
        time.sleep(0.2)  # a slow disk
        return original(self, rows, cache_items)

    monkeypatch.setattr(Store, "write_batch", slow)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    clock = asyncio.create_task(ticker())
    async with BatchWriter(store, thread=True) as writer:
        await writer.save_attempt(run_id, make_attempt(0))
    clock.cancel()
    assert threads and all(name.startswith("redline-store") for name in threads)
    assert ticks >= 5  # the loop was not blocked while the transaction was written
    assert stored(tmp_path / "batch.db", run_id) == 1


@pytest.mark.parametrize("thread", [True, False])
async def test_batch_writer_closed_while_a_transaction_is_written_settles_every_save(tmp_path, monkeypatch, thread):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    original = Store.write_batch

    def slow(self, rows, cache_items=None):
        time.sleep(0.1)
        return original(self, rows, cache_items)

    monkeypatch.setattr(Store, "write_batch", slow)
    async with BatchWriter(store, thread=thread) as writer:
        first = asyncio.create_task(writer.save_attempt(run_id, make_attempt(0)))
        await asyncio.sleep(0.02)  # the first transaction is being written
        later = [asyncio.create_task(writer.save_attempt(run_id, make_attempt(seq))) for seq in (1, 2)]
        await asyncio.sleep(0)
    await asyncio.gather(first, *later)  # none is left waiting, none fails
    assert stored(tmp_path / "batch.db", run_id) == 3


# -- records ------------------------------------------------------------------------------------


def test_run_record_as_dict_is_the_previous_get_run_dict(store):
    config = {"scan": {"generations": 3}, "probe_names": ["probe.B", "probe.A"], "generator": {"model": "m"}}
    run_id = store.create_run("openai:m", config)
    store.set_run_status(run_id, RUN_INTERRUPTED, "stopped")
    run = store.get_run(run_id)
    data = run.as_dict()
    assert list(data) == ["run_id", "created", "updated", "model", "status", "config", "message"]
    assert data["run_id"] == run_id and data["config"] == config and data["message"] == "stopped"
    assert (run.scan, run.probe_names, run.generations) == ({"generations": 3}, ["probe.B", "probe.A"], 3)
    run.probe_names.append("probe.C")  # a copy: the record is not changed through it
    assert run.probe_names == ["probe.B", "probe.A"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = RUN_COMPLETE  # type: ignore[misc]


def test_run_record_defaults_for_a_config_without_scan_settings(store):
    run = store.get_run(store.create_run("m", {}))
    assert (run.scan, run.probe_names, run.generations) == ({}, [], 1)


def test_list_runs_records_as_dicts_keep_the_runs_json_keys(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, evaluation=["fail"]))
    (listing,) = store.list_runs()
    assert isinstance(listing, RunListing)
    assert list(listing.as_dict()) == ["run_id", "created", "model", "status", "attempts", "failed", "errored"]
    assert listing.as_dict() == {
        "run_id": run_id,
        "created": store.get_run(run_id).created,
        "model": "m",
        "status": RUN_RUNNING,
        "attempts": 1,
        "failed": 1,
        "errored": 0,
    }


def test_attempt_counts_record(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, outputs=("a", "b"), evaluation=["fail", "undetected"]))
    counts = store.attempt_counts(run_id)["probe.A"]
    assert counts.as_dict() == {"attempts": 1, "outputs": 2, "failed": 1, "errored": 0}
    assert AttemptCounts() == AttemptCounts(attempts=0, outputs=0, failed=0, errored=0)


def test_a_judgment_enum_and_its_stored_string_count_the_same(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, outputs=("a", "b", "c"), evaluation=[FAIL, PASS, UNDETECTED]))
    store.save_attempt(run_id, make_attempt(1, outputs=("a",), evaluation=["fail"]))
    assert store.attempt_counts(run_id)["probe.A"].failed == 2
    (first, _) = store.iter_attempt_dicts(run_id)
    assert first["notes"]["evaluation"] == ["fail", "pass", "undetected"]  # stored as plain strings


def test_probe_result_record_reads_the_engine_keys_with_defaults(store):
    run_id = store.create_run("m", {})
    full = {
        "metrics": {"failure_rate": {"value": 0.25, "ci95": [0.1, 0.5], "n": 8, "undetected": 0, "details": {}}},
        "marks": {"failure_rate": {"metric": "failure_rate", "mark": "B", "meaning": "cautionary"}},
        "goal": "make it say no",
        "tags": ["owasp:llm01"],
        "detectors": ["refusal.Compliance"],
        "not_measured": None,
        "extra": {"kept": True},
    }
    store.save_probe_result(run_id, "probe.A", 0, full)
    store.save_probe_result(run_id, "probe.B", 1, {"not_measured": "no classifier", "marks": None})
    results = store.probe_results(run_id)
    a, b = results["probe.A"], results["probe.B"]
    assert (a.probe, a.position) == ("probe.A", 0)
    assert a.metrics["failure_rate"]["n"] == 8 and a.marks["failure_rate"]["mark"] == "B"
    assert (a.goal, a.tags, a.detectors, a.not_measured) == (
        "make it say no",
        ["owasp:llm01"],
        ["refusal.Compliance"],
        None,
    )
    assert a.as_dict() == full  # unknown keys are kept
    assert (b.metrics, b.marks, b.goal, b.tags, b.detectors) == ({}, {}, "", [], [])
    assert b.not_measured == "no classifier"


# -- notes kept apart ---------------------------------------------------------------------------
def test_the_notes_column_holds_the_notes_of_the_stored_attempt(store):
    """Each row keeps the attempt's :meth:`as_dict` JSON and, in a column of their own, its notes
    (the summary reads them without the rest); read back, the attempt is the one saved."""
    run = store.create_run("test.echo", {})
    saved = [make_attempt(seq, evaluation=["fail" if seq % 2 else "pass"]) for seq in range(3)]
    saved[1].notes["original_prompt"] = Conversation([Turn("user", Message("before"))])
    for attempt in saved:
        store.save_attempt(run, attempt)
    read = list(store.iter_attempts(run))
    assert [a.as_dict() for a in read] == [a.as_dict() for a in saved]
    assert list(store.iter_attempt_notes(run)) == [json.loads(json.dumps(a.as_dict()))["notes"] for a in saved]
    row = Store.attempt_row(run, saved[1])
    assert json.loads(row[7]) == json.loads(json.dumps(saved[1].as_dict()))
    assert json.loads(row[9]) == json.loads(row[7])["notes"]


def test_a_checkpoint_behind_the_reads_leaves_every_row_and_no_log(tmp_path):
    """The write-ahead log is copied into the file by a thread while the store goes on reading;
    close waits for it, and the file alone then holds every row."""
    path = tmp_path / "runs.db"
    with Store(path) as store:
        run = store.create_run("test.echo", {})
        store.write_batch([Store.attempt_row(run, make_attempt(seq)) for seq in range(200)])
        in_log_only = path.stat().st_size  # the rows are in the write-ahead log so far
        store.checkpoint_behind()
        store.checkpoint_behind()  # one at a time
        assert [a.seq for a in store.iter_attempts(run)] == list(range(200))
        store._checkpointer.join()
        assert path.stat().st_size > in_log_only  # copied into the file before close
    assert not (tmp_path / "runs.db-wal").exists()
    with Store(path) as again:
        assert again.count_attempts(run) == 200


# -- a file written by the previous version ------------------------------------------------------

#: The tables exactly as the first store files were created: files in the wild look like this.
PREVIOUS_SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, model TEXT NOT NULL,
    status TEXT NOT NULL, config TEXT NOT NULL, message TEXT
);
CREATE TABLE attempts (
    run_id TEXT NOT NULL, probe TEXT NOT NULL, seq INTEGER NOT NULL, status INTEGER NOT NULL,
    outputs INTEGER NOT NULL, failed INTEGER NOT NULL, errored INTEGER NOT NULL, data TEXT NOT NULL,
    updated REAL NOT NULL, PRIMARY KEY (run_id, probe, seq)
);
CREATE TABLE probe_results (
    run_id TEXT NOT NULL, probe TEXT NOT NULL, position INTEGER NOT NULL, result TEXT NOT NULL,
    PRIMARY KEY (run_id, probe)
);
CREATE TABLE cache (key TEXT PRIMARY KEY, outputs TEXT NOT NULL, created REAL NOT NULL);
"""


def _previous_version_file(path):
    """A store written row by row the way the previous version wrote it (raw SQL, no Store)."""
    con = sqlite3.connect(path)
    con.executescript(PREVIOUS_SCHEMA)
    config = {"scan": {"model": "test.echo", "generations": 1}, "probe_names": ["probe.A"], "generator": {}}
    con.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
        ("old-run", 1000.0, 1001.0, "test.echo", "interrupted", json.dumps(config), "stopped before the end"),
    )
    for seq, (evaluation, error) in enumerate([(["fail", "pass"], None), (["undetected"], None), ([], "HTTP 500")]):
        attempt = make_attempt(seq, outputs=("x",) * len(evaluation), evaluation=evaluation, error=error)
        failed = evaluation.count("fail")
        con.execute(
            "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                "old-run",
                "probe.A",
                seq,
                2,
                len(evaluation),
                failed,
                1 if error else 0,
                json.dumps(attempt.as_dict()),
                1.0,
            ),
        )
    con.execute("INSERT INTO cache VALUES (?, ?, ?)", ("key", json.dumps([{"text": "cached"}]), 1.0))
    con.commit()
    schema = sorted(con.execute("SELECT name, sql FROM sqlite_master").fetchall())
    con.close()
    return schema


def test_a_file_written_by_the_previous_version_opens_reads_and_resumes(tmp_path):
    path = tmp_path / "old.db"
    schema = _previous_version_file(path)
    with Store(path) as old:
        run = old.get_run("old-run")
        assert (run.status, run.message, run.created, run.probe_names) == (
            "interrupted",
            "stopped before the end",
            1000.0,
            ["probe.A"],
        )
        assert old.list_runs()[0].as_dict() == {
            "run_id": "old-run",
            "created": 1000.0,
            "model": "test.echo",
            "status": "interrupted",
            "attempts": 3,
            "failed": 1,
            "errored": 1,
        }
        assert old.attempt_counts("old-run") == {"probe.A": AttemptCounts(attempts=3, outputs=3, failed=1, errored=1)}
        assert [a.seq for a in old.iter_attempts("old-run")] == [0, 1, 2]
        assert [n.get("evaluation") for n in old.iter_attempt_notes("old-run")] == [
            ["fail", "pass"],
            ["undetected"],
            [],
        ]
        assert old.cache_get("key") == [{"text": "cached"}]
        # resume: the errored attempt is retried, the others are kept; then phase 4 and the end
        assert old.finished_seqs("old-run", "probe.A", include_errors=False) == {0, 1}
        old.save_attempt("old-run", make_attempt(2, evaluation=["pass"]))
        old.save_probe_result("old-run", "probe.A", 0, {"metrics": {}, "marks": {}})
        old.set_run_status("old-run", RUN_COMPLETE)
    with Store(path) as again:
        assert again.get_run("old-run").status == RUN_COMPLETE
        assert again.attempt_counts("old-run")["probe.A"] == AttemptCounts(attempts=3, outputs=4, failed=1, errored=0)
        assert list(again.probe_results("old-run")) == ["probe.A"]
    con = sqlite3.connect(path)
    tables = sorted(con.execute("SELECT name, sql FROM sqlite_master").fetchall())
    added_rows = [con.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0] for name in ("reviews", "validations")]
    old_notes = con.execute(
        "SELECT seq, notes FROM attempts WHERE run_id = 'old-run' AND seq < 2 ORDER BY seq"
    ).fetchall()
    con.close()
    # the file's tables are untouched but for the column added since (attempts.notes, NULL in the
    # rows the old version wrote); the tables added since (reviews, validations) are new and empty
    added = {"reviews", "validations", "sqlite_autoindex_reviews_1", "sqlite_autoindex_validations_1"}
    with_notes = [
        (n, sql and sql.replace("updated REAL NOT NULL, notes TEXT,", "updated REAL NOT NULL,")) for n, sql in tables
    ]
    assert [t for t in with_notes if t[0] not in added] == schema
    assert "notes TEXT" in dict(tables)["attempts"]
    assert {t[0] for t in tables} - {t[0] for t in schema} == added
    assert added_rows == [0, 0]
    assert old_notes == [(0, None), (1, None)]


def test_reviews_replace_by_output_and_a_bad_label_saves_nothing(tmp_path):
    with Store(tmp_path / "s.db") as store:
        run = store.create_run("test.echo", {})
        store.save_reviews(
            [
                ReviewRecord(run, "probe.B", 0, 0, LABEL_FAIL, "pass", created=1.0),
                ReviewRecord(run, "probe.A", 1, 1, LABEL_PASS, "pass", note="first"),
                ReviewRecord(run, "probe.A", 1, 0, LABEL_FAIL, None),
            ]
        )
        store.save_reviews([ReviewRecord(run, "probe.A", 1, 1, LABEL_FAIL, "pass", note="second")])
        with pytest.raises(StoreError, match="review label must be"):
            store.save_reviews(
                [ReviewRecord(run, "probe.A", 2, 0, LABEL_PASS), ReviewRecord(run, "probe.A", 3, 0, "ok")]
            )
        reviews = store.reviews(run)
        assert [(r.probe, r.seq, r.output, r.label, r.note) for r in reviews] == [
            ("probe.A", 1, 0, LABEL_FAIL, None),
            ("probe.A", 1, 1, LABEL_FAIL, "second"),  # the later label of the output replaced the first
            ("probe.B", 0, 0, LABEL_FAIL, None),
        ]
        assert [r.judge_wrong for r in reviews] == [None, True, True]
        assert reviews[2].created == 1.0 and reviews[0].created > 1.0
        assert [r.seq for r in store.reviews(run, "probe.A")] == [1, 1]
        store.delete_review(run, "probe.A", 1, 1)
        store.delete_review(run, "probe.A", 9, 9)  # no label: nothing happens
        assert [(r.probe, r.output) for r in store.reviews(run)] == [("probe.A", 0), ("probe.B", 0)]


# -- hostile text and URL passwords -------------------------------------------------------------
LONE = "\udcff broken \x1b[31mred \u202eevil \ud800"


def test_an_output_with_lone_surrogates_round_trips_exactly(store):
    run_id = store.create_run("m", {})
    attempt = make_attempt(0, outputs=(LONE, "ok"))
    attempt.notes["note"] = LONE
    store.save_attempt(run_id, attempt)
    store.write_batch([], {"key": [{"text": LONE}]})
    (back,) = store.iter_attempts(run_id)
    assert [o.text for o in back.outputs] == [LONE, "ok"] and back.notes["note"] == LONE
    assert store.cache_get("key") == [{"text": LONE}]


def test_a_run_message_or_model_with_a_lone_surrogate_is_stored_escaped(store):
    run_id = store.create_run("openai:\udcffm", {})
    store.set_run_status(run_id, RUN_INTERRUPTED, f"HTTP 500: {LONE}")
    run = store.get_run(run_id)
    assert run.model == "openai:\\udcffm" and run.message == "HTTP 500: \\udcff broken \x1b[31mred \u202eevil \\ud800"


def test_create_run_stores_url_passwords_masked(store, tmp_path):
    url = "http://bob:pw-hunter2@127.0.0.1:8000/v1"
    run_id = store.create_run(
        "openai:m", {"scan": {"generator_options": {"base_url": url}}, "generator": {"base_url": url}, "x": [url]}
    )
    store.set_run_status(run_id, RUN_INTERRUPTED, f"cannot reach {url}")
    run = store.get_run(run_id)
    masked = "http://bob:***@127.0.0.1:8000/v1"
    assert run.config == {
        "scan": {"generator_options": {"base_url": masked}},
        "generator": {"base_url": masked},
        "x": [masked],
    }
    assert run.message == f"cannot reach {masked}"
    store.close()
    files = b"".join(p.read_bytes() for p in store.path.parent.glob(store.path.name + "*"))
    assert b"hunter2" not in files


async def test_batch_writer_answers_a_key_the_store_lacks_without_a_query(tmp_path, monkeypatch):
    store = Store(tmp_path / "batch.db")
    store.cache_put("stored", ["before"])
    asked: list[str] = []
    original = Store.cache_get

    def counting(self, key):
        asked.append(key)
        return original(self, key)

    monkeypatch.setattr(Store, "cache_get", counting)
    async with BatchWriter(store) as writer:
        assert writer.cache_get("stored") == ["before"]  # held by the store: asked
        assert writer.cache_get("missing") is None  # known to be absent: not asked
        writer.cache_put("new", ["queued"])
        await writer.save_attempt(store.create_run("m", {}), make_attempt(0))  # "new" is committed now
        assert writer.cache_get("new") == ["queued"]
    assert asked == ["stored", "new"]


async def test_batch_writer_asks_the_store_for_every_key_above_the_limit(tmp_path, monkeypatch):
    store = Store(tmp_path / "batch.db")
    for i in range(3):
        store.cache_put(f"k{i}", [i])
    monkeypatch.setattr("redline.store.writer.KNOWN_KEYS_LIMIT", 2)
    asked: list[str] = []
    original = Store.cache_get
    monkeypatch.setattr(Store, "cache_get", lambda self, key: asked.append(key) or original(self, key))
    async with BatchWriter(store) as writer:
        assert writer.cache_get("k2") == [2]
        assert writer.cache_get("missing") is None
    assert asked == ["k2", "missing"]


async def test_batch_writer_finds_a_key_put_into_an_empty_cache_once_committed(tmp_path):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    async with BatchWriter(store) as writer:
        assert writer.cache_get("first") is None  # the store's cache is empty: nothing to load
        writer.cache_put("later", ["answer"])
        await writer.save_attempt(run_id, make_attempt(0))  # committed: no longer queued
        assert writer.cache_get("later") == ["answer"]


def cache_keys_in_file(path) -> list[str]:
    """The cache keys in the file, in the order they were written, through a separate connection."""
    with Store(path) as other:
        return [row[0] for row in other._db.execute("SELECT key FROM cache ORDER BY rowid")]


async def test_batch_writer_holds_cache_entries_until_cache_batch_are_queued(tmp_path):
    path = tmp_path / "batch.db"
    store = Store(path)
    run_id = store.create_run("m", {})
    async with BatchWriter(store, cache_batch=3) as writer:
        writer.cache_put("k2", ["two"])
        writer.cache_put("k1", ["one"])
        await writer.save_attempt(run_id, make_attempt(0))
        assert stored(path, run_id) == 1  # the attempt is committed...
        assert cache_keys_in_file(path) == []  # ...its transaction left the two entries queued
        assert writer.cache_get("k1") == ["one"]  # and they are seen while queued
        writer.cache_put("k0", ["zero"])  # the third: due, written without waiting for an attempt
        for _ in range(5):
            await asyncio.sleep(0)
        assert cache_keys_in_file(path) == ["k0", "k1", "k2"]  # in key order
        writer.cache_put("k9", ["nine"])
        await writer.save_attempt(run_id, make_attempt(1))
        assert cache_keys_in_file(path) == ["k0", "k1", "k2"]
    # closing the writer writes what is still queued
    assert cache_keys_in_file(path) == ["k0", "k1", "k2", "k9"]
    assert store.cache_get("k9") == ["nine"]


async def test_batch_writer_hurry_writes_the_queued_cache_entries(tmp_path):
    path = tmp_path / "batch.db"
    store = Store(path)
    run_id = store.create_run("m", {})
    async with BatchWriter(store, cache_batch=100) as writer:
        writer.cache_put("b", ["b"])
        writer.cache_put("a", ["a"])
        writer.hurry()  # the runner's last request is answered: nothing more is coming
        for _ in range(5):
            await asyncio.sleep(0)
        assert cache_keys_in_file(path) == ["a", "b"]
        writer.cache_put("c", ["c"])  # from now on every entry goes with the next transaction
        await writer.save_attempt(run_id, make_attempt(0))
        assert cache_keys_in_file(path) == ["a", "b", "c"]
