"""Stores for the view's tests: the hostile run (built once, copied for each test that writes),
a large run of known shape, and a client of the app over a store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.hostile_run import build_hostile_run
from helpers.view_runs import build_large_run
from redline.store import Store


@pytest.fixture(scope="session")
def hostile_store(tmp_path_factory) -> tuple[Path, str]:
    """The hostile run (:func:`build_hostile_run`), closed: (store file, run id). Read only."""
    path = tmp_path_factory.mktemp("view-hostile") / "hostile.db"
    store, run_id = build_hostile_run(path)
    store.close()
    return path, run_id


@pytest.fixture
def hostile_copy(hostile_store, tmp_path) -> tuple[Path, str]:
    """A copy of the hostile run's store that a test may write to."""
    path, run_id = hostile_store
    copy = tmp_path / "hostile.db"
    shutil.copyfile(path, copy)
    return copy, run_id


@pytest.fixture(scope="session")
def large_store(tmp_path_factory) -> tuple[Path, str]:
    """A complete run of 400 attempts over 4 probes (:func:`build_large_run`). Read only."""
    path = tmp_path_factory.mktemp("view-large") / "large.db"
    store, run_id = build_large_run(path, attempts=400, probes=4)
    store.close()
    return path, run_id


@pytest.fixture
def counted_reads(monkeypatch) -> list[tuple]:
    """The arguments of every ``Store.iter_attempt_entries`` call (the view's reads of attempts)."""
    reads: list[tuple] = []
    original = Store.iter_attempt_entries

    def counted(self, *args, **kwargs):
        reads.append(args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Store, "iter_attempt_entries", counted)
    return reads
