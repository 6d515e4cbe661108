"""The run store: one embedded SQLite file (default ``./redline.db``).

Tables: ``runs`` (one row per scan: model, settings, status), ``attempts`` (every finished or
errored attempt as :meth:`Attempt.as_dict` JSON, with its counts), ``probe_results`` (phase-4
metrics and marks per probe) and ``cache`` (responses keyed by request, for re-runs).

Each attempt is committed as soon as it finishes, in WAL mode, so a scan killed at any moment
loses at most the requests in flight and never corrupts what was written. API keys are never
passed to the store: generators' :meth:`settings` leave them out and :meth:`create_run` refuses
settings that look like secrets.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

from redline.attempt import Attempt

__all__ = ["Store", "StoreError", "RunNotFound", "RUN_RUNNING", "RUN_COMPLETE", "RUN_INTERRUPTED"]

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

_SECRET_KEY = re.compile(r"(api_?key|secret|passw(or)?d|authorization|bearer|(^|_)token$|credential)", re.I)


class StoreError(RuntimeError):
    """The store file cannot be opened or is not a redline store."""


class RunNotFound(StoreError):
    """No run with that id in the store."""


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _check_no_secrets(value: Any, path: str = "config") -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            lowered = str(key).lower()
            if _SECRET_KEY.search(lowered) and not lowered.endswith("_env") and item:
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
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open store {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Store":
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
            {"run_id": r[0], "created": r[1], "model": r[2], "status": r[3], "attempts": r[4], "failed": r[5], "errored": r[6]}
            for r in rows
        ]

    def set_run_status(self, run_id: str, status: str, message: str | None = None) -> None:
        self._db.execute(
            "UPDATE runs SET status = ?, message = ?, updated = ? WHERE run_id = ?",
            (status, message, time.time(), run_id),
        )

    # -- attempts --------------------------------------------------------------------------------
    def save_attempt(self, run_id: str, attempt: Attempt) -> None:
        """Write (or overwrite) one attempt and commit at once."""
        evaluation = attempt.notes.get("evaluation", [])
        failed = sum(1 for e in evaluation if e == "fail")
        errored = 1 if attempt.notes.get("error") else 0
        self._db.execute(
            "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                attempt.probe_classname or "",
                attempt.seq,
                attempt.status,
                len(attempt.outputs),
                failed,
                errored,
                json.dumps(attempt.as_dict()),
                time.time(),
            ),
        )

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

    def iter_attempt_dicts(
        self, run_id: str, probe: str | None = None, errored: bool | None = None
    ) -> Iterator[dict]:
        query = "SELECT data FROM attempts WHERE run_id = ?"
        args: list[Any] = [run_id]
        if probe is not None:
            query += " AND probe = ?"
            args.append(probe)
        if errored is not None:
            query += " AND errored = ?"
            args.append(1 if errored else 0)
        query += " ORDER BY probe, seq"
        for (data,) in self._db.execute(query, args):
            yield json.loads(data)

    def attempt_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """Per probe: attempts, outputs, failed outputs and errored attempts stored."""
        rows = self._db.execute(
            """SELECT probe, COUNT(*), SUM(outputs), SUM(failed), SUM(errored)
               FROM attempts WHERE run_id = ? GROUP BY probe""",
            (run_id,),
        )
        return {
            r[0]: {"attempts": r[1], "outputs": r[2] or 0, "failed": r[3] or 0, "errored": r[4] or 0}
            for r in rows
        }

    # -- probe results ---------------------------------------------------------------------------
    def save_probe_result(self, run_id: str, probe: str, position: int, result: dict) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO probe_results VALUES (?, ?, ?, ?)",
            (run_id, probe, position, json.dumps(result)),
        )

    def probe_results(self, run_id: str) -> dict[str, dict]:
        rows = self._db.execute(
            "SELECT probe, result FROM probe_results WHERE run_id = ? ORDER BY position", (run_id,)
        )
        return {probe: json.loads(result) for probe, result in rows}

    # -- cache -----------------------------------------------------------------------------------
    def cache_get(self, key: str) -> list[Any] | None:
        row = self._db.execute("SELECT outputs FROM cache WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        self._db.execute("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)", (key, json.dumps(outputs), time.time()))
