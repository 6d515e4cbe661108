"""A scan of a remote model in worker processes (redline.engine.shards): every attempt run once,
the same stored attempts and summary as in one process, limits split, errors and stops."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.mock_openai import MockOpenAI
from helpers.stored_rows import comparable, rows
from redline.engine import ScanConfig, scan, shard_worker
from redline.engine import pipeline as pipeline_module
from redline.engine.executors import ExecutorConfig, ExecutorError
from redline.engine.pipeline import attempt_sources, attempts_to_run, build_probes
from redline.engine.shard_worker import prefork
from redline.engine.shards import (
    AUTO_MIN_ATTEMPTS,
    MIN_STRETCH,
    Preforked,
    ScanWorkerError,
    ShardExecutor,
    WorkQueue,
    choose_processes,
    claimed,
    config_key,
    one_thread,
    shard_config,
)
from redline.generators import GeneratorUnavailable, get_generator
from redline.lve import limits
from redline.lve.limits import CheckerLimits, configure_shared_pool
from redline.report.summary import run_summary
from redline.store import Store

FOUR_PROBES = "harmful.Requests,encoding.Base64,encoding.Hex,encoding.ROT13"  # 24 + 3 × 12 attempts


def responder(messages, body):
    prompt = messages[-1]["content"]
    return "I'm sorry, I can't help with that." if len(prompt) % 3 == 0 else f"Sure! {prompt[:30]}"


def key_of(probe, attempt) -> tuple[str, int]:
    return probe.name, attempt.seq


# -- which attempts a shard runs ------------------------------------------------------------------


def test_the_stretches_workers_claim_cover_every_attempt_left_once(tmp_path) -> None:
    probes = build_probes(ScanConfig(model="test.repeat", probes=FOUR_PROBES, num_repetitions=2))
    store = Store(tmp_path / "s.db")
    run_id = store.create_run("test", {})
    sources = attempt_sources(store, run_id, probes, retry_errors=False)
    # attempts already stored, and a probe not measured, are left out of every stretch
    sources[0] = (sources[0][0], sources[0][1], {0, 1, 5, 17})
    sources[2][0].skip_reason = "its detector could not load"
    whole = [key_of(*pair) for pair in attempts_to_run(sources)]
    assert len(whole) == len(set(whole)) == 48 - 4 + 2 * 24
    positions = sum(len(attempts) for _, attempts, _ in sources)
    for size in (1, 5, 16, 47, 200):
        stretches = [(start, start + size) for start in range(0, positions, size)]
        rng = random.Random(size)
        workers: list[list[tuple[int, int]]] = [[], [], []]
        for stretch in stretches:  # claimed in the queue's order, by whichever worker asks
            workers[rng.randrange(3)].append(stretch)
        got = [[key_of(*pair) for pair in attempts_to_run(sources, ranges=iter(mine))] for mine in workers]
        assert sorted(k for keys in got for k in keys) == sorted(whole)
        for keys in got:  # each in the run's order
            assert keys == [k for k in whole if k in set(keys)]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_a_work_queue_gives_each_stretch_to_one_reader_then_none(tmp_path) -> None:
    queue = WorkQueue()
    assert queue.fill(100_000) == 49  # 2,048 stretches at most
    reading = os.dup(queue.read_fd)  # another worker's end of the same pipe
    queue.close()
    first, second = claimed(reading, 49), claimed(reading, 49)
    taken = [next(first), next(second), next(first)]
    taken += list(second)  # the second takes all that is left; then both find none
    assert list(first) == []
    os.close(reading)
    assert taken[:3] == [(0, 49), (49, 98), (98, 147)]
    assert [start for start, _ in taken] == list(range(0, 2041 * 49, 49))
    assert taken[-1][1] >= 100_000
    small = WorkQueue()
    assert small.fill(3_000) == MIN_STRETCH
    small.close()


def test_between_builds_the_same_attempts_as_iterating() -> None:
    (probe,) = build_probes(ScanConfig(model="test.repeat", probes="encoding.Hex", num_repetitions=3))
    attempts = probe.attempt_source()
    everything = [a.as_dict() for a in attempts]
    for start, stop in ((0, 1), (0, len(everything)), (2, 9), (7, 8), (5, 10_000), (len(everything), 10**6)):
        picked = [a.as_dict() for a in attempts.between(start, stop)]
        assert len(picked) == len(everything[start:stop])
        for got, want in zip(picked, everything[start:stop], strict=True):
            assert {**got, "uuid": ""} == {**want, "uuid": ""}


# -- how many workers, and their limits ----------------------------------------------------------


def test_choose_processes(monkeypatch) -> None:
    monkeypatch.setattr("redline.engine.shards._cores", lambda: 2)
    remote = get_generator("openai:m", base_url="http://127.0.0.1:9/v1", api_key="k")
    local = SimpleNamespace(local=True)  # what choose_processes reads of a local model
    auto = ExecutorConfig()
    many = AUTO_MIN_ATTEMPTS
    assert choose_processes(auto, remote, 64, many, shareable=True) == 2
    assert choose_processes(auto, remote, 64, None, shareable=True) == 2  # not known yet: the most
    assert choose_processes(auto, remote, 64, many - 1, shareable=True) == 1  # too few to pay off
    assert choose_processes(auto, remote, 8, many, shareable=True) == 1  # each worker keeps 8 in flight
    assert choose_processes(auto, remote, 64, many, shareable=False) == 1  # a budget or a generator object
    assert choose_processes(auto, local, 64, many, shareable=True) == 1  # not a remote model
    with pytest.raises(ExecutorError, match="--processes is for a remote model"):
        choose_processes(ExecutorConfig(processes=2), local, 64, many, shareable=True)
    with pytest.raises(ExecutorError, match="--processes needs the scan's own generator and no budget"):
        choose_processes(ExecutorConfig(processes=2), remote, 64, many, shareable=False)
    assert choose_processes(ExecutorConfig(processes=1), local, 64, many, shareable=False) == 1
    assert choose_processes(ExecutorConfig(kind="ray"), remote, 64, many, shareable=True) == 1
    monkeypatch.setattr("redline.engine.shards._cores", lambda: 16)
    assert choose_processes(auto, remote, 64, many, shareable=True) == 4  # at most 4 on their own
    assert choose_processes(ExecutorConfig(processes=6), remote, 64, 10, shareable=True) == 6  # as asked
    assert choose_processes(ExecutorConfig(processes=6), remote, 3, 10, shareable=True) == 3  # one in flight each
    assert choose_processes(ExecutorConfig(processes=1), remote, 64, many, shareable=True) == 1
    capped = get_generator("openai:m", base_url="http://127.0.0.1:9/v1", api_key="k", concurrency=2)
    assert choose_processes(ExecutorConfig(processes=6), capped, 64, many, shareable=True) == 2  # the endpoint's cap
    assert choose_processes(auto, capped, 64, many, shareable=True) == 1  # 2 in flight: not worth a worker


def test_workers_share_the_limits_of_one_process() -> None:
    config = ScanConfig(model="openai:m", generator_options={"concurrency": 5, "rpm": 600, "tpm": 9000.0})
    shares = [shard_config(config, 64, i, 3) for i in range(3)]
    assert [c for _, c in shares] == [22, 21, 21]
    assert [d["generator_options"]["concurrency"] for d, _ in shares] == [2, 2, 1]
    assert [d["generator_options"]["rpm"] for d, _ in shares] == [200, 200, 200]
    assert sum(d["generator_options"]["tpm"] for d, _ in shares) == pytest.approx(9000)
    assert config.generator_options["concurrency"] == 5  # the run's own configuration is unchanged
    assert shard_config(ScanConfig(model="openai:m"), 1, 0, 1)[1] == 1


def test_a_worker_is_told_its_share_and_the_lve_checkers_limits(monkeypatch) -> None:
    monkeypatch.setattr(limits, "_configured", None)
    configure_shared_pool(CheckerLimits(timeout=7.0, cpu_seconds=7, memory_mb=300))
    executor = ShardExecutor(store_path="s.db", concurrency=10, retry_errors=True)
    order = executor.order(ScanConfig(model="openai:m", generator_options={"rpm": 60}), 1, 2)
    assert CheckerLimits(**order["checker_limits"]) == CheckerLimits(timeout=7.0, cpu_seconds=7, memory_mb=300)
    # its share of the limits (place 1 of 2); which attempts it runs, it claims from the work queue
    assert order["concurrency"] == 5 and order["retry_errors"] is True and "shard" not in order
    assert order["config"]["generator_options"] == {"rpm": 30} and order["store"] == "s.db"
    json.dumps(order)  # a line of JSON


def test_processes_belong_to_the_local_executor() -> None:
    with pytest.raises(ExecutorError, match="--processes"):
        ExecutorConfig(kind="ray", processes=2)
    with pytest.raises(ExecutorError, match="--processes must be an integer from 1 to 64"):
        ExecutorConfig(processes=0)


# -- scans in worker processes -------------------------------------------------------------------


@pytest.fixture
def spawned(monkeypatch) -> list[list[int]]:
    """The process ids of the workers of each ShardExecutor started."""
    seen: list[list[int]] = []
    original = ShardExecutor.keep

    async def keep(self, count):
        await original(self, count)
        seen.append(self.pids)

    monkeypatch.setattr(ShardExecutor, "keep", keep)
    return seen


async def stored_at_least(store: Store, count: int) -> None:
    """Wait until the store's run holds ``count`` attempts (a minute at most: a guard against a hang)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = store.list_runs()
        if runs and store.count_attempts(runs[0].run_id) >= count:
            return
        await asyncio.sleep(0.02)


