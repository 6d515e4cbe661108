"""The run store: one embedded SQLite file (default ``./redline.db``).

Tables: ``runs`` (one row per scan: model, settings, status), ``attempts`` (every finished or
errored attempt as :meth:`Attempt.as_dict` JSON, with its counts), ``probe_results`` (phase-4
metrics and marks per probe) and ``cache`` (responses keyed by request, for re-runs).

Durability. The file is in WAL mode with ``synchronous=NORMAL``. :meth:`Store.save_attempt`
commits at once. During a scan the harness writes through a :class:`BatchWriter` (group commit):
attempts that finish together are committed in one transaction, and an attempt counts as finished
(progress, ``on_done``) only after its transaction has committed. So a scan killed at any moment
(``kill -9`` included) loses at most the requests in flight — never an attempt reported as
finished — and a transaction is either wholly in the file or not at all, so the store is never
corrupt. (An operating-system crash or power loss may additionally lose the last transactions:
``synchronous=NORMAL`` does not fsync every commit; it still never corrupts the file.)

API keys are never passed to the store: generators' :meth:`settings` leave them out and
:meth:`create_run` refuses settings that look like secrets (a value that only references an
environment variable, like ``"Bearer ${API_TOKEN}"``, is not a secret).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from redline.attempt import Attempt

__all__ = [
    "RUN_COMPLETE",
    "RUN_INTERRUPTED",
    "RUN_RUNNING",
    "BatchWriter",
    "RunNotFound",
    "Store",
    "StoreError",
]

RUN_RUNNING = "running"
RUN_COMPLETE = "complete"
RUN_INTERRUPTED = "interrupted"

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    message TEXT
);
CREATE TABLE IF NOT EXISTS attempts (
    run_id TEXT NOT NULL,
    probe TEXT NOT NULL,
    seq INTEGER NOT NULL,
    status INTEGER NOT NULL,
    outputs INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    errored INTEGER NOT NULL,
    data TEXT NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (run_id, probe, seq)
);
CREATE TABLE IF NOT EXISTS probe_results (
    run_id TEXT NOT NULL,
    probe TEXT NOT NULL,
    position INTEGER NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (run_id, probe)
);
CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY,
    outputs TEXT NOT NULL,
    created REAL NOT NULL
);
"""

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|passw(or)?d|authorization|bearer|(^|[_-])token$|credential)", re.I)


_INSERT_ATTEMPT = "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _attempt_filter(run_id: str, probe: str | None, errored: bool | None) -> tuple[str, list[Any]]:
    """The WHERE clause (with its arguments) selecting a run's attempts, optionally of one probe
    and only errored / only non-errored ones."""
    where, args = "run_id = ?", [run_id]
    if probe is not None:
        where += " AND probe = ?"
        args.append(probe)
    if errored is not None:
        where += " AND errored = ?"
        args.append(1 if errored else 0)
    return where, args


class StoreError(RuntimeError):
    """The store file cannot be opened or is not a redline store."""


class RunNotFound(StoreError):
    """No run with that id in the store."""


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


_ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _only_env_reference(item: Any) -> bool:
    """True for a string that names its secret through ``${VAR}`` (e.g. ``"Bearer ${TOKEN}"``)
    instead of holding it: the text around the references is a short scheme word at most."""
    if not isinstance(item, str) or not _ENV_REFERENCE.search(item):
        return False
    rest = _ENV_REFERENCE.sub("", item).strip()
    return len(rest) <= 16 and " " not in rest


