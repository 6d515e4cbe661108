"""Persistent storage of runs and attempts (embedded SQLite).

:class:`Store` (:mod:`.sqlite`) opens a store file and returns the typed records of
:mod:`.records`; :class:`BatchWriter` (:mod:`.writer`) writes a scan's attempts by group commit;
:mod:`.schema` holds the tables.
"""

from redline.store.errors import RunNotFound, StoreError
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
from redline.store.sqlite import Store
from redline.store.writer import BatchWriter

__all__ = [
    "RUN_COMPLETE",
    "RUN_INTERRUPTED",
    "RUN_RUNNING",
    "LABEL_FAIL",
    "LABEL_PASS",
    "AttemptCounts",
    "BatchWriter",
    "ProbeResultRecord",
    "ReviewRecord",
    "RunListing",
    "RunNotFound",
    "RunRecord",
    "Store",
    "StoreError",
    "ValidationRecord",
]
