"""The store refuses to write what it would refuse to read back, so one long spec cannot hide the runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from redline.detectors import MAX_SPEC_CHARS, DetectorSpecError, check_detector_spec
from redline.store import Store, StoreError
from redline.store.rows import MAX_NAME_CHARS


def test_a_run_with_a_model_spec_too_long_to_read_back_is_refused_and_the_store_stays_listable(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        kept = store.create_run("test.echo", {})
        store.release_run(kept)
        with pytest.raises(StoreError, match=r"model spec is 5,012 characters long"):
            store.create_run("test.repeat:" + "x" * 5000, {})
        assert [run.run_id for run in store.list_runs()] == [kept]


def test_a_detector_spec_too_long_to_store_as_a_detector_name_is_refused_without_being_repeated() -> None:
    spec = "llm-harm:test.repeat:" + "[[1]]" * 2000
    with pytest.raises(DetectorSpecError, match=r"is 10,021 characters long") as caught:
        check_detector_spec(spec)
    assert len(str(caught.value)) < 200
    assert MAX_SPEC_CHARS <= MAX_NAME_CHARS


def test_a_store_path_that_is_a_pipe_or_a_folder_is_refused_before_sqlite_writes_beside_it(tmp_path: Path) -> None:
    fifo = tmp_path / "store.db"
    os.mkfifo(fifo)
    with pytest.raises(StoreError, match=r"it is not a regular file \(a device, FIFO or socket\)$"):
        Store(fifo)
    with pytest.raises(StoreError, match=r"it is a folder$"):
        Store(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]  # no journal left beside it
