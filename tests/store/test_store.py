"""Direct unit tests of the run store: runs, attempts, probe results, the cache, the secrets
check, persistence across connections, and the group-commit :class:`BatchWriter`."""

from __future__ import annotations

import asyncio
import re

import pytest

from redline.attempt import Attempt, Conversation, Message, Turn
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, RUN_RUNNING, RunNotFound, Store, StoreError

try:
    from redline.store import BatchWriter
except ImportError:  # not exported at the top level (yet)
    from redline.store.sqlite import BatchWriter


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
    assert run["run_id"] == run_id
    assert run["model"] == "openai:m"
    assert run["status"] == RUN_RUNNING
    assert run["config"] == config
    assert run["message"] is None
    assert run["created"] == run["updated"]

    other = store.create_run("test.other", {})
    assert other != run_id
    listed = {r["run_id"]: r for r in store.list_runs()}
    assert set(listed) == {run_id, other}
    assert listed[run_id]["model"] == "openai:m" and listed[run_id]["status"] == RUN_RUNNING
    assert listed[run_id]["attempts"] == listed[run_id]["failed"] == listed[run_id]["errored"] == 0


def test_list_runs_counts_attempts_failures_and_errors(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, outputs=("a", "b"), evaluation=["fail", "fail"]))
    store.save_attempt(run_id, make_attempt(1, evaluation=["pass"]))
    store.save_attempt(run_id, make_attempt(2, error="timeout"))
    (row,) = store.list_runs()
    assert (row["attempts"], row["failed"], row["errored"]) == (3, 2, 1)


def test_an_unknown_run_is_not_found(store):
    store.create_run("m", {})
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        store.get_run("nope")
    assert issubclass(RunNotFound, StoreError)


def test_set_run_status_with_and_without_a_message(store):
    run_id = store.create_run("m", {})
    store.set_run_status(run_id, RUN_INTERRUPTED, "stopped by the user")
    run = store.get_run(run_id)
    assert run["status"] == RUN_INTERRUPTED
    assert run["message"] == "stopped by the user"
    assert run["updated"] >= run["created"]
    store.set_run_status(run_id, RUN_COMPLETE)
    run = store.get_run(run_id)
    assert run["status"] == RUN_COMPLETE
    assert run["message"] is None
    assert {r["status"] for r in store.list_runs()} == {RUN_COMPLETE}


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
    assert store.get_run(run_id)["config"] == config


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
    assert store.attempt_counts(run_id)["probe.A"]["failed"] == 0


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
    assert store.attempt_counts(run_id)["probe.A"]["errored"] == 0


def test_attempt_counts_per_probe(store):
    run_id = store.create_run("m", {})
    store.save_attempt(run_id, make_attempt(0, outputs=("a", "b", "c"), evaluation=["fail", "pass", "fail"]))
    store.save_attempt(run_id, make_attempt(1, outputs=("a", "b"), evaluation=["undetected", "fail"]))
    store.save_attempt(run_id, make_attempt(2, outputs=("a",), error="boom"))
    store.save_attempt(run_id, make_attempt(0, "probe.B", outputs=("a",), evaluation=["pass"]))
    assert store.attempt_counts(run_id) == {
        "probe.A": {"attempts": 3, "outputs": 6, "failed": 3, "errored": 1},
        "probe.B": {"attempts": 1, "outputs": 1, "failed": 0, "errored": 0},
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
    assert results["probe.C"] == {"metrics": {"failure_rate": {"value": 0.5}}}
    assert results["probe.B"] == {"marks": {"failure_rate": {"mark": "B"}}}
    # saving a probe's result again replaces it (and its position)
    store.save_probe_result(run_id, "probe.A", 3, {"metrics": {"x": 1}})
    results = store.probe_results(run_id)
    assert list(results) == ["probe.B", "probe.C", "probe.A"]
    assert results["probe.A"] == {"metrics": {"x": 1}}
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
        assert run["status"] == RUN_COMPLETE and run["message"] == "done"
        assert run["config"] == {"scan": {"seed": 1}}
        assert list(second.iter_attempts(run_id)) == [attempt]
        assert second.probe_results(run_id) == {"probe.A": {"metrics": {}}}
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


async def test_batch_writer_splits_at_max_batch(tmp_path):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    sizes: list[int] = []
    original = store.write_batch

    def counting(rows, cache_items=None):
        sizes.append(len(rows))
        return original(rows, cache_items)

    store.write_batch = counting  # this instance only
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


async def test_a_failed_commit_raises_store_error_in_every_waiting_save(tmp_path):
    store = Store(tmp_path / "batch.db")
    run_id = store.create_run("m", {})
    async with BatchWriter(store) as writer:
        store.close()  # every write from now on fails
        results = await asyncio.gather(
            *(writer.save_attempt(run_id, make_attempt(seq)) for seq in range(3)), return_exceptions=True
        )
    assert len(results) == 3
    assert all(isinstance(r, StoreError) for r in results)
    assert writer.commits == 0
