"""The store's tables and how a connection is prepared for them.

Tables: ``runs`` (one row per scan: model, settings as JSON, status), ``attempts`` (every
finished or errored attempt as :meth:`Attempt.as_dict` JSON, with its counts and the JSON of its
notes), ``probe_results``
(the phase-4 metrics and marks of each probe, as JSON), ``cache`` (responses keyed by
request, for re-runs), ``reviews`` (a person's label of one judged output: ``fail`` when the
model truly failed, ``pass`` when not, with the judge's verdict at the time) and ``validations``
(a detector's confusion counts on a labelled file, from ``redline detectors validate --save``).

Every statement here is ``CREATE TABLE IF NOT EXISTS``: opening an existing file never alters
its rows; a file written before ``reviews`` and ``validations`` existed gets them, empty, when it
is opened, and a column added since (:data:`ADDED_COLUMNS`: ``attempts.notes``) is added to the
file's table, ``NULL`` in its rows, which are read as before.
"""

from __future__ import annotations

import sqlite3
import time

__all__ = ["ADDED_COLUMNS", "INSERT_ATTEMPT", "SCHEMA", "prepare"]

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
    notes TEXT,
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
CREATE TABLE IF NOT EXISTS reviews (
    run_id TEXT NOT NULL,
    probe TEXT NOT NULL,
    seq INTEGER NOT NULL,
    output INTEGER NOT NULL,
    label TEXT NOT NULL CHECK (label IN ('fail', 'pass')),
    verdict TEXT,
    note TEXT,
    reviewer TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (run_id, probe, seq, output)
);
CREATE TABLE IF NOT EXISTS validations (
    detector TEXT NOT NULL,
    version TEXT NOT NULL,
    dataset TEXT NOT NULL,
    tp INTEGER NOT NULL,
    fp INTEGER NOT NULL,
    fn INTEGER NOT NULL,
    tn INTEGER NOT NULL,
    undetected INTEGER NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (detector, version, dataset)
);
"""

#: Write (or overwrite) one ``attempts`` row, in the column order of :data:`SCHEMA`.
INSERT_ATTEMPT = "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

#: Columns added to a table since the first store files were written, with their declaration:
#: :func:`prepare` adds each one a file lacks. ``attempts.notes`` is the JSON of the attempt's
#: notes (also in ``data``), so that phase 4 and the summary read the notes of many attempts
#: without decoding the rest; ``NULL`` in a row written before it existed.
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (("attempts", "notes", "TEXT"),)


def prepare(db: sqlite3.Connection, patience: float = 30.0) -> None:
    """Put ``db`` in WAL mode with ``synchronous=NORMAL`` and create the tables that are missing.

    Two processes opening a new store at the same moment race for the journal-mode switch, where
    SQLite answers "locked" without waiting: that is retried for up to ``patience`` seconds.
    Any other :class:`sqlite3.Error` (not a database, read-only folder...) is raised."""
    deadline = time.monotonic() + patience
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            _add_columns(db)
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _add_columns(db: sqlite3.Connection) -> None:
    """Add the :data:`ADDED_COLUMNS` a file written by an earlier version lacks (``NULL`` in its
    rows: adding one rewrites no row). Another process adding the same column at the same time
    is no error, nor is a file this process may only read (which it then reads as it is)."""
    for table, column, declaration in ADDED_COLUMNS:
        if any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})")):
            continue
        try:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc) and "readonly" not in str(exc):
                raise
