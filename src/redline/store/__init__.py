"""Persistent storage of runs and attempts (embedded SQLite)."""

from redline.store.sqlite import (
    RUN_COMPLETE,
    RUN_INTERRUPTED,
    RUN_RUNNING,
    RunNotFound,
    Store,
    StoreError,
)

__all__ = ["RUN_COMPLETE", "RUN_INTERRUPTED", "RUN_RUNNING", "RunNotFound", "Store", "StoreError"]
