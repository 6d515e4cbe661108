"""Run locks (redline.store.locks): a scan holds its run's lock; a second scan of the run is refused,
naming the process; a run stored as running whose lock nobody holds (killed) reads as interrupted."""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

import redline.store.locks as locks
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, RUN_RUNNING, RunLocked, Store, StoreError
from redline.store.locks import acquire, is_held, lock_folder
from redline.store.sqlite import DEAD_RUN_MESSAGE

HOLDER = """
import sys
from redline.store.locks import acquire
lock = acquire(sys.argv[1], sys.argv[2])
print("held", flush=True)
sys.stdin.read()  # hold the lock until stdin closes or the process is killed
"""


@pytest.fixture
def holder(tmp_path):
    """``holder(run_id)`` → a subprocess holding the lock of ``run_id`` in ``tmp_path/runs.db``."""
    procs: list[subprocess.Popen] = []

    def start(run_id: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(tmp_path / "runs.db"), run_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def stored_status(path, run_id) -> str:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]


def no_sleep(seconds: float) -> None:
    raise AssertionError("acquire waited for a lock that a scan holds")


def reader_lock(db, run_id: str) -> int:
    """An open lock file holding the shared lock :func:`is_held` takes for an instant."""
    folder = lock_folder(db)
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / f"{run_id}.lock", os.O_RDWR | os.O_CREAT)
    locks.fcntl.flock(fd, locks.fcntl.LOCK_SH | locks.fcntl.LOCK_NB)
    return fd


def test_a_lock_held_by_another_process_is_refused_naming_it_and_freed_by_kill_9(tmp_path, holder, monkeypatch):
    db = tmp_path / "runs.db"
    proc = holder("r1")
    assert is_held(db, "r1") and not is_held(db, "r2")
    monkeypatch.setattr(locks.time, "sleep", no_sleep)
    with pytest.raises(RunLocked, match=rf"^run r1 is being scanned by process {proc.pid} \(store .*runs\.db\): wait"):
        acquire(db, "r1", patience=60)  # refused at once: only readers are waited for
    assert issubclass(RunLocked, StoreError)
    with acquire(db, "r2"):  # another run of the same store is free
        assert is_held(db, "r2")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not is_held(db, "r1")  # the operating system dropped the lock with the process
    with acquire(db, "r1") as lock:
        assert lock.held and lock.path is not None
        assert lock.path.read_text().strip() == str(os.getpid())