def config_for(server: MockOpenAI) -> ScanConfig:
    return ScanConfig(
        model="openai:m", probes=FOUR_PROBES, concurrency=4, generator_options={"base_url": server.base_url}
    )


async def test_workers_store_what_one_process_stores(tmp_path, monkeypatch, spawned) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    advanced: list[int] = []
    with MockOpenAI(responder=responder) as server:
        one = Store(tmp_path / "one.db")
        one_run = await scan(config_for(server), one, executor=ExecutorConfig(processes=1))
        assert spawned == [[]]
        two = Store(tmp_path / "two.db")
        two_run = await scan(
            config_for(server),
            two,
            executor=ExecutorConfig(processes=2),
            progress=lambda event, done, total: advanced.append(done) if event == "advance" else None,
        )
        for pid in spawned[1]:  # the workers are gone when the scan returns
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        again = await scan(config_for(server), two, executor=ExecutorConfig(processes=2))
    assert len(server.requests) == 120  # the third scan was answered from the store's cache, in its workers
    assert len(spawned[2]) == 2 and two.count_attempts(again) == 60
    assert len(spawned[1]) == 2 and os.getpid() not in spawned[1]
    assert sum(advanced) == 60  # the workers' progress, relayed
    a, b = rows(tmp_path / "one.db"), rows(tmp_path / "two.db")
    assert a.keys() == b.keys() and len(a) == 60
    assert all(comparable(a[k]) == comparable(b[k]) for k in a)
    first, second = run_summary(one, one_run), run_summary(two, two_run)
    assert first["probes"] == second["probes"]
    assert two.get_run(two_run).status == "complete"


