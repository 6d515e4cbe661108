"""The run store: :class:`Store`, one embedded SQLite file (default ``./redline.db``).

The tables are described in :mod:`redline.store.schema`; the store returns the typed records of
:mod:`redline.store.records`; a scan writes through :class:`~redline.store.writer.BatchWriter`.

Durability. The file is in WAL mode with ``synchronous=NORMAL``. :meth:`Store.save_attempt`
commits at once. During a scan the harness writes through a ``BatchWriter`` (group commit):
attempts that finish together are committed in one transaction, and an attempt counts as finished
(progress, ``on_done``) only after its transaction has committed. So a scan killed at any moment
(``kill -9`` included) loses at most the requests in flight — never an attempt reported as
finished — and a transaction is either wholly in the file or not at all, so the store is never
corrupt. (An operating-system crash or power loss may additionally lose the last transactions:
``synchronous=NORMAL`` does not fsync every commit; it still never corrupts the file.)

API keys are never passed to the store: generators' :meth:`settings` leave them out and
:meth:`create_run` refuses settings that look like secrets (a value that only references an
environment variable, like ``"Bearer ${API_TOKEN}"``, is not a secret), and stores every URL of a
run's configuration with the password of a ``user:password@`` replaced by ``***`` (a resumed run
is given it again, see :mod:`redline.engine.pipeline`).

Text is stored losslessly: attempts, results and cached outputs are JSON (:mod:`redline.jsonio`),
and a text holding a lone surrogate (``"\\udcff"``, valid JSON from an API) is written with every
non-ASCII character escaped, so it is loaded back exactly as it was. Plain text columns (a run's model and message) hold UTF-8 only:
lone surrogates are stored there as their ``\\udcff`` escape.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from redline import jsonio
from redline.attempt import Attempt, AttemptError
from redline.evaluation import FAIL
from redline.generators.transport.secrets import mask_url, redact_data
from redline.store import rows
from redline.store.errors import RunNotFound, StoreError
from redline.store.integrity import GuardedConnection, StoreDamaged, check_integrity, store_error
from redline.store.locks import RunLock, RunLocked, acquire, is_held
from redline.store.records import (
    LABEL_FAIL,
    LABEL_PASS,
    RUN_COMPLETE,
    RUN_INTERRUPTED,
    RUN_RUNNING,
    AttemptCounts,
    ProbeResultRecord,
    ReviewRecord,
    RunListing,
    RunRecord,
    ValidationRecord,
)
from redline.store.rows import Bad, DamagedAttempt, DamagedRun, read
from redline.store.schema import INSERT_ATTEMPT, prepare
from redline.store.trust import check_schema, harden
from redline.textsafety import escape_surrogates

__all__ = [
    "RUN_COMPLETE",
    "RUN_INTERRUPTED",
    "RUN_RUNNING",
    "RunLocked",
    "RunNotFound",
    "Store",
    "StoreDamaged",
    "StoreError",
]

#: The message of a run shown as interrupted because its scan died without recording an end.
DEAD_RUN_MESSAGE = "its scan stopped without recording an end (the process was killed or crashed)"

#: The range of a SQLite INTEGER (a Python int outside it cannot be bound to a statement).
_MIN_INTEGER, _MAX_INTEGER = -(2**63), 2**63 - 1

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|passw(or)?d|authorization|bearer|(^|[_-])token$|credential)", re.I)


def _attempt_filter(run_id: str, probe: str | None, errored: bool | None) -> tuple[str, list[Any]]:
    """The WHERE clause (with its arguments) selecting a run's attempts, optionally of one probe
    and only errored / only non-errored ones."""
    where = "run_id = ?"
    args: list[Any] = [run_id]
    if probe is not None:
        where += " AND probe = ?"
        args.append(probe)
    if errored is not None:
        where += " AND errored = ?"
        args.append(1 if errored else 0)
    return where, args


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
    """A redline store at ``path`` (created if missing; an existing file, written by this or an
    earlier version, is opened as it is). Raises :class:`StoreError` when the folder is missing
    or the file is not a SQLite database.

    Every SQLite error of a method (a damaged file, a locked or read-only one) is a one-line
    :class:`StoreError` naming the file (:class:`StoreDamaged` for a damaged one); a scan calls
    :meth:`check_integrity` before it writes. A run being scanned holds its run lock
    (:mod:`redline.store.locks`): :meth:`create_run` and :meth:`claim_run` take it, :meth:`release_run`
    and :meth:`close` let it go, and a run stored as ``running`` whose lock nobody holds (its
    process was killed) is returned as ``interrupted``."""

    def __init__(self, path: str | os.PathLike = "redline.db") -> None:
        self.path = Path(path)
        self._locks: dict[str, RunLock] = {}
        if self.path.parent and not self.path.parent.exists():
            raise StoreError(f"cannot open store {self.path}: folder {self.path.parent} does not exist")
        if self.path.exists() and not self.path.is_file():  # SQLite would put its journal beside a device
            kind = "a folder" if self.path.is_dir() else "not a regular file (a device, FIFO or socket)"
            raise StoreError(f"cannot open store {self.path}: it is {kind}")
        try:
            connection = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise store_error(self.path, exc, "open") from None
        try:
            deadline = harden(connection)
            deadline.start()
            check_schema(connection, self.path)  # before anything is written: a file redline made
            deadline.stop()
            prepare(connection)
        except sqlite3.DatabaseError as exc:
            connection.close()
            raise store_error(self.path, exc, "open") from None
        except StoreError:
            connection.close()
            raise
        self._db = GuardedConnection(connection, self.path, deadline)
        self._checkpointer: threading.Thread | None = None

    def close(self) -> None:
        """Release the run locks this store holds and close the file (once a
        :meth:`checkpoint_behind` has finished)."""
        for run_id in list(self._locks):
            self.release_run(run_id)
        if self._checkpointer is not None:
            self._checkpointer.join()
        self._db.close()

    def checkpoint_behind(self) -> None:
        """Copy the write-ahead log into the file now, in a thread of its own, while this
        connection goes on reading (a scan's phase 4, after its attempts were written). The last connection to close the file does the same and deletes the log: this
        one's :meth:`close` then has little left to do. A checkpoint that fails or finds the file
        busy leaves the work to that close."""
        if self._checkpointer is not None and self._checkpointer.is_alive():
            return

        def checkpoint() -> None:
            try:
                connection = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            except sqlite3.Error:
                return
            try:
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:
                pass
            finally:
                connection.close()

        self._checkpointer = threading.Thread(target=checkpoint, name="redline-checkpoint", daemon=True)
        self._checkpointer.start()

    def check_integrity(self) -> None:
        """Raise :class:`StoreDamaged` when the file is damaged (``PRAGMA quick_check``, see
        :mod:`redline.store.integrity` for its cost); a scan calls it before it writes."""
        self._db.deadline.stop()  # it reads the whole file: bounded by the file's size
        check_integrity(self._db.raw, self.path)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction: what is written inside is all in the file afterwards, or (on an
        error or a kill) none of it; a SQLite error becomes a one-line :class:`StoreError`."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                try:
                    self._db.execute("ROLLBACK")
                except StoreError:
                    pass  # SQLite already rolled back (a full disk, a damaged page): report the cause
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "write to") from None

    # -- runs ------------------------------------------------------------------------------------
    def create_run(self, model: str, config: dict) -> str:
        """Record a new run and return its id. The store holds the run's lock from before the
        run exists until :meth:`release_run` or :meth:`close`."""
        _check_no_secrets(config)
        config = redact_data(config, (), urls=True)  # a user:password@ in any URL is stored as user:***@
        model = escape_surrogates(mask_url(model))
        if len(model) > rows.MAX_NAME_CHARS:  # a row the store would refuse to read back
            raise StoreError(
                f"refusing to store a run whose model spec is {len(model):,} characters long "
                f"(at most {rows.MAX_NAME_CHARS:,})"
            )
        run_id = _new_run_id()
        self._locks[run_id] = acquire(self.path, run_id)
        now = time.time()
        try:
            self._db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, NULL)",
                (run_id, now, now, model, RUN_RUNNING, json.dumps(config)),
            )
        except BaseException:
            self.release_run(run_id)
            raise
        return run_id

    def claim_run(self, run_id: str) -> None:
        """Take the lock of run ``run_id`` for a scan that continues it (nothing happens when this
        store holds it already). Raises :class:`RunLocked`, naming the process, when another scan
        holds it."""
        if run_id not in self._locks:
            self._locks[run_id] = acquire(self.path, run_id)

    def release_run(self, run_id: str) -> None:
        """Let go of the lock of run ``run_id`` (nothing happens when this store does not hold it)."""
        lock = self._locks.pop(run_id, None)
        if lock is not None:
            lock.release()

    def is_live(self, run_id: str) -> bool:
        """Whether a scan (this process's or another's) holds the lock of run ``run_id``."""
        return run_id in self._locks or is_held(self.path, run_id)

    def _shown(self, run_id: str, status: str, message: str | None) -> tuple[str, str | None]:
        """The status and message of a run as users see them: a run stored as ``running`` whose
        lock nobody holds was killed (the store keeps the stored value until a scan resumes it)."""
        if status == RUN_RUNNING and not self.is_live(run_id):
            return RUN_INTERRUPTED, message or DEAD_RUN_MESSAGE
        return status, message

    def get_run(self, run_id: str) -> RunRecord:
        """The run ``run_id``; raises :class:`RunNotFound` (naming the store) when there is none."""
        row = self._db.execute(
            "SELECT run_id, created, updated, model, status, config, message FROM runs WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id!r} in {self.path} (see 'redline runs --store {self.path}')")
        where = f"run {run_id[:80]!r}"
        read(self.path, where, rows.run_row, row[0], row[1], row[2], row[3], row[4], row[6])
        config = read(self.path, where, rows.run_config, row[5])
        status, message = self._shown(row[0], row[4], row[6])
        return RunRecord(
            run_id=row[0],
            created=row[1],
            updated=row[2],
            model=row[3],
            status=status,
            config=config,
            message=message,
        )

    def list_runs(self) -> list[RunListing | DamagedRun]:
        """Every run with its attempt totals, newest first; a row that is not a run as redline
        writes it is listed in its place as a :class:`~redline.store.rows.DamagedRun`."""
        found = self._db.execute(
            """SELECT r.run_id, r.created, r.model, r.status,
                      COUNT(a.seq), COALESCE(SUM(a.failed), 0), COALESCE(SUM(a.errored), 0)
               FROM runs r LEFT JOIN attempts a ON a.run_id = r.run_id
               GROUP BY r.run_id ORDER BY r.created DESC"""
        ).fetchall()
        listed: list[RunListing | DamagedRun] = []
        for r in found:
            try:
                _listed_run(r)
            except Bad as exc:
                listed.append(DamagedRun(run_id=str(r[0])[:80], problem=str(exc)))
                continue
            listed.append(
                RunListing(
                    run_id=r[0],
                    created=r[1],
                    model=r[2],
                    status=self._shown(r[0], r[3], None)[0],
                    attempts=r[4],
                    failed=r[5],
                    errored=r[6],
                )
            )
        return listed

    def set_run_status(self, run_id: str, status: str, message: str | None = None) -> None:
        """Set the run's status (``RUN_*``) and message (``None`` clears it) and its update time.
        The message (an error's, which may quote an endpoint) is stored with URL passwords masked
        and lone surrogates escaped (a SQLite text holds UTF-8 only)."""
        if message is not None:
            message = escape_surrogates(mask_url(message))
        self._db.execute(
            "UPDATE runs SET status = ?, message = ?, updated = ? WHERE run_id = ?",
            (status, message, time.time(), run_id),
        )

    # -- attempts --------------------------------------------------------------------------------
    @staticmethod
    def attempt_row(run_id: str, attempt: Attempt) -> tuple:
        """The ``attempts`` row of ``attempt`` (serialised now: later changes are not seen): its
        :meth:`~redline.attempt.Attempt.as_dict` as JSON, and the JSON of its notes in a column of
        their own. ``failed`` counts its outputs judged :data:`~redline.evaluation.FAIL`."""
        value = attempt.as_dict()
        evaluation = attempt.notes.get("evaluation", [])
        failed = sum(1 for e in evaluation if e == FAIL)
        errored = 1 if attempt.notes.get("error") else 0
        return (
            run_id,
            attempt.probe_classname or "",
            attempt.seq,
            attempt.status,
            len(attempt.outputs),
            failed,
            errored,
            jsonio.dumps(value),
            time.time(),
            jsonio.dumps(value["notes"]),
        )

    def save_attempt(self, run_id: str, attempt: Attempt) -> None:
        """Write (or overwrite) one attempt and commit at once."""
        self._db.execute(INSERT_ATTEMPT, self.attempt_row(run_id, attempt))

    def write_batch(self, attempt_rows: list[tuple], cache_items: dict[str, list[Any]] | None = None) -> None:
        """Write many :meth:`attempt_row` rows and cache entries in one transaction: all of them
        are in the file after this returns, or (on an error or a kill) none of them."""
        if not attempt_rows and not cache_items:
            return
        now = time.time()
        with self._transaction():
            if attempt_rows:
                self._db.executemany(INSERT_ATTEMPT, attempt_rows)
            if cache_items:
                self._db.executemany(
                    "INSERT OR REPLACE INTO cache VALUES (?, ?, ?)",
                    # in key order: neighbouring keys share the pages of the key's index
                    [(k, jsonio.dumps(v), now) for k, v in sorted(cache_items.items())],
                )

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

    def _attempt_row(self, run_id: str, probe: Any, seq: Any) -> str:
        """How a row of ``attempts`` is named in an error."""
        return f"attempt {seq!r} of probe {str(probe)[:80]!r} in run {run_id[:80]!r}"

    def _attempt(self, run_id: str, probe: Any, seq: Any, data: Any) -> Attempt:
        """The attempt stored as ``data`` (:func:`rows.attempt_data`), or :class:`RowDamaged`."""
        return read(self.path, self._attempt_row(run_id, probe, seq), _attempt_of, data)

    def iter_attempts(self, run_id: str, probe: str | None = None, errored: bool | None = None) -> Iterator[Attempt]:
        """Stored attempts in (probe, seq) order; a row that is not an attempt as redline writes
        it raises :class:`~redline.store.rows.RowDamaged`."""
        where, args = _attempt_filter(run_id, probe, errored)
        query = f"SELECT probe, seq, data FROM attempts WHERE {where} ORDER BY probe, seq"
        for name, seq, data in self._db.execute(query, args):
            yield self._attempt(run_id, name, seq, data)

    def iter_attempt_notes(self, run_id: str, probe: str | None = None, errored: bool | None = None) -> Iterator[dict]:
        """The notes of the stored attempts (``notes`` of :meth:`Attempt.as_dict`), in (probe,
        seq) order, without reading the rest of each attempt where the row keeps them apart."""
        where, args = _attempt_filter(run_id, probe, errored)
        query = (
            "SELECT probe, seq, notes, CASE WHEN notes IS NULL THEN data END "
            f"FROM attempts WHERE {where} ORDER BY probe, seq"
        )
        for name, seq, notes, data in self._db.execute(query, args):
            yield read(self.path, self._attempt_row(run_id, name, seq), _notes_of, notes, data)

    def iter_output_texts(self, run_id: str, probe: str, limit: int) -> Iterator[str | None]:
        """The texts of the outputs of ``probe``'s non-errored attempts, in seq order, at most
        ``limit`` of them, read without the rest of each attempt (a text that is not a string
        reads as ``None``)."""
        query = (
            "SELECT json_extract(data, '$.outputs') FROM attempts "
            "WHERE run_id = ? AND probe = ? AND errored = 0 AND json_valid(data) ORDER BY seq"
        )
        given = 0
        for (outputs,) in self._db.execute(query, (run_id, probe)):
            try:
                found = jsonio.loads(outputs) if isinstance(outputs, str) else None
            except ValueError:
                found = None
            for output in found if isinstance(found, list) else ():
                if given >= limit:
                    return
                text = output.get("text") if isinstance(output, dict) else None
                yield text if isinstance(text, str) else None
                given += 1

    def iter_attempt_dicts(self, run_id: str, probe: str | None = None, errored: bool | None = None) -> Iterator[dict]:
        """Stored attempts as their JSON objects (:meth:`Attempt.as_dict`), in (probe, seq) order;
        a damaged row raises :class:`~redline.store.rows.RowDamaged`."""
        for data in self.iter_attempt_entries(run_id, probe, errored):
            if isinstance(data, DamagedAttempt):
                raise rows.RowDamaged(
                    f"store {self.path}: {self._attempt_row(run_id, data.probe, data.seq)} is damaged "
                    f"({data.problem}); it was not written by redline"
                )
            yield data

    def iter_attempt_entries(
        self, run_id: str, probe: str | None = None, errored: bool | None = None
    ) -> Iterator[dict | DamagedAttempt]:
        """:meth:`iter_attempt_dicts`, a damaged row given as a :class:`DamagedAttempt` in its
        place (a reader that shows it marked, such as ``redline view``)."""
        where, args = _attempt_filter(run_id, probe, errored)
        query = f"SELECT probe, seq, data FROM attempts WHERE {where} ORDER BY probe, seq"
        for name, seq, data in self._db.execute(query, args):
            try:
                yield rows.attempt_data(data)
            except Bad as exc:
                shown = seq if type(seq) is int else -1
                yield DamagedAttempt(str(name)[: rows.MAX_NAME_CHARS], shown, str(exc))

    def get_attempt(self, run_id: str, probe: str, seq: int) -> Attempt | None:
        """Attempt ``seq`` of ``probe`` in ``run_id`` (one row, read by its key); ``None`` when
        it is not stored (a ``seq`` outside SQLite's integers included)."""
        if not _MIN_INTEGER <= seq <= _MAX_INTEGER:
            return None
        row = self._db.execute(
            "SELECT data FROM attempts WHERE run_id = ? AND probe = ? AND seq = ?", (run_id, probe, seq)
        ).fetchone()
        return self._attempt(run_id, probe, seq, row[0]) if row else None

    def attempt_counts(self, run_id: str) -> dict[str, AttemptCounts]:
        """Per probe with stored attempts: attempts, outputs, failed outputs and errored attempts
        (a probe without any stored attempt is absent)."""
        found = self._db.execute(
            """SELECT probe, COUNT(*), SUM(outputs), SUM(failed), SUM(errored)
               FROM attempts WHERE run_id = ? GROUP BY probe""",
            (run_id,),
        )
        counts = {}
        for r in found:
            where = f"the attempts of probe {str(r[0])[:80]!r} in run {run_id[:80]!r}"
            read(self.path, where, _counts, r)
            counts[r[0]] = AttemptCounts(attempts=r[1], outputs=r[2] or 0, failed=r[3] or 0, errored=r[4] or 0)
        return counts

    # -- probe results ---------------------------------------------------------------------------
    def save_probe_result(self, run_id: str, probe: str, position: int, result: dict) -> None:
        """Write (or replace) the phase-4 result of ``probe``, the JSON object described by
        :class:`ProbeResultRecord`, at ``position`` in the run's probe order."""
        self._db.execute(
            "INSERT OR REPLACE INTO probe_results VALUES (?, ?, ?, ?)",
            (run_id, probe, position, json.dumps(result)),
        )

    def probe_results(self, run_id: str) -> dict[str, ProbeResultRecord]:
        """The stored probe results of the run by probe name, in position order."""
        found = self._db.execute(
            "SELECT probe, position, result FROM probe_results WHERE run_id = ? ORDER BY position", (run_id,)
        )
        results = {}
        for probe, position, result in found:
            where = f"the result of probe {str(probe)[:80]!r} in run {run_id[:80]!r}"
            read(self.path, where, rows.name, probe, "its probe")
            read(self.path, where, rows.count, position, "its position", -(2**63), 2**63 - 1)
            data = read(self.path, where, rows.probe_result, result)
            results[probe] = ProbeResultRecord(probe=probe, position=position, data=data)
        return results

    # -- cache -----------------------------------------------------------------------------------
    def cache_get(self, key: str) -> list[Any] | None:
        """The cached outputs stored under ``key`` (``None`` when there are none, or when the
        entry is not outputs as redline writes them: the request is then asked again)."""
        row = self._db.execute("SELECT outputs FROM cache WHERE key = ?", (key,)).fetchone()
        return _cached(row[0]) if row else None

    def cache_keys(self, limit: int) -> list[str] | None:
        """Every cache key, or ``None`` when there are more than ``limit``."""
        keys = [row[0] for row in self._db.execute("SELECT key FROM cache LIMIT ?", (limit + 1,))]
        return keys if len(keys) <= limit else None

    def cache_items(self) -> Iterator[tuple[str, list[Any]]]:
        """Every cached entry as ``(key, outputs)`` (what a distributed scan's workers start with)."""
        for key, outputs in self._db.execute("SELECT key, outputs FROM cache"):
            value = _cached(outputs)
            if value is not None and type(key) is str:
                yield key, value

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        """Store (or replace) the outputs of ``key``; committed at once."""
        self._db.execute("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)", (key, jsonio.dumps(outputs), time.time()))

    # -- reviews and validations -----------------------------------------------------------------
    def save_reviews(self, reviews: list[ReviewRecord]) -> None:
        """Write (or replace: a later label of the same output wins) ``reviews`` in one
        transaction; a note is kept to the length a review's reader takes
        (:data:`~redline.store.rows.MAX_MESSAGE_CHARS`). A label other than ``"fail"``/``"pass"``
        raises :class:`StoreError`."""
        for review in reviews:
            if review.label not in (LABEL_FAIL, LABEL_PASS):
                raise StoreError(f"review label must be {LABEL_FAIL!r} or {LABEL_PASS!r}, got {review.label!r}")
        limit = rows.MAX_MESSAGE_CHARS
        values = [
            (r.run_id, r.probe, r.seq, r.output, r.label, r.verdict, r.note[:limit] if r.note else r.note, r.reviewer)
            + (r.created or time.time(),)
            for r in reviews
        ]
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)

    def delete_review(self, run_id: str, probe: str, seq: int, output: int) -> None:
        """Remove the label of output ``output`` of attempt ``seq`` of ``probe`` in ``run_id``
        (nothing happens when it has none); committed at once. ``redline review`` undoes with it."""
        self._db.execute(
            "DELETE FROM reviews WHERE run_id = ? AND probe = ? AND seq = ? AND output = ?",
            (run_id, probe, seq, output),
        )

    def reviews(self, run_id: str, probe: str | None = None) -> list[ReviewRecord]:
        """The reviews of ``run_id`` (of one ``probe`` when given), ordered by probe, seq, output."""
        sql = "SELECT run_id, probe, seq, output, label, verdict, note, reviewer, created FROM reviews WHERE run_id = ?"
        params: list[Any] = [run_id]
        if probe is not None:
            sql += " AND probe = ?"
            params.append(probe)
        found = self._db.execute(sql + " ORDER BY probe, seq, output", params).fetchall()
        where = f"a review in run {run_id[:80]!r}"
        return [ReviewRecord(*read(self.path, where, rows.review_row, row)) for row in found]

    def save_validation(self, record: ValidationRecord) -> None:
        """Write (or replace) the validation of ``record.detector`` at ``record.version`` on
        ``record.dataset``; committed at once."""
        self._db.execute(
            "INSERT OR REPLACE INTO validations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.detector,
                record.version,
                record.dataset,
                record.tp,
                record.fp,
                record.fn,
                record.tn,
                record.undetected,
                record.created or time.time(),
            ),
        )

    def validations(self, detector: str, version: str | None = None) -> list[ValidationRecord]:
        """The saved validations of ``detector`` (at ``version`` when given), newest first."""
        sql = (
            "SELECT detector, version, dataset, tp, fp, fn, tn, undetected, created FROM validations WHERE detector = ?"
        )
        params: list[Any] = [detector]
        if version is not None:
            sql += " AND version = ?"
            params.append(version)
        found = self._db.execute(sql + " ORDER BY created DESC", params).fetchall()
        where = f"a validation of {detector[:80]!r}"
        return [ValidationRecord(*read(self.path, where, rows.validation_row, row)) for row in found]


# -- readers of rows (redline.store.rows) ----------------------------------------------------------
def _attempt_of(data: Any) -> Attempt:
    """The attempt stored as ``data``: :func:`rows.attempt_data`, then rebuilt."""
    value = rows.attempt_data(data)
    try:
        return Attempt.from_dict(value)
    except (AttemptError, ValueError, TypeError) as exc:
        raise Bad(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def _notes_of(notes: Any, data: Any) -> dict:
    """The notes of an attempt row: its ``notes`` column, or the notes in ``data`` where the
    row was written before that column existed."""
    if notes is not None:
        return rows.notes_data(rows.json_value(notes, "its notes"))
    return rows.notes_data(rows.attempt_data(data).get("notes"))


def _listed_run(row: tuple) -> None:
    rows.run_row(row[0], row[1], None, row[2], row[3], None)
    for value, what in zip(row[4:7], ("its attempts", "its failed outputs", "its errored attempts")):
        rows.count(value, what)


def _counts(row: tuple) -> None:
    rows.name(row[0], "its probe")
    for value, what in zip(row[1:5], ("attempts", "outputs", "failed outputs", "errored attempts")):
        rows.count(value or 0, what)


def _cached(outputs: Any) -> list[Any] | None:
    try:
        return rows.cached_outputs(outputs)
    except Bad:
        return None