def test_a_second_lock_in_the_same_process_is_refused_too(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    monkeypatch.setattr(locks.time, "sleep", no_sleep)
    with acquire(db, "r1"):
        with pytest.raises(RunLocked, match=f"process {os.getpid()}"):
            acquire(db, "r1", patience=60)


def test_a_reader_looking_at_the_run_is_waited_for_not_mistaken_for_a_scan(tmp_path, monkeypatch):
    db = tmp_path / "runs.db"
    fd = reader_lock(db, "r1")
    assert is_held(db, "r1") is False  # readers share the lock: a reader is no scan
    waits: list[float] = []

    def reader_lets_go(seconds: float) -> None:
        waits.append(seconds)
        os.close(fd)

    monkeypatch.setattr(locks.time, "sleep", reader_lets_go)
    with acquire(db, "r1", patience=60) as lock:
        assert lock.held and len(waits) == 1


def test_a_reader_that_never_lets_go_is_refused_after_the_patience(tmp_path):
    db = tmp_path / "runs.db"
    fd = reader_lock(db, "r1")
    try:
        with pytest.raises(RunLocked, match="run r1 is being scanned by"):
            acquire(db, "r1", patience=0)
    finally:
        os.close(fd)
    with acquire(db, "r1", patience=0) as lock:
        assert lock.held


def test_release_removes_the_lock_file_and_the_empty_folder(tmp_path):
    db = tmp_path / "runs.db"
    first, second = acquire(db, "a"), acquire(db, "b")
    assert sorted(p.name for p in lock_folder(db).iterdir()) == ["a.lock", "b.lock"]
    first.release()
    first.release()  # twice is harmless
    assert [p.name for p in lock_folder(db).iterdir()] == ["b.lock"]
    second.release()
    assert not lock_folder(db).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_run_id_cannot_put_the_lock_file_outside_the_lock_folder(tmp_path):
    db = tmp_path / "runs.db"
    with acquire(db, "../../escape") as lock:
        assert lock.path is not None and lock.path.parent == lock_folder(db)
    assert not (tmp_path.parent / "escape.lock").exists()


def test_a_lock_file_left_by_a_killed_scan_is_reused(tmp_path):
    db = tmp_path / "runs.db"
    folder = lock_folder(db)
    folder.mkdir()
    (folder / "r1.lock").write_text("12345\n")  # what a kill -9 leaves behind: the file, no lock
    assert not is_held(db, "r1")
    with acquire(db, "r1", patience=0) as lock:
        assert lock.path is not None and lock.path.read_text().strip() == str(os.getpid())


# -- through the store ---------------------------------------------------------------------------


def test_the_store_holds_the_lock_of_a_run_it_created_until_released(tmp_path):
    db = tmp_path / "runs.db"
    with Store(db) as store, Store(db) as other:
        run_id = store.create_run("m", {})
        assert store.is_live(run_id) and other.is_live(run_id)
        assert other.get_run(run_id).status == RUN_RUNNING
        with pytest.raises(RunLocked, match=f"run {run_id} is being scanned by process {os.getpid()}"):
            other.claim_run(run_id)
        store.claim_run(run_id)  # its own: nothing happens
        store.release_run(run_id)
        other.claim_run(run_id)
        assert store.get_run(run_id).status == RUN_RUNNING
        other.close()
        assert store.get_run(run_id).status == RUN_INTERRUPTED  # closing released it


def test_a_dead_run_reads_as_interrupted_but_is_stored_unchanged(tmp_path, holder):
    db = tmp_path / "runs.db"
    with Store(db) as store:
        run_id = store.create_run("m", {})
        done = store.create_run("m", {})
        store.set_run_status(done, RUN_COMPLETE)
        store.release_run(run_id)
        store.release_run(done)
    proc = holder(run_id)  # another process scans it
    with Store(db) as store:
        assert store.get_run(run_id).status == RUN_RUNNING
        assert {r.run_id: r.status for r in store.list_runs()} == {run_id: RUN_RUNNING, done: RUN_COMPLETE}
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        run = store.get_run(run_id)
        assert (run.status, run.message) == (RUN_INTERRUPTED, DEAD_RUN_MESSAGE)
        assert run.as_dict()["status"] == RUN_INTERRUPTED
        assert {r.run_id: r.status for r in store.list_runs()} == {run_id: RUN_INTERRUPTED, done: RUN_COMPLETE}
        assert store.get_run(done).status == RUN_COMPLETE
    assert stored_status(db, run_id) == RUN_RUNNING  # derived when read, never written
    with Store(db) as store:
        store.claim_run(run_id)  # a dead run can be taken over
        assert store.get_run(run_id).status == RUN_RUNNING


def test_a_stopped_run_keeps_its_own_message(tmp_path):
    with Store(tmp_path / "runs.db") as store:
        run_id = store.create_run("m", {})
        store.set_run_status(run_id, RUN_INTERRUPTED, "stopped by the user")
        store.release_run(run_id)
        assert (store.get_run(run_id).status, store.get_run(run_id).message) == (RUN_INTERRUPTED, "stopped by the user")


def test_a_file_system_without_locks_scans_unlocked_and_shows_stored_statuses(tmp_path, monkeypatch):
    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(locks.fcntl, "flock", no_locks)
    db = tmp_path / "runs.db"
    lock = acquire(db, "r1")
    assert not lock.held and not lock_folder(db).exists()
    assert is_held(db, "r1") is False  # no lock file at all: nobody scans it
    lock_folder(db).mkdir()
    (lock_folder(db) / "r1.lock").write_text("1\n")
    assert is_held(db, "r1")  # cannot tell: the stored status is shown