async def test_workers_given_their_order_at_spawn_are_replaced_when_the_count_changes(
    tmp_path, monkeypatch, spawned
) -> None:
    """The workers get their shard when they start; a count chosen differently once the attempts
    are counted starts others with the new shards (every attempt stored once), and a count of 1
    stops them all."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    def choose(first: int, then: int):
        return lambda executor, generator, concurrency, to_run, shareable: first if to_run is None else then

    with MockOpenAI(responder=responder) as server:
        store = Store(tmp_path / "s.db")
        monkeypatch.setattr(pipeline_module, "choose_processes", choose(2, 3))
        run_id = await scan(config_for(server), store)
        monkeypatch.setattr(pipeline_module, "choose_processes", choose(2, 1))
        alone = await scan(config_for(server), store)
    assert len(spawned[0]) == 3 and len(spawned[1]) == 0
    assert store.count_attempts(run_id) == 60 and store.count_attempts(alone) == 60
    assert len(server.requests) == 60  # the second scan was answered from the cache, in this process


async def test_an_error_in_a_worker_stops_the_scan_as_in_one_process(tmp_path, monkeypatch, spawned) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    refused = lambda index, body: (401, {}, '{"error": {"message": "bad key"}}')
    messages = []
    with MockOpenAI(responder=responder, faults=refused) as server:
        for processes in (1, 2):
            store = Store(tmp_path / f"{processes}.db")
            with pytest.raises(GeneratorUnavailable) as caught:
                await scan(config_for(server), store, executor=ExecutorConfig(processes=processes))
            messages.append(str(caught.value))
            (run,) = store.list_runs()
            assert run.status == "interrupted"
    assert messages[0] == messages[1] and "401" in messages[0]


async def test_a_worker_that_dies_stops_the_scan_and_resume_finishes_it(tmp_path, monkeypatch, spawned) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    release = threading.Event()

    def hold_after_ten(index: int, body: dict) -> None:
        if index >= 10:
            release.wait(timeout=60)  # a guard against a hang only

    db = tmp_path / "s.db"
    store = Store(db)
    with MockOpenAI(responder=responder, faults=hold_after_ten) as server:
        task = asyncio.ensure_future(scan(config_for(server), store, executor=ExecutorConfig(processes=2)))
        await stored_at_least(store, 4)
        os.kill(spawned[0][1], signal.SIGKILL)
        with pytest.raises(ScanWorkerError, match=r"scan worker 2 of 2 .* \(signal SIGKILL\); the run can be resumed"):
            await task
        release.set()
        (run,) = store.list_runs()
        assert run.status == "interrupted"
        before = rows(db)
        assert 4 <= len(before) < 60
        run_id = await scan(None, store, resume=run.run_id, executor=ExecutorConfig(processes=2))
    after = rows(db)
    assert len(after) == 60 and store.get_run(run_id).status == "complete"
    assert all(after[k] == v for k, v in before.items())  # nothing stored twice or redone


async def test_cancelling_a_scan_stops_its_workers_keeping_what_they_finished(tmp_path, monkeypatch, spawned) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    release = threading.Event()

    def hold_after_ten(index: int, body: dict) -> None:
        if index >= 10:
            release.wait(timeout=60)

    db = tmp_path / "s.db"
    store = Store(db)
    with MockOpenAI(responder=responder, faults=hold_after_ten) as server:
        advanced: list[int] = []
        task = asyncio.ensure_future(
            scan(
                config_for(server),
                store,
                executor=ExecutorConfig(processes=2),
                progress=lambda event, done, total: advanced.append(done) if event == "advance" else None,
            )
        )
        await stored_at_least(store, 10)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - started < 5  # the workers stop at once, requests in flight or not
        release.set()
    for pid in spawned[0]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    (run,) = store.list_runs()
    assert run.status == "interrupted" and store.count_attempts(run.run_id) == 10  # every finished one kept
    assert sum(advanced) == 10  # the progress counts every one


def test_workers_exit_when_the_scan_process_is_killed(tmp_path) -> None:
    release = threading.Event()

    def hold(index: int, body: dict) -> None:
        release.wait(timeout=60)  # a guard against a hang only

    with MockOpenAI(responder=responder, faults=hold) as server:
        env = dict(os.environ, OPENAI_API_KEY="k")
        command = [sys.executable, "-m", "redline", "scan", "-m", "openai:m", "--base-url", server.base_url]
        command += ["-p", FOUR_PROBES, "-c", "4", "--processes", "2", "--store", str(tmp_path / "s.db")]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while len(server.requests) < 4 and time.monotonic() < deadline:  # both workers are sending
                time.sleep(0.02)
            workers = children_of(proc.pid)
            assert len(workers) == 2
            # forked by the console script (no new interpreter): the scan's own command line
            assert all(cmdline(pid) == cmdline(proc.pid) for pid in workers)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            deadline = time.monotonic() + 20
            while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not any(alive(pid) for pid in workers)
        finally:
            release.set()
            proc.kill()


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


# -- workers forked by the console script -----------------------------------------------------------


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the console script forks its workers on Linux")
def test_the_console_scripts_forked_workers_store_what_one_process_stores(tmp_path) -> None:
    with MockOpenAI(responder=responder) as server:
        env = dict(os.environ, OPENAI_API_KEY="k")
        for processes in (1, 2):
            command = [sys.executable, "-m", "redline", "scan", "-m", "openai:m", "--base-url", server.base_url]
            command += ["-p", FOUR_PROBES, "-c", "4", "--processes", str(processes)]
            done = subprocess.run(
                command + ["--store", str(tmp_path / f"{processes}.db")], env=env, capture_output=True
            )
            assert done.returncode == 0, done.stderr.decode()[-2000:]
    a, b = rows(tmp_path / "1.db"), rows(tmp_path / "2.db")
    assert a.keys() == b.keys() and len(a) == 60
    assert all(comparable(a[k]) == comparable(b[k]) for k in a)
    one, two = Store(tmp_path / "1.db"), Store(tmp_path / "2.db")
    assert (
        run_summary(one, one.list_runs()[0].run_id)["probes"] == run_summary(two, two.list_runs()[0].run_id)["probes"]
    )


FORK_SCRIPT = """
import json, os, sys
from redline.engine import shards
from redline.engine.shards import Preforked

