"""A damaged store is one line, not a crash: SQLite errors as :class:`StoreError`, and the check
a scan runs before it writes.

:class:`GuardedConnection` wraps the store's ``sqlite3`` connection: every error SQLite raises
while a statement runs or its rows are read (``database disk image is malformed``, ``file is not
a database``, ``database is locked``, a read-only file...) becomes a :class:`StoreError` naming
the store file and, for a damaged file, what to do. :func:`check_integrity` runs
``PRAGMA quick_check`` (it reads every page and checks the b-trees, without the
index-to-table cross-check of ``integrity_check``), once per scan, before it starts.

Given the :class:`~redline.store.trust.Deadline` of its connection, :class:`GuardedConnection`
starts it before every read step (a statement, each next row) and stops it before a write; a read
stopped by it, or a value past :data:`~redline.store.trust.MAX_VALUE_BYTES`, is one line too.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from redline.store import trust
from redline.store.errors import StoreError

__all__ = ["GuardedConnection", "StoreDamaged", "check_integrity", "store_error"]

#: SQLite's result codes for a file that is damaged or is not a database at all.
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


class StoreDamaged(StoreError):
    """The store file is damaged (or is not a SQLite database)."""


def damaged_message(path: str | os.PathLike, detail: str, opening: bool = False) -> str:
    """The one line for a damaged store at ``path`` and what to do about it (``opening``: the
    file could not even be opened as a store, so it may be another kind of file)."""
    remedy = (
        f"restore it from a backup, or recover what can be read with "
        f"'sqlite3 {path} .recover | sqlite3 recovered.db'; meanwhile scan into another --store"
    )
    if opening:
        return f"cannot open store {path}: {detail} (a damaged store, or not a redline store): {remedy}"
    return f"store {path} is damaged ({detail}): {remedy}"


def store_error(path: str | os.PathLike, exc: sqlite3.Error, action: str = "use") -> StoreError:
    """The :class:`StoreError` for ``exc`` raised by the store at ``path`` while it was used to
    ``action`` (``read``, ``write to``, ``open``): :class:`StoreDamaged` for a damaged file."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if name in _DAMAGED or "malformed" in text or "not a database" in text:
        return StoreDamaged(damaged_message(path, text, opening=action == "open"))
    if name == "SQLITE_INTERRUPT":
        return StoreError(f"cannot {action} store {path}: a query ran past its time limit and was stopped")
    if name == "SQLITE_TOOBIG":
        limit = trust.MAX_VALUE_BYTES // 2**20
        return StoreError(f"cannot {action} store {path}: a value is larger than {limit} MiB")
    return StoreError(f"cannot {action} store {path}: {text}")


def _action(sql: str) -> str:
    first = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    return "read" if first in ("SELECT", "PRAGMA", "WITH") else "write to"


class _guarded:  # noqa: N801 - used as a function: ``with _guarded(path, action):``
    """Turn a ``sqlite3`` error raised inside into :func:`store_error`'s one line (misuse,
    ``ProgrammingError``, is a bug and is left as it is). A class with ``__slots__`` rather than a
    generator-based ``@contextmanager``: every store read and write passes through it."""

    __slots__ = ("action", "path")

    def __init__(self, path: str | os.PathLike, action: str) -> None:
        self.path, self.action = path, action

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.ProgrammingError):
            raise store_error(self.path, exc, self.action) from None


class _NoDeadline:
    """The deadline of a connection without one."""

    __slots__ = ()

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None


class _GuardedCursor:
    """A cursor whose rows raise :class:`StoreError` instead of ``sqlite3`` errors; a read's
    deadline starts again before each row is fetched."""

    def __init__(
        self, cursor: sqlite3.Cursor, path: str | os.PathLike, action: str, deadline: Any = _NoDeadline()
    ) -> None:
        self._cursor, self._path, self._action = cursor, path, action
        self._start = deadline.start if action == "read" else deadline.stop

    def __iter__(self) -> Iterator[Any]:
        cursor, start = self._cursor, self._start
        with _guarded(self._path, self._action):
            while True:
                start()
                row = cursor.fetchone()
                if row is None:
                    return
                yield row

    def fetchone(self) -> Any:
        self._start()
        with _guarded(self._path, self._action):
            return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        self._start()
        with _guarded(self._path, self._action):
            return self._cursor.fetchall()


class GuardedConnection:
    """The store's connection (``execute``, ``executemany``, ``close``): a ``sqlite3`` error
    becomes a one-line :class:`StoreError` naming ``path`` (misuse, ``ProgrammingError``, is a bug
    and is left as it is). ``deadline`` (a :class:`~redline.store.trust.Deadline`) bounds each
    read step."""

    def __init__(self, connection: sqlite3.Connection, path: str | os.PathLike, deadline: Any = None) -> None:
        self.raw = connection
        self.path = path
        self.deadline = deadline if deadline is not None else _NoDeadline()

    def execute(self, sql: str, parameters: Any = ()) -> _GuardedCursor:
        action = _action(sql)
        if action == "read":
            self.deadline.start()
        else:
            self.deadline.stop()
        with _guarded(self.path, action):
            return _GuardedCursor(self.raw.execute(sql, parameters), self.path, action, self.deadline)

    def executemany(self, sql: str, rows: Iterable[Any]) -> None:
        self.deadline.stop()
        with _guarded(self.path, "write to"):
            self.raw.executemany(sql, rows)

    def close(self) -> None:
        self.raw.close()


def check_integrity(connection: sqlite3.Connection, path: str | os.PathLike) -> None:
    """Raise :class:`StoreDamaged` when ``PRAGMA quick_check`` finds the store at ``path``
    damaged (or cannot read it to the end); other SQLite errors become :class:`StoreError`."""
    with _guarded(path, "read"):
        rows = connection.execute("PRAGMA quick_check(3)").fetchall()
    problems = [str(row[0]) for row in rows if row and row[0] != "ok"]
    if problems:
        detail = "; ".join(" ".join(p.split()) for p in problems)[:200]
        raise StoreDamaged(damaged_message(path, f"quick_check: {detail}"))
