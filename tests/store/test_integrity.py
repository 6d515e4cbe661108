"""A damaged store (redline.store.integrity): every SQLite error is one StoreError line naming the
file and what to do, and a scan checks the store before it writes, so it never writes into one."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from pathlib import Path

import pytest

from redline.attempt import Attempt, Conversation, Message, Turn
from redline.engine import ScanConfig, scan
from redline.store import Store, StoreDamaged, StoreError
from redline.store.integrity import GuardedConnection, check_integrity

PAGE = 4096


def make_attempt(seq: int, output: str = "ok") -> Attempt:
    attempt = Attempt(
        prompt=Conversation(turns=[Turn("user", Message(f"prompt {seq}"))]), probe_classname="p.A", seq=seq
    )
    attempt.outputs = [Message(output)]
    return attempt


def damaged_store(path: Path, attempts: int = 150) -> str:
    """A store with one run of ``attempts`` attempts whose middle page is overwritten with bytes
    that are no b-tree page (the header, page 1, is intact: the file still opens)."""
    with Store(path) as store:
        run_id = store.create_run("m", {})
        for seq in range(attempts):
            store.save_attempt(run_id, make_attempt(seq, "x" * 400))
        store.release_run(run_id)
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        assert con.execute("PRAGMA page_size").fetchone()[0] == PAGE and pages > 20
    with open(path, "r+b") as f:
        f.seek(pages // 2 * PAGE)
        f.write(bytes(range(256)) * (PAGE // 256))
    return run_id


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_read_of_a_damaged_store_is_one_store_error_naming_the_file_and_the_remedy(tmp_path):
    db = tmp_path / "hurt.db"
    run_id = damaged_store(db)
    with Store(db) as store:
        for read in (
            store.list_runs,
            lambda: list(store.iter_attempts(run_id)),
            lambda: store.attempt_counts(run_id),
            store.check_integrity,
        ):
            with pytest.raises(StoreDamaged) as info:
                read()
            message = str(info.value)
            assert "\n" not in message
            assert message.startswith(f"store {db} is damaged (")
            assert f"'sqlite3 {db} .recover | sqlite3 recovered.db'" in message and "another --store" in message
    assert issubclass(StoreDamaged, StoreError)


def test_a_file_that_is_not_a_database_cannot_be_opened_as_a_store(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"no sqlite here " * 400)
    with pytest.raises(StoreDamaged, match=rf"^cannot open store {junk}: file is not a database \(a damaged store"):
        Store(junk)


def test_a_scan_checks_the_store_and_never_writes_into_a_damaged_one(tmp_path):
    db = tmp_path / "hurt.db"
    run_id = damaged_store(db)
    before = digest(db)
    for resume in (None, run_id):
        with Store(db) as store:
            config = ScanConfig(model="test.echo", probes="encoding.Hex") if resume is None else None
            with pytest.raises(StoreDamaged, match="is damaged"):
                asyncio.run(scan(config, store, resume=resume))
        assert digest(db) == before
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1  # no run was added


def test_a_sound_store_passes_the_check(tmp_path):
    with Store(tmp_path / "ok.db") as store:
        run_id = store.create_run("m", {})
        store.save_attempt(run_id, make_attempt(0))
        store.check_integrity()


def test_problems_quick_check_reports_as_rows_are_named(tmp_path):
    class Answers:
        def execute(self, sql):
            assert sql.startswith("PRAGMA quick_check")
            return self

        def fetchall(self):
            return [("*** in database main ***\nPage 7: btreeInitPage() returns error code 11",)]

    with pytest.raises(StoreDamaged, match=r"is damaged \(quick_check: \*\*\* in database main \*\*\* Page 7: btree"):
        check_integrity(Answers(), tmp_path / "x.db")  # type: ignore[arg-type]


def test_other_sqlite_errors_are_one_line_too(tmp_path):
    path = tmp_path / "busy.db"
    with Store(path) as store:
        store.create_run("m", {})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing, for longer than we wait
    guarded = GuardedConnection(sqlite3.connect(path, timeout=0, isolation_level=None), path)
    try:
        with pytest.raises(StoreError, match=rf"^cannot write to store {path}: database is locked$"):
            guarded.execute("UPDATE runs SET status = 'x'")
        assert guarded.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)  # reading still works (WAL)
        with pytest.raises(sqlite3.ProgrammingError):  # misuse is a bug, left as it is
            guarded.execute("SELECT ?", ())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        guarded.close()