made = []  # the work queue, as the children see it
real_init = shards.WorkQueue.__init__
shards.WorkQueue.__init__ = lambda self: real_init(self) or made.append(self)

def echo():  # a worker's stand-in: its input, upper-cased, and its open descriptors, on its output
    line = os.read(0, 100)
    fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
    named = ["queue" if fd == made[0].read_fd else str(fd) for fd in fds[:-1]]  # (the last: the listing's own)
    os.write(1, line.upper().strip() + b" " + ",".join(named).encode())
    sys.exit(int(line.split()[-1]))

pool = Preforked.fork(3, echo)
kept, queue = pool.take(2)
assert queue is not None and pool.queue is None
(left,) = [child.pid for child in pool._children]
for index, child in enumerate(kept):
    os.write(child._to_child, f"hello {index + 4}\\n".encode())
answers = [os.read(child._from_child, 100).decode() for child in kept]
codes = [child.reap() for child in kept]
pool.discard()
try:
    os.kill(left, 0)
    gone = False
except ProcessLookupError:  # killed and reaped: no zombie left
    gone = True
print(json.dumps({"answers": answers, "codes": codes, "pids": [c.pid for c in kept], "me": os.getpid(), "gone": gone}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are for Linux")
def test_forked_workers_run_their_entry_on_their_own_pipes_and_exit_with_its_code() -> None:
    done = subprocess.run([sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # each on its own pipes, with no other descriptor than 0, 1, 2 and the work queue's reading
    # end: not the other workers' pipes, whose input must close when the scan's process goes,
    # nor the queue's writing end
    assert result["answers"] == ["HELLO 4 0,1,2,queue", "HELLO 5 0,1,2,queue"]
    assert result["codes"] == [4, 5]  # the entry's exit code, through os._exit
    assert result["me"] not in result["pids"]
    assert result["gone"]  # the one not taken: killed and reaped by discard()


FORK_FAILS_SCRIPT = """
import json, os
from redline.engine.shards import Preforked

fds = sorted(os.listdir("/proc/self/fd"))
real, calls = os.fork, []

def fork():  # the system forks once, then no more
    calls.append(1)
    if len(calls) == 2:
        raise OSError(11, "Resource temporarily unavailable")
    return real()

os.fork = fork
try:
    Preforked.fork(3, lambda: os.read(0, 1))
    raised = False
except OSError:
    raised = True
me = os.getpid()
children = open(f"/proc/{me}/task/{me}/children").read().split()
print(json.dumps({"raised": raised, "children": children, "same_fds": sorted(os.listdir("/proc/self/fd")) == fds}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are for Linux")
def test_a_fork_that_fails_leaves_no_worker_and_no_pipe_behind() -> None:
    done = subprocess.run([sys.executable, "-c", FORK_FAILS_SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"raised": True, "children": [], "same_fds": True}


def test_fork_refuses_a_process_with_threads() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with pytest.raises(RuntimeError, match="one thread"):
            Preforked.fork(1, lambda: None)
    finally:
        stop.set()
        thread.join()


def test_prefork_forks_nothing_where_the_scan_would_not_use_workers(monkeypatch) -> None:
    forked: list[int] = []
    monkeypatch.setattr(Preforked, "fork", classmethod(lambda cls, count, entry: forked.append(count) or cls([])))
    monkeypatch.setattr(shard_worker, "one_thread", lambda: True)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    remote = ScanConfig(model="openai:m", probes="encoding.Base64", concurrency=64)
    assert prefork(None, None, shareable=True) is None  # a resumed run: its model is in the store
    assert prefork(ScanConfig(model="test.echo", probes="encoding.Base64"), None, shareable=True) is None
    assert prefork(remote, ExecutorConfig(processes=1), shareable=True) is None
    assert prefork(remote, None, shareable=False) is None  # a budget or a generator object
    assert prefork(ScanConfig(model="nosuch:m", probes="encoding.Base64"), None, shareable=True) is None
    assert forked == []
    prefork(remote, ExecutorConfig(processes=3), shareable=True)
    assert forked == [3]
    monkeypatch.setattr(shard_worker, "one_thread", lambda: False)
    assert prefork(remote, ExecutorConfig(processes=3), shareable=True) is None
    assert forked == [3]


def test_prefork_builds_the_probes_once_for_the_workers_and_the_scan(monkeypatch, tmp_path) -> None:
    seen: list = []

    def fork(cls, count, entry):  # what a forked child would run with
        seen.append(entry)
        return cls([])

    monkeypatch.setattr(Preforked, "fork", classmethod(fork))
    monkeypatch.setattr(shard_worker, "one_thread", lambda: True)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    config = ScanConfig(model="openai:m", probes="encoding.Base64,encoding.Hex", concurrency=64)
    forked = prefork(config, ExecutorConfig(processes=2), shareable=True)
    assert forked is not None and forked.built is not None
    key, probes = forked.built
    assert key == config_key(config.as_dict()) and [p.name for p in probes] == ["encoding.Base64", "encoding.Hex"]
    (entry,) = seen  # the children run the worker's main with the same probes
    assert entry.func is shard_worker.main and entry.args == ((key, probes),)
    missing = ScanConfig(model="openai:m", dataset=str(tmp_path / "nosuch.jsonl"), concurrency=64)
    assert prefork(missing, ExecutorConfig(processes=2), shareable=True) is None  # the scan says why
    assert len(seen) == 1


def test_one_thread_counts_native_threads_too(monkeypatch) -> None:
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    tasks = ["1"]
    monkeypatch.setattr(os, "listdir", lambda path: tasks if path == "/proc/self/task" else [])
    assert one_thread()
    tasks.append("2")  # a thread Python does not know of (a native library's)
    assert not one_thread()
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    tasks.pop()
    assert not one_thread()


def test_prefork_imports_the_detectors_of_the_probes_a_scan_selects(monkeypatch) -> None:
    loaded: list[str] = []
    monkeypatch.setattr(shard_worker.detectors, "load", lambda name: loaded.append(name))
    shard_worker._import_detectors(ScanConfig(model="openai:m"))  # the default probes
    assert "refusal.Compliance" in loaded
    loaded.clear()
    shard_worker._import_detectors(ScanConfig(model="openai:m", dataset="prompts.jsonl"))
    assert loaded == ["refusal.Compliance"]  # dataset.Prompts' own
    loaded.clear()
    shard_worker._import_detectors(ScanConfig(model="openai:m", lve_paths=["lves/"]))  # LVEs only
    assert loaded == []
