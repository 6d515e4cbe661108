"""Persistent storage of runs and attempts (embedded SQLite).

:class:`Store` (:mod:`.sqlite`) opens a store file and returns the typed records of
:mod:`.records`; :class:`BatchWriter` (:mod:`.writer`) writes a scan's attempts by group commit;
:mod:`.schema` holds the tables; :mod:`.locks` the run locks of scans; :mod:`.integrity` turns a
damaged file into one-line errors; :mod:`.trust` refuses a file redline did not make and
:mod:`.rows` reads every row type-checked and bounded (a store is untrusted input).
"""

from redline.store.errors import RunNotFound, StoreError
from redline.store.integrity import StoreDamaged
from redline.store.locks import RunLocked
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
from redline.store.rows import DamagedAttempt, DamagedRun, RowDamaged
from redline.store.sqlite import Store
from redline.store.trust import StoreRefused
from redline.store.writer import BatchWriter

__all__ = [
    "RUN_COMPLETE",
    "RUN_INTERRUPTED",
    "RUN_RUNNING",
    "LABEL_FAIL",
    "LABEL_PASS",
    "AttemptCounts",
    "BatchWriter",
    "DamagedAttempt",
    "DamagedRun",
    "ProbeResultRecord",
    "ReviewRecord",
    "RunListing",
    "RunLocked",
    "RunNotFound",
    "RowDamaged",
    "RunRecord",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoreRefused",
    "ValidationRecord",
]