def _check_no_secrets(value: Any, path: str = "config") -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            lowered = str(key).lower()
            if _SECRET_KEY.search(lowered) and not lowered.endswith("_env") and item and not _only_env_reference(item):
                raise StoreError(f"refusing to store a secret-looking setting {path}.{key}")
            _check_no_secrets(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_no_secrets(item, f"{path}[{i}]")


class Store:
    """A redline store at ``path`` (created if missing)."""

    def __init__(self, path: str | os.PathLike = "redline.db") -> None:
        self.path = Path(path)
        try:
            if self.path.parent and not self.path.parent.exists():
                raise StoreError(f"cannot open store {self.path}: folder {self.path.parent} does not exist")
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._prepare()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open store {self.path}: {exc}") from None

    def _prepare(self, patience: float = 30.0) -> None:
        """WAL mode and the schema. Two processes opening a new store at the same moment race for
        the journal-mode switch, where SQLite answers "locked" without waiting: retry that."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs ------------------------------------------------------------------------------------
    def create_run(self, model: str, config: dict) -> str:
        """Record a new run and return its id."""
        _check_no_secrets(config)
        run_id = _new_run_id()
        now = time.time()
        self._db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, NULL)",
            (run_id, now, now, model, RUN_RUNNING, json.dumps(config)),
        )
        return run_id

    def get_run(self, run_id: str) -> dict:
        row = self._db.execute(
            "SELECT run_id, created, updated, model, status, config, message FROM runs WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id!r} in {self.path} (see 'redline runs --store {self.path}')")
        return {
            "run_id": row[0],
            "created": row[1],
            "updated": row[2],
            "model": row[3],
            "status": row[4],
            "config": json.loads(row[5]),
            "message": row[6],
        }

    def list_runs(self) -> list[dict]:
        rows = self._db.execute(
            """SELECT r.run_id, r.created, r.model, r.status,
                      COUNT(a.seq), COALESCE(SUM(a.failed), 0), COALESCE(SUM(a.errored), 0)
               FROM runs r LEFT JOIN attempts a ON a.run_id = r.run_id
               GROUP BY r.run_id ORDER BY r.created DESC"""
        ).fetchall()
        return [
            {
                "run_id": r[0],
                "created": r[1],
                "model": r[2],
                "status": r[3],
                "attempts": r[4],
                "failed": r[5],
                "errored": r[6],
            }
            for r in rows
        ]

    def set_run_status(self, run_id: str, status: str, message: str | None = None) -> None:
        self._db.execute(
            "UPDATE runs SET status = ?, message = ?, updated = ? WHERE run_id = ?",
            (status, message, time.time(), run_id),
        )

    # -- attempts --------------------------------------------------------------------------------
    @staticmethod
    def attempt_row(run_id: str, attempt: Attempt) -> tuple:
        """The ``attempts`` row of ``attempt`` (serialised now: later changes are not seen)."""
        evaluation = attempt.notes.get("evaluation", [])
        failed = sum(1 for e in evaluation if e == "fail")
        errored = 1 if attempt.notes.get("error") else 0
        return (
            run_id,
            attempt.probe_classname or "",
            attempt.seq,
            attempt.status,
            len(attempt.outputs),
            failed,
            errored,
            json.dumps(attempt.as_dict()),
            time.time(),
        )

    def save_attempt(self, run_id: str, attempt: Attempt) -> None:
        """Write (or overwrite) one attempt and commit at once."""
        self._db.execute(_INSERT_ATTEMPT, self.attempt_row(run_id, attempt))

    def write_batch(self, attempt_rows: list[tuple], cache_items: dict[str, list[Any]] | None = None) -> None:
        """Write many :meth:`attempt_row` rows and cache entries in one transaction: all of them
        are in the file after this returns, or (on an error or a kill) none of them."""
        if not attempt_rows and not cache_items:
            return
        now = time.time()
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if attempt_rows:
                    self._db.executemany(_INSERT_ATTEMPT, attempt_rows)
                if cache_items:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO cache VALUES (?, ?, ?)",
                        [(k, json.dumps(v), now) for k, v in cache_items.items()],
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to store {self.path}: {exc}") from None

    def count_attempts(self, run_id: str, probe: str | None = None, errored: bool | None = None) -> int:
        """How many attempts :meth:`iter_attempts` with the same arguments yields."""
        where, args = _attempt_filter(run_id, probe, errored)
        return int(self._db.execute(f"SELECT COUNT(*) FROM attempts WHERE {where}", args).fetchone()[0])

    def finished_seqs(self, run_id: str, probe: str, include_errors: bool = True) -> set[int]:
        """Sequence numbers of the attempts of ``probe`` already stored (errored ones unless
        ``include_errors`` is false, so they are retried)."""
        query = "SELECT seq FROM attempts WHERE run_id = ? AND probe = ?"
        if not include_errors:
            query += " AND errored = 0"
        return {row[0] for row in self._db.execute(query, (run_id, probe))}

    def iter_attempts(self, run_id: str, probe: str | None = None, errored: bool | None = None) -> Iterator[Attempt]:
        """Stored attempts in (probe, seq) order, rebuilt with :meth:`Attempt.from_dict`."""
        for data in self.iter_attempt_dicts(run_id, probe, errored):
            yield Attempt.from_dict(data)

    def iter_attempt_dicts(self, run_id: str, probe: str | None = None, errored: bool | None = None) -> Iterator[dict]:
        where, args = _attempt_filter(run_id, probe, errored)
        for (data,) in self._db.execute(f"SELECT data FROM attempts WHERE {where} ORDER BY probe, seq", args):
            yield json.loads(data)

    def attempt_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """Per probe: attempts, outputs, failed outputs and errored attempts stored."""
        rows = self._db.execute(
            """SELECT probe, COUNT(*), SUM(outputs), SUM(failed), SUM(errored)
               FROM attempts WHERE run_id = ? GROUP BY probe""",
            (run_id,),
        )
        return {r[0]: {"attempts": r[1], "outputs": r[2] or 0, "failed": r[3] or 0, "errored": r[4] or 0} for r in rows}

    # -- probe results ---------------------------------------------------------------------------
    def save_probe_result(self, run_id: str, probe: str, position: int, result: dict) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO probe_results VALUES (?, ?, ?, ?)",
            (run_id, probe, position, json.dumps(result)),
        )

    def probe_results(self, run_id: str) -> dict[str, dict]:
        rows = self._db.execute("SELECT probe, result FROM probe_results WHERE run_id = ? ORDER BY position", (run_id,))
        return {probe: json.loads(result) for probe, result in rows}

    # -- cache -----------------------------------------------------------------------------------
    def cache_get(self, key: str) -> list[Any] | None:
        row = self._db.execute("SELECT outputs FROM cache WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        self._db.execute("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)", (key, json.dumps(outputs), time.time()))


class BatchWriter:
    """Group commit for a scan: many attempts (and cache entries) per transaction.

    ``await writer.save_attempt(run_id, attempt)`` returns once the attempt is committed; every
    attempt saved while the writer waits for its turn on the event loop shares that transaction,
    so a busy scan commits in batches while a quiet one commits each attempt almost at once.
    ``cache_put`` queues a cache entry for the next transaction without waiting; ``cache_get``
    also sees queued entries. Use as ``async with BatchWriter(store) as writer``: leaving the block
    (normally, by an exception or by a cancellation) commits whatever is still queued.

    A failed commit raises :class:`StoreError` in every ``save_attempt`` waiting on it.
    """

    def __init__(self, store: Store, max_batch: int = 1000, max_delay: float = 0.0) -> None:
        self.store = store
        self.max_batch = max(1, max_batch)
        self.max_delay = max(0.0, max_delay)
        self._rows: list[tuple] = []
        self._waiters: list[asyncio.Future] = []
        self._cache: dict[str, list[Any]] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        #: Transactions committed so far (for tests and benchmarks).
        self.commits = 0

    async def __aenter__(self) -> BatchWriter:
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="redline store writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def save_attempt(self, run_id: str, attempt: Attempt) -> None:
        """Queue ``attempt`` and wait until the transaction holding it has committed."""
        row = Store.attempt_row(run_id, attempt)
        if self._task is None:
            self.store.write_batch([row])
            return
        future = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        self._waiters.append(future)
        if len(self._rows) >= self.max_batch:
            self._commit()
        else:
            assert self._wake is not None
            self._wake.set()
        await future

    def cache_get(self, key: str) -> list[Any] | None:
        if key in self._cache:
            return self._cache[key]
        return self.store.cache_get(key)

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        if self._task is None:
            self.store.cache_put(key, outputs)
            return
        self._cache[key] = outputs
        assert self._wake is not None
        self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            # Let every attempt that is ready on this turn of the loop join the transaction.
            await asyncio.sleep(self.max_delay)
            self._commit()

    def _commit(self) -> None:
        rows, waiters, cache = self._rows, self._waiters, self._cache
        self._rows, self._waiters, self._cache = [], [], {}
        if not rows and not cache:
            return
        try:
            self.store.write_batch(rows, cache)
        except Exception as exc:
            error = exc if isinstance(exc, StoreError) else StoreError(f"cannot write to store: {exc}")
            for future in waiters:
                if not future.done():
                    future.set_exception(error)
            return
        self.commits += 1
        for future in waiters:
            if not future.done():
                future.set_result(None)

    async def aclose(self) -> None:
        """Commit what is queued and stop; later saves commit one by one."""
        task, self._task = self._task, None
        self._commit()  # first: nothing below may stop the queued attempts from being written
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
