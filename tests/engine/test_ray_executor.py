"""The Ray executor against the in-process one, on a local Ray instance (127.0.0.1, 2 CPUs, 2
actors): the same summary and the same stored attempts, an actor killed mid-scan, the resume of an
interrupted Ray run, a re-run answered from the store's cache, and a budget kept as in process.

The test generators' ``exit_once=PATH`` option kills exactly one actor, once (the first request
made while PATH does not exist creates it and ends that process); with a PATH that exists it
changes nothing but the cache key, which makes it a cross-process witness: a run that leaves a
missing PATH missing sent no request to any model.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import redline
from redline.attempt import Attempt
from redline.engine import ScanConfig, pipeline, scan
from redline.engine.budget import BUDGET_REACHED, Budget, Prices
from redline.engine.executors import ExecutorConfig, ExecutorError, ExecutorUnavailable
from redline.engine.ray_executor import RayExecutor
from redline.report.summary import build_summary
from redline.store import RUN_INTERRUPTED, Store

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'redline[ray]')", exc_type=ImportError)

RAY = ExecutorConfig(kind="ray", workers=2)
PROBES = ScanConfig(model="test.echo", probes="encoding.Base64,harmful.Requests,injection.HiddenInData", generations=2)
ESCALATION = ScanConfig(  # multi-turn: the judge never rates high enough, so every attempt takes both turns
    model="test.echo",
    probes="harmful.Requests",
    sample=4,
    strategy="escalation",
    max_turns=2,
    attacker_model="test.repeat:<message>Please go one step further.</message>",
    judge_model="test.repeat:Rating: [[2]]",
)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module; its actors import this checkout's sources."""
    src = str(Path(redline.__file__).resolve().parents[1])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": src}},
    )
    yield
    ray.shutdown()


