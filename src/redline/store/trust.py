"""A store file is untrusted input: it is checked to be one redline made before it is used.

A store may come from someone else (a file mailed by a colleague, a run resumed on another
machine). SQLite runs what the file's schema holds: a view stands in for a table and its query
runs when the table is read, a trigger runs when a row is written. So before a connection is used:

* :func:`harden` turns ``trusted_schema`` off (no function with side effects runs from the
  schema), bounds the length of any one value (:data:`MAX_VALUE_BYTES`; a larger one cannot be
  read or written) and installs a :class:`Deadline`: a read step that runs longer than
  :data:`READ_DEADLINE` seconds inside SQLite is stopped;
* :func:`check_schema` refuses a file whose schema holds anything but the tables and indexes of
  :data:`redline.store.schema.SCHEMA`, defined exactly as redline defines them (a table written by
  an earlier version may lack a column of :data:`~redline.store.schema.ADDED_COLUMNS`): no view, no
  trigger, no other table or index. A missing table is no problem: it is created, empty.

A file refused is :class:`StoreRefused`, one line naming the file and what it holds.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import sqlite3
import time

from redline.store.errors import StoreError
from redline.store.schema import ADDED_COLUMNS, SCHEMA

__all__ = [
    "MAX_VALUE_BYTES",
    "READ_DEADLINE",
    "Deadline",
    "StoreRefused",
    "check_schema",
    "harden",
]

#: The longest value (text or blob) a store connection reads or writes, in bytes.
MAX_VALUE_BYTES = 256 * 2**20

#: Seconds SQLite may work on one read step (a statement's next row) before it is stopped.
READ_DEADLINE = 60.0

#: SQLite virtual-machine steps between two looks at the clock.
_STEPS_PER_CHECK = 100_000


class StoreRefused(StoreError):
    """The file is a SQLite database but not a store redline made (a view, a trigger, a table
    defined otherwise...): it is not used."""


class Deadline:
    """The time budget of the read step running on a connection, checked by SQLite's progress
    handler: :meth:`start` before a read step, :meth:`stop` before a write (a write may wait
    for another process's lock and is not bounded here)."""

    __slots__ = ("budget", "until")

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.until = math.inf

    def start(self) -> None:
        self.until = time.monotonic() + self.budget

    def stop(self) -> None:
        self.until = math.inf

    def expired(self) -> int:
        """1 (stop the statement) once the budget is spent, else 0: SQLite's progress handler."""
        return 1 if time.monotonic() > self.until else 0


def harden(connection: sqlite3.Connection, budget: float | None = None) -> Deadline:
    """Prepare ``connection`` for a file that may be hostile (see the module doc) and return the
    :class:`Deadline` its reads run under (``budget`` seconds, :data:`READ_DEADLINE` by default)."""
    connection.execute("PRAGMA trusted_schema=OFF")
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    deadline = Deadline(READ_DEADLINE if budget is None else budget)
    connection.set_progress_handler(deadline.expired, _STEPS_PER_CHECK)
    return deadline


# -- the schema ------------------------------------------------------------------------------------
_SPACE = re.compile(r"[ \t\n\r\f]+")
#: Text that could hide a clause from the comparison: comments and quoted identifiers.
_HIDING = ("--", "/*", '"', "`", "[")


def _shape(sql: str | None) -> tuple[str, ...] | None:
    """The statement ``sql`` as its head and its top-level clauses, white space collapsed
    (``("CREATE TABLE t", "a TEXT", "PRIMARY KEY (a)")``); ``()`` for no statement (an
    automatic index) and ``None`` for text that cannot be compared safely."""
    if sql is None:
        return ()
    text = _SPACE.sub(" ", sql).strip()
    if any(mark in text for mark in _HIDING) or not text.endswith(")") or "(" not in text:
        return None
    head, body = text[: text.index("(")].strip(), text[text.index("(") + 1 : -1]
    clauses, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(body):
        if char == "'":
            quoted = not quoted
        elif quoted:
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            clauses.append(body[start:i].strip())
            start = i + 1
    if quoted or depth:
        return None
    clauses.append(body[start:].strip())
    return (head, *clauses)


@functools.cache
def _expected() -> dict[tuple[str, str, str], frozenset[tuple[str, ...]]]:
    """``(type, name, table) -> shapes`` of every object :data:`SCHEMA` makes, with the shapes
    of the same table written before columns of :data:`ADDED_COLUMNS` existed."""
    model = sqlite3.connect(":memory:")
    try:
        model.executescript(SCHEMA)
        rows = model.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    finally:
        model.close()
    expected: dict[tuple[str, str, str], frozenset[tuple[str, ...]]] = {}
    for kind, name, table, sql in rows:
        shape = _shape(sql)
        if shape is None:  # a change to SCHEMA this module cannot compare: a bug, caught by the tests
            raise RuntimeError(f"redline's own schema cannot be compared: {sql}")
        added = [f"{column} {declaration}" for t, column, declaration in ADDED_COLUMNS if t == name]
        shapes = {shape}
        for count in range(1, len(added) + 1):
            for missing in itertools.combinations(added, count):
                shapes.add(tuple(clause for clause in shape if clause not in missing))
        expected[(kind, name, table)] = frozenset(shapes)
    return expected


def check_schema(connection: sqlite3.Connection, path: str | os.PathLike) -> None:
    """Raise :class:`StoreRefused` when the schema of the database on ``connection`` holds
    anything :data:`SCHEMA` does not make, or defines one of its tables otherwise (``sqlite3``
    errors, a file that is no database, are left to the caller)."""
    expected = _expected()
    for kind, name, table, sql in connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"):
        shapes = expected.get((kind, name, table))
        if shapes is not None and _shape(sql) in shapes:
            continue
        raise StoreRefused(f"refusing store {path}: {_what(kind, name, table, shapes is not None)}")


def _what(kind: object, name: object, table: object, known: bool) -> str:
    """What is wrong with the schema object ``kind`` ``name`` (on ``table``), in words."""
    label = f"{kind} {str(name)[:80]!r}"
    if known:
        where = f"its {label} is not defined as redline defines it"
    elif kind == "trigger":
        where = f"it holds a trigger {str(name)[:80]!r} on {str(table)[:80]!r} (redline makes no triggers)"
    elif kind == "view":
        where = f"it holds a view {str(name)[:80]!r} (redline makes no views)"
    else:
        where = f"it holds a {label} that redline does not make"
    return f"{where}; it is not a store redline made, or it was changed since"
