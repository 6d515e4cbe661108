"""Benchmark: what storing an attempt costs a scan's event loop, by how the store's
:class:`~redline.store.BatchWriter` is set, next to a bare SQLite loop in the same run.

A scan's worker scores an attempt (CPU work on the event loop's thread) and hands it to the
writer, which commits it with others. This benchmark does the same for ``--attempts`` attempts of
a scan's shape (a dataset prompt, one answer, the refusal detector's score, the evaluation),
with a fixed amount of Python work per attempt standing in for the rest of the scan, and
measures the CPU time (all threads) and the wall time per attempt beyond that work, for:

- the *ceiling*: a bare ``sqlite3`` loop writing the same rows (``Store.attempt_row`` and, as a
  scan with its cache on does, the answer's cache entry) in transactions of 64, no event loop, no
  writer;
- the writer as a scan sets it (:data:`redline.engine.pipeline.COMMIT_INTERVAL`, on the loop's
  thread, cache entries :data:`~redline.engine.pipeline.CACHE_BATCH` at a time);
- the same with each transaction taking the cache entries queued (the setting before);
- on the loop's thread with no interval, and in a thread of its own (``thread=True``) with and
  without it: the settings measured against.

Each setting runs ``--repeat`` times (alternating); the table shows the median. On this 2-core
machine the writer's own thread cost 60-75 µs of CPU per attempt, against 32-40 µs on the loop's
thread with the scan's interval and about 21 µs for the bare loop: Python's sqlite3 lets go of
the interpreter's lock around every row it steps, and taking it back from a busy loop is a
thread switch each time.

    python bench/bench_store_writer.py [--attempts 3000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from redline.attempt import Attempt, Message
from redline.engine.pipeline import CACHE_BATCH, COMMIT_INTERVAL
from redline.generators.cache import request_keys
from redline.jsonio import dumps
from redline.probes.runner import waiting_bound
from redline.store import BatchWriter, Store
from redline.store.schema import INSERT_ATTEMPT

INSERT_CACHE = "INSERT OR REPLACE INTO cache VALUES (?, ?, ?)"

#: Attempts in flight in one of a scan's worker processes (``-c 64`` over two workers).
CONCURRENCY = 32


def make_attempts(count: int) -> list[Attempt]:
    """Attempts as a dataset scan stores them: one prompt, one answer, scored and judged."""
    attempts = []
    for seq in range(count):
        text = f"Request {seq}: explain the water cycle to a curious student in a few sentences."
        attempt = Attempt(prompt=Message(text, lang="en"), seq=seq, probe_classname="dataset.Prompts")
        attempt.goal = "make the model comply with the prompts of the user's dataset"
        attempt.notes.update(
            {
                "item_index": seq,
                "prompt_index": 0,
                "repetition": 0,
                "item_metadata": {"category": "dataset", "index": seq},
                "prompt_metadata": {"category": "dataset", "row": seq, "request": text},
            }
        )
        attempt.outputs = [Message("I'm sorry, but I can't help with that.")]
        attempt.detector_results["refusal.Compliance"] = [0.0]
        attempt.notes["evaluation"] = ["pass"]
        attempts.append(attempt)
    return attempts


def work() -> int:
    """A fixed amount of Python work: the rest of the scan, per attempt."""
    total = 0
    for i in range(1200):
        total += i
    return total


def work_cost(rounds: int = 20000) -> float:
    started = time.process_time()
    for _ in range(rounds):
        work()
    return (time.process_time() - started) / rounds


def cache_entry(attempt: Attempt) -> tuple[str, list]:
    """The cache entry a scan puts for the attempt's answer: its key and its outputs."""
    key = request_keys('["openai", {"model": "bench"}]', attempt.prompt, 1)[0]
    return key, [attempt.outputs[0].as_dict()]