@pytest.fixture
def executors(monkeypatch) -> list[Any]:
    """Every RayExecutor the scans of a test make, each counting the attempts handed to the
    store by (probe, seq)."""
    made: list[Any] = []

    class Recording(RayExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.stored: Counter[tuple[str, int]] = Counter()
            made.append(self)

        async def run(self, work: Any, on_done: Any) -> None:
            async def counted(attempt: Attempt) -> None:
                self.stored[(attempt.probe_classname, attempt.seq)] += 1
                await on_done(attempt)

            await super().run(work, counted)

    monkeypatch.setattr(pipeline, "RayExecutor", Recording)
    return made


def options(config: ScanConfig, **generator_options: Any) -> ScanConfig:
    return ScanConfig.from_dict({**config.as_dict(), "generator_options": generator_options})


def summary(store: Store, run_id: str) -> dict[str, Any]:
    data = build_summary(store, run_id).as_dict()
    assert data.pop("run_id") == run_id and data.pop("created")
    data.pop("cached")  # which repeated requests the cache answers differs (see _drop_cached_notes)
    return data


def attempts(db: Path, run_id: str | None = None) -> dict[tuple[str, int], dict[str, Any]]:
    """The stored attempts (of ``run_id``; of the one run in ``db`` when None) by (probe, seq),
    without their random uuid."""
    with sqlite3.connect(db) as con:
        found = con.execute("SELECT probe, seq, data FROM attempts WHERE run_id = ? OR ? IS NULL", (run_id, run_id))
        rows = {(p, s): json.loads(d) for p, s, d in found}
    for data in rows.values():
        data.pop("uuid")
        _drop_cached_notes(data)
    return rows


def _drop_cached_notes(value: Any) -> None:
    """Remove the cache's ``cached`` notes: an actor's cache answers a request its attempt repeats
    at once, the local writer's once its batch is committed, so which answers carry it differs."""
    if isinstance(value, dict):
        value.pop("cached", None)
        for item in value.values():
            _drop_cached_notes(item)
    elif isinstance(value, list):
        for item in value:
            _drop_cached_notes(item)


def cache(db: Path) -> dict[str, Any]:
    with Store(db) as store:
        return dict(store.cache_items())


async def reference(tmp_path: Path, config: ScanConfig, name: str = "local.db") -> tuple[dict, dict, dict]:
    """The local executor's summary, attempts and cache for ``config``."""
    db = tmp_path / name
    with Store(db) as store:
        run_id = await scan(config, store)
        return summary(store, run_id), attempts(db), cache(db)


@pytest.mark.parametrize("config", [PROBES, ESCALATION], ids=["probes", "escalation"])
async def test_same_summary_attempts_and_cache_as_the_local_executor(tmp_path, executors, config):
    local_summary, local_attempts, local_cache = await reference(tmp_path, config)
    db = tmp_path / "ray.db"
    with Store(db) as store:
        run_id = await scan(config, store, executor=RAY)
        assert summary(store, run_id) == local_summary
    assert attempts(db) == local_attempts  # outputs, conversations, detector results, judgments
    assert cache(db) == local_cache  # the actors' cache writes reached the driver's store
    (executor,) = executors
    assert len(set(executor.pids)) == 2 and os.getpid() not in executor.pids  # ran on two actors
    assert executor.replaced == 0 and set(executor.stored.values()) == {1}
    assert set(executor.stored) == set(local_attempts)
    if config is ESCALATION:  # really multi-turn
        assert all(len(a["notes"]["strategy"]["turns"]) == 2 for a in local_attempts.values())


async def test_an_actor_killed_mid_scan_is_replaced_and_nothing_is_lost_or_judged_twice(tmp_path, executors):
    local_summary, local_attempts, _ = await reference(tmp_path, PROBES)
    witness = tmp_path / "died"
    db = tmp_path / "ray.db"
    with Store(db) as store:
        run_id = await scan(options(PROBES, exit_once=str(witness)), store, executor=RAY)
        assert witness.exists() and store.get_run(run_id).status == "complete"
        assert summary(store, run_id) == local_summary
    (executor,) = executors
    assert executor.replaced == 1 and len(set(executor.pids)) == 3  # two actors, then the replacement
    assert Counter(executor.stored.values()) == {1: len(local_attempts)}  # each attempt handed over once
    stored = attempts(db)
    for data in stored.values():  # the option is a setting of the run, not of its answers
        assert data["probe_params"] == local_attempts[(data["probe_classname"], data["seq"])]["probe_params"]
    assert stored == local_attempts


class Stop(Exception):
    """Ends a scan from its progress callback, as an interrupt would."""


async def test_an_interrupted_ray_run_resumes_on_ray_to_the_same_result(tmp_path, executors):
    local_summary, local_attempts, _ = await reference(tmp_path, PROBES)
    db = tmp_path / "ray.db"
    finished = 0

    def stop_after_ten(event: str, done: int, total: int) -> None:
        nonlocal finished
        if event == "advance":
            finished += 1
            if finished == 10:
                raise Stop("stopped after 10 attempts")

    runs: list[str] = []
    with Store(db) as store:
        with pytest.raises(Stop):
            await scan(PROBES, store, executor=RAY, progress=stop_after_ten, on_run=runs.append)
        (run_id,) = runs
        assert store.get_run(run_id).status == RUN_INTERRUPTED
        stored = store.count_attempts(run_id)
        # Nothing of the scan goes on once it has raised: no task left behind to store more
        # attempts or to replace the actors it stopped. (Awaited, not slept on: a task left
        # behind would run the rest of the scan here.)
        left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        await asyncio.wait_for(asyncio.gather(*left, return_exceptions=True), timeout=120)
        assert store.count_attempts(run_id) == stored and store.get_run(run_id).status == RUN_INTERRUPTED
        (executor,) = executors
        assert executor.replaced == 0 and not executor._actors and len(executor.pids) == 2
    before = attempts(db)
    assert 10 <= len(before) < len(local_attempts)

    with Store(db) as store:
        assert await scan(None, store, resume=run_id, executor=RAY) == run_id
        assert store.get_run(run_id).status == "complete"
        assert summary(store, run_id) == local_summary
    after = attempts(db)
    assert after == local_attempts
    assert set(executors[1].stored) == set(local_attempts) - set(before)  # only what was missing was run
    assert all(after[key] == data for key, data in before.items())


async def test_a_re_run_is_answered_from_the_cache_without_asking_the_model(tmp_path, executors):
    witness = tmp_path / "asked"
    witness.touch()  # first run: the option only becomes part of every cache key
    config = options(PROBES, exit_once=str(witness))
    db = tmp_path / "ray.db"
    with Store(db) as store:
        first = await scan(config, store, executor=RAY)
        entries = cache(db)
        assert len(entries) == store.count_attempts(first) * PROBES.generations
        witness.unlink()  # from now on the first request any actor sends kills it and creates the file
        second = await scan(config, store, executor=RAY)
        assert not witness.exists() and executors[1].replaced == 0  # no actor asked the model
        assert summary(store, second) == summary(store, first) and store.get_run(second).status == "complete"
        assert cache(db) == entries
    assert attempts(db, second) == attempts(db, first)


async def test_workers_the_cluster_cannot_hold_are_refused_at_once_and_nothing_is_stored(tmp_path):
    store = Store(tmp_path / "r.db")
    try:
        with pytest.raises(ExecutorUnavailable, match=r"1 Ray workers need 1 GPUs and the cluster has 0"):
            await asyncio.wait_for(
                scan(PROBES, store, executor=ExecutorConfig(kind="ray", workers=1, gpus_per_worker=1)), 60
            )
        assert store.list_runs() == []  # refused before a run is created
    finally:
        store.close()


def test_a_generator_object_cannot_go_to_ray(tmp_path):
    store = Store(tmp_path / "r.db")
    try:
        with pytest.raises(ExecutorError, match="a generator object runs in this process only"):
            asyncio.run(scan(PROBES, store, generator=object(), executor=ExecutorConfig(kind="ray")))  # type: ignore[arg-type]
    finally:
        store.close()


async def test_a_budget_stops_a_ray_run_and_counts_what_the_actors_spent_as_in_process(tmp_path, executors):
    """``--max-requests`` stops the Ray run at the same attempt as in process (the cache off: one
    request per attempt), and a resume under ``--budget-usd`` charges what the actors' requests
    cost exactly as the in-process executor counts it."""
    config = ScanConfig.from_dict({**PROBES.as_dict(), "cache": False})
    prices = Prices(1_000.0, 2_000.0)
    spent: dict[str, list[Budget]] = {}
    for name, settings in (("local", None), ("ray", RAY)):
        with Store(tmp_path / f"{name}.db") as store:
            first = Budget(max_requests=5)
            run_id = await scan(config, store, executor=settings, budget=first)
            run = store.get_run(run_id)
            assert run.status == RUN_INTERRUPTED and run.message.startswith(BUDGET_REACHED), run.message
            assert "5 of 5 requests" in run.message and store.count_attempts(run_id) == 5
            rest = Budget(max_usd=1_000.0, prices=prices)
            assert await scan(None, store, resume=run_id, executor=settings, budget=rest) == run_id
            assert store.get_run(run_id).status == "complete"
            spent[name] = [first, rest]
    assert attempts(tmp_path / "ray.db") == attempts(tmp_path / "local.db")
    (local_first, local_rest), (ray_first, ray_rest) = spent["local"], spent["ray"]
    assert ray_first.spent == local_first.spent and ray_first.spent.requests == 5
    assert ray_rest.spent == local_rest.spent and ray_rest.spent.requests > 0
    assert ray_rest.spent_usd == pytest.approx(local_rest.spent_usd) and ray_rest.spent_usd > 0
    assert all(e.replaced == 0 for e in executors) and len(executors) == 2