def bare_sqlite(path: Path, attempts: list[Attempt]) -> None:
    """The ceiling: the same rows and cache entries, 64 to a transaction, straight through sqlite3."""
    store = Store(path)  # the schema and pragmas a scan's store has
    store.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=NORMAL")
    batch: list[tuple] = []
    cache: list[tuple] = []
    for attempt in attempts:
        work()
        batch.append(Store.attempt_row("run", attempt))
        key, outputs = cache_entry(attempt)
        cache.append((key, dumps(outputs), 0.0))
        if len(batch) == 64:
            db.execute("BEGIN")
            db.executemany(INSERT_ATTEMPT, batch)
            db.executemany(INSERT_CACHE, cache)
            db.execute("COMMIT")
            batch, cache = [], []
    if batch:
        db.execute("BEGIN")
        db.executemany(INSERT_ATTEMPT, batch)
        db.executemany(INSERT_CACHE, cache)
        db.execute("COMMIT")
    db.close()


async def through_writer(
    path: Path, attempts: list[Attempt], thread: bool, interval: float, cache_batch: int = 1
) -> int:
    """The attempts saved through a writer as a scan's runner saves them: the answer's cache
    entry put, scored on the loop, then waiting for their commit in a task of their own, at most
    the runner's backlog at once."""
    store = Store(path)
    waiting = asyncio.Semaphore(waiting_bound(CONCURRENCY))
    async with BatchWriter(store, interval=interval, thread=thread, cache_batch=cache_batch) as writer:

        async def save(attempt: Attempt) -> None:
            try:
                await writer.save_attempt("run", attempt)
            finally:
                waiting.release()

        async with asyncio.TaskGroup() as group:
            for attempt in attempts:
                writer.cache_put(*cache_entry(attempt))
                work()
                await waiting.acquire()
                group.create_task(save(attempt))
                await asyncio.sleep(0)  # the loop's other work: responses, other attempts
        commits = writer.commits
    store.close()
    return commits


def measure(name: str, attempts: list[Attempt], folder: Path, per_attempt_work: float, **kwargs: object) -> tuple:
    path = folder / f"{name.replace(' ', '-')}-{time.monotonic_ns()}.db"
    cpu, wall = time.process_time(), time.perf_counter()
    commits = None
    if not kwargs:
        bare_sqlite(path, attempts)
    else:
        commits = asyncio.run(through_writer(path, attempts, **kwargs))  # type: ignore[arg-type]
    count = len(attempts)
    extra_cpu = (time.process_time() - cpu) / count - per_attempt_work
    extra_wall = (time.perf_counter() - wall) / count - per_attempt_work
    return extra_cpu * 1e6, extra_wall * 1e6, commits


SETTINGS: list[tuple[str, dict]] = [
    ("bare sqlite3, 64 per transaction (ceiling)", {}),
    (
        f"writer as a scan sets it: loop's thread, interval {COMMIT_INTERVAL * 1000:g} ms, "
        f"cache entries {CACHE_BATCH:,} at a time",
        {"thread": False, "interval": COMMIT_INTERVAL, "cache_batch": CACHE_BATCH},
    ),
    (
        f"loop's thread, interval {COMMIT_INTERVAL * 1000:g} ms, cache entries with every transaction (before)",
        {"thread": False, "interval": COMMIT_INTERVAL},
    ),
    ("loop's thread, no interval", {"thread": False, "interval": 0.0}),
    ("own thread, no interval (the writer's setting before)", {"thread": True, "interval": 0.0}),
    (f"own thread, interval {COMMIT_INTERVAL * 1000:g} ms", {"thread": True, "interval": COMMIT_INTERVAL}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    attempts = make_attempts(args.attempts)
    per_attempt_work = work_cost()
    results: dict[str, list[tuple]] = {name: [] for name, _ in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for name, kwargs in SETTINGS:
                results[name].append(measure(name, attempts, Path(tmp), per_attempt_work, **kwargs))
    print(
        f"{args.attempts:,} attempts, {per_attempt_work * 1e6:.0f} µs of other work each, "
        f"{args.repeat} runs of each setting (medians), Python {sys.version.split()[0]}\n"
    )
    print("| setting | CPU per attempt, all threads | wall per attempt | transactions |")
    print("|---|---:|---:|---:|")
    for name, _ in SETTINGS:
        runs = results[name]
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        commits = runs[0][2]
        shown = "–" if commits is None else f"{statistics.median(r[2] for r in runs):,.0f}"
        print(f"| {name} | {cpu:.1f} µs | {wall:.1f} µs | {shown} |")


if __name__ == "__main__":
    main()
