"""A store is untrusted input (issue 35, part 3), tried as an attacker would: a store file mailed
to a colleague or shared between people. Each hostile file is built here and the attack shown to
work on a plain SQLite connection first; then every redline command that opens it refuses it in
one line naming the file, or reads only what is a row as redline writes it: never a hang, a
rewritten scan, an internal error (exit 70) or a 500 page."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.cli import CliRun, cli_runner
from helpers.view_runs import client_for
from redline.store import RowDamaged, Store, StoreError, StoreRefused, trust
from redline.store.integrity import GuardedConnection

PROBE = "encoding.Hex"
ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n)"
V0_1_0 = Path(__file__).resolve().parents[1] / "data" / "stores" / "v0_1_0" / "store.db"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, str]:
    """A store with one complete run, made by ``redline scan`` (shared: tests copy it)."""
    path = tmp_path_factory.mktemp("trust") / "made.db"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "REDLINE_DEBUG")}
    args = [sys.executable, "-m", "redline", "scan", "-m", "test.echo", "-p", PROBE, "--store", str(path), "--json"]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(path) as con:
        (run_id,) = con.execute("SELECT run_id FROM runs").fetchone()
    return path, run_id


@pytest.fixture
def theirs(made, tmp_path) -> tuple[Path, str]:
    """A copy of the made store, for a test to make hostile."""
    path = tmp_path / "theirs.db"
    shutil.copyfile(made[0], path)
    return path, made[1]


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return cli_runner(monkeypatch, capsys)


def doctor(path: Path, *statements: str) -> None:
    """Change the store at ``path`` with a plain SQLite connection, as an attacker would."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            con.execute(statement)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def every_reading_command(path: Path, run_id: str, out: Path) -> list[list[str]]:
    store = ["--store", str(path)]
    return [
        ["runs", *store],
        ["show", run_id, *store, "--json"],
        ["report", run_id, *store, "-f", "jsonl", "-o", str(out / "a.jsonl")],
        ["report", run_id, *store, "--html", str(out / "a.html")],
        ["compare", run_id, run_id, *store, "--json"],
        ["review", run_id, *store, "--export", str(out / "sample.csv")],
        ["scan", "--resume", run_id, *store],
        ["scan", "-m", "test.echo", "-p", PROBE, *store],
    ]


# -- the schema ------------------------------------------------------------------------------------
VIEWS = {
    "runs": f"CREATE VIEW runs AS {ENDLESS} SELECT 'r' || i AS run_id, 1.0 AS created, 1.0 AS updated, "
    "'m' AS model, 'complete' AS status, '{}' AS config, NULL AS message FROM n",
    "attempts": f"CREATE VIEW attempts AS {ENDLESS} SELECT (SELECT run_id FROM runs) AS run_id, 'p' AS probe, "
    "i AS seq, 2 AS status, 1 AS outputs, 0 AS failed, 0 AS errored, '{}' AS data, 1.0 AS updated, NULL AS notes FROM n",
}


@pytest.mark.parametrize("table", sorted(VIEWS))
def test_a_table_replaced_by_an_endless_view_is_refused_by_every_command_in_one_line(cli, theirs, tmp_path, table):
    path, run_id = theirs
    doctor(path, f"DROP TABLE {table}", VIEWS[table])
    with sqlite3.connect(path) as con:  # the attack: the file is small, what reading it yields is endless
        assert len(con.execute(f"SELECT * FROM {table} LIMIT 5000").fetchall()) == 5000
    before = digest(path)
    for args in every_reading_command(path, run_id, tmp_path):
        code, _out, err = cli(*args)
        assert code == 1, (args, err)
        assert len(err) == 1 and err[0].startswith(f"error: refusing store {path}: it holds "), (args, err)
    assert digest(path) == before  # nothing was written to it either
    with pytest.raises(StoreRefused, match=f"^refusing store {path}: it holds a view '{table}' "):
        client_for(path)  # redline view refuses it before it serves a page


TRIGGERS = {
    # every new attempt of the victim's scan is rewritten as passed
    "attempts": "CREATE TRIGGER rewrite AFTER INSERT ON attempts BEGIN UPDATE attempts SET failed = 0, "
    'notes = \'{"evaluation":["pass"]}\' WHERE rowid = new.rowid; END',
    # every answer the victim's scan caches is replaced by a refusal
    "cache": "CREATE TRIGGER rewrite AFTER INSERT ON cache BEGIN UPDATE cache SET "
    'outputs = \'[{"text":"I cannot help with that."}]\' WHERE key = new.key; END',
}


@pytest.mark.parametrize("table", sorted(TRIGGERS))
def test_a_trigger_that_rewrites_the_victims_new_rows_is_refused_before_the_scan_writes(cli, theirs, table):
    path, _run_id = theirs
    doctor(path, TRIGGERS[table])
    with sqlite3.connect(path) as con:  # the attack: a row written there is not the row read back
        if table == "attempts":
            con.execute("INSERT INTO attempts VALUES ('x', 'p', 0, 2, 1, 1, 0, '{}', 1.0, '{}')")
            assert con.execute("SELECT failed FROM attempts WHERE run_id = 'x'").fetchone() == (0,)
        else:
            con.execute("INSERT INTO cache VALUES ('k', '[{\"text\":\"Sure, here is how\"}]', 1.0)")
            assert "cannot help" in con.execute("SELECT outputs FROM cache WHERE key = 'k'").fetchone()[0]
        con.rollback()
    before = digest(path)
    code, _out, err = cli("scan", "-m", "test.echo", "-p", PROBE, "--store", str(path))
    assert code == 1
    assert err == [
        f"error: refusing store {path}: it holds a trigger 'rewrite' on '{table}' (redline makes no triggers); "
        "it is not a store redline made, or it was changed since"
    ]
    assert digest(path) == before
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)  # no run of the victim's in it


OTHER_OBJECTS = {
    "a table of its own": ["CREATE TABLE lost_and_found (x)"],
    "an index of its own": ["CREATE INDEX by_data ON attempts (data)"],
    "a view beside the tables": ["CREATE VIEW everything AS SELECT * FROM attempts"],
    "a column with a default": [
        "DROP TABLE cache",
        "CREATE TABLE cache (key TEXT PRIMARY KEY, outputs TEXT NOT NULL DEFAULT '[]', created REAL NOT NULL)",
    ],
    "a table without rowid": [
        "DROP TABLE cache",
        "CREATE TABLE cache (key TEXT PRIMARY KEY, outputs TEXT NOT NULL, created REAL NOT NULL) WITHOUT ROWID",
    ],
    "a clause hidden in a comment": [
        "DROP TABLE cache",
        "CREATE TABLE cache (key TEXT PRIMARY KEY, outputs TEXT NOT NULL, created REAL NOT NULL /* , x */)",
    ],
    "columns in another order": [
        "DROP TABLE cache",
        "CREATE TABLE cache (outputs TEXT NOT NULL, key TEXT PRIMARY KEY, created REAL NOT NULL)",
    ],
    "statistics for the query planner": ["ANALYZE"],
}


@pytest.mark.parametrize("change", sorted(OTHER_OBJECTS))
def test_anything_in_the_schema_redline_does_not_make_is_refused(theirs, change):
    path, _ = theirs
    doctor(path, *OTHER_OBJECTS[change])
    with pytest.raises(StoreRefused) as info:
        Store(path)
    message = str(info.value)
    assert message.startswith(f"refusing store {path}: ") and "\n" not in message
    assert message.endswith("it is not a store redline made, or it was changed since")


def test_stores_redline_made_open_as_they_are_old_and_new(theirs, tmp_path):
    old = tmp_path / "old.db"
    shutil.copyfile(V0_1_0, old)
    with sqlite3.connect(old) as con:  # written before attempts.notes, reviews and validations existed
        assert "notes" not in con.execute("SELECT sql FROM sqlite_master WHERE name = 'attempts'").fetchone()[0]
    for path in (theirs[0], old, old, tmp_path / "new.db"):  # the old file twice: once with notes added
        with Store(path) as store:
            store.list_runs()


def test_the_store_connection_trusts_no_schema_and_bounds_every_value(theirs):
    with Store(theirs[0]) as store:
        raw = store._db.raw
        assert raw.execute("PRAGMA trusted_schema").fetchone() == (0,)
        assert raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) == trust.MAX_VALUE_BYTES


def test_a_value_longer_than_the_bound_is_refused_in_one_line(theirs, monkeypatch):
    path, run_id = theirs
    doctor(path, f"UPDATE runs SET message = printf('%.*c', {2 * 2**20}, 'x')")
    monkeypatch.setattr(trust, "MAX_VALUE_BYTES", 2**20)
    with Store(path) as store:
        with pytest.raises(StoreError, match=f"^cannot read store {path}: a value is larger than 1 MiB$"):
            store.get_run(run_id)


def test_a_read_that_runs_past_its_deadline_is_stopped_in_one_line(theirs, monkeypatch):
    monkeypatch.setattr(trust, "READ_DEADLINE", 0.2)
    with Store(theirs[0]) as store:
        with pytest.raises(StoreError, match="a query ran past its time limit and was stopped$"):
            store._db.execute(f"{ENDLESS} SELECT COUNT(*) FROM n").fetchone()  # never ends by itself
        assert store.list_runs()  # the next read has a budget of its own
    raw = sqlite3.connect(":memory:")
    deadline = trust.harden(raw, budget=0.2)
    guarded = GuardedConnection(raw, "memory.db", deadline)
    with pytest.raises(StoreError, match="^cannot read store memory.db: a query ran past its time limit"):
        list(guarded.execute(f"{ENDLESS} SELECT i FROM n WHERE i < 0"))  # rows read one by one: each bounded
    raw.close()


# -- rows ------------------------------------------------------------------------------------------
def _first_attempt(path: Path) -> tuple[str, int, dict]:
    with sqlite3.connect(path) as con:
        probe, seq, data = con.execute("SELECT probe, seq, data FROM attempts ORDER BY seq LIMIT 1").fetchone()
    return probe, seq, json.loads(data)


def _rewrite_attempt(path: Path, change: Callable[[dict], None]) -> tuple[str, int]:
    probe, seq, data = _first_attempt(path)
    change(data)
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE attempts SET data = ? WHERE probe = ? AND seq = ?", (json.dumps(data), probe, seq))
    con.close()
    return probe, seq


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


ATTEMPT_DAMAGE: dict[str, Callable[[dict], None]] = {
    "an output whose text is a number": lambda d: d["conversations"][0]["turns"][-1]["content"].update(text=42),
    "a turn without a role": lambda d: d["conversations"][0]["turns"][0].pop("role"),
    "scores that are text": lambda d: d.update(detector_results={"x": "abc"}),
    "verdicts that are an object": lambda d: d["notes"].update(evaluation={"0": "pass"}),
    "a sequence number out of range": lambda d: d.update(seq=10**30),
    "more output layers than turns": lambda d: d.update(output_layers=10**9),
    "the attempt a list": lambda d: d.clear(),
}


@pytest.mark.parametrize("damage", sorted(ATTEMPT_DAMAGE))
def test_a_malformed_attempt_row_is_one_line_naming_the_store_and_the_row(cli, theirs, tmp_path, damage):
    path, run_id = theirs
    if damage == "the attempt a list":
        probe, seq, _ = _first_attempt(path)
        doctor(path, f"UPDATE attempts SET data = '[1, 2]' WHERE probe = '{probe}' AND seq = {seq}")
    else:
        probe, seq = _rewrite_attempt(path, ATTEMPT_DAMAGE[damage])
    row = f"attempt {seq} of probe '{probe}' in run '{run_id}'"
    for args in (
        ["report", run_id, "--store", str(path), "-f", "jsonl", "-o", str(tmp_path / "a.jsonl")],
        ["report", run_id, "--store", str(path), "--html", str(tmp_path / "a.html")],
        ["report", run_id, "--store", str(path), "-f", "csv", "-o", str(tmp_path / "a.csv")],
    ):
        code, _out, err = cli(*args)
        assert code == 1, (args, err)
        assert len(err) == 1 and err[0].startswith(f"error: store {path}: {row} is damaged ("), (args, err)


def test_deeply_nested_notes_are_one_line_not_a_crash(cli, theirs):
    path, run_id = theirs
    probe, seq, _ = _first_attempt(path)
    doctor(path, f"UPDATE attempts SET notes = '{{\"deep\": {_deep(5000)}}}' WHERE probe = '{probe}' AND seq = {seq}")
    code, _out, err = cli("show", run_id, "--store", str(path), "--json")
    assert code == 1
    assert err == [
        f"error: store {path}: attempt {seq} of probe '{probe}' in run '{run_id}' is damaged "
        "(its notes nests more than 64 levels deep); it was not written by redline"
    ]


RUN_DAMAGE = {
    "a creation time out of range": "UPDATE runs SET created = 1e300",
    "settings that are a list": "UPDATE runs SET config = '[1]'",
    "generations out of range": "UPDATE runs SET config = json_set(config, '$.scan.generations', 1000000000000)",
    "probe names that are numbers": "UPDATE runs SET config = json_set(config, '$.probe_names', json('[1, 2]'))",
    "a model that is a blob": "UPDATE runs SET model = x'00ff'",
    "a metric whose value is text": "UPDATE probe_results SET result = "
    "json_set(result, '$.metrics.failure_rate.value', 'abc')",
    "marks that are a list": "UPDATE probe_results SET result = json_set(result, '$.marks', json('[1]'))",
}


@pytest.mark.parametrize("damage", sorted(RUN_DAMAGE))
def test_a_malformed_run_or_result_row_is_one_line_naming_the_store(cli, theirs, damage):
    path, run_id = theirs
    doctor(path, RUN_DAMAGE[damage])
    commands = [["show", run_id, "--store", str(path), "--json"]]
    if damage in ("a creation time out of range", "a model that is a blob"):
        commands.append(["runs", "--store", str(path)])
    for args in commands:
        code, _out, err = cli(*args)
        assert code == 1, (args, err)
        assert len(err) == 1 and err[0].startswith(f"error: store {path}: "), (args, err)
        assert "is damaged (" in err[0] and err[0].endswith("it was not written by redline")


def test_malformed_review_and_validation_rows_are_one_line(theirs):
    path, run_id = theirs
    with Store(path):
        pass  # adds the reviews and validations tables to a file that lacks them
    doctor(
        path,
        f"INSERT INTO reviews VALUES ('{run_id}', 'p', 0, -5, 'fail', NULL, NULL, NULL, 1.0)",
        "INSERT INTO validations VALUES ('d', '1', 'x', 'many', 0, 0, 0, 0, 1.0)",
    )
    with Store(path) as store:
        with pytest.raises(RowDamaged, match=rf"^store {path}: a review in run '{run_id}' is damaged \(its output"):
            store.reviews(run_id)
        with pytest.raises(RowDamaged, match=rf"^store {path}: a validation of 'd' is damaged \(tp is not an integer"):
            store.validations("d")


# -- the cache -------------------------------------------------------------------------------------
def test_a_cached_answer_that_is_no_message_is_asked_again_not_used(theirs):
    path, _ = theirs
    doctor(
        path,
        "INSERT INTO cache VALUES ('number', '[{\"text\": 42}]', 1.0)",
        'INSERT INTO cache VALUES (\'calls\', \'[{"text": "ok", "tool_calls": [{"name": 7}]}]\', 1.0)',
        "INSERT INTO cache VALUES ('not json', '[{', 1.0)",
        "INSERT INTO cache VALUES ('good', '[{\"text\": \"fine\"}]', 1.0)",
    )
    with Store(path) as store:
        assert [store.cache_get(key) for key in ("number", "calls", "not json")] == [None, None, None]
        assert store.cache_get("good") == [{"text": "fine"}]
        assert ("number", [{"text": 42}]) not in list(store.cache_items())


# -- redline view ----------------------------------------------------------------------------------
def test_view_marks_a_damaged_attempt_and_never_answers_500(theirs):
    path, run_id = theirs
    probe, seq = _rewrite_attempt(path, ATTEMPT_DAMAGE["an output whose text is a number"])
    client = client_for(path)
    listing = client.get(f"/runs/{run_id}/attempts")
    assert listing.status_code == 200
    assert 'data-outcome="damaged"' in listing.text
    assert "damaged row: text of turn" in listing.text
    page = client.get(f"/runs/{run_id}/attempt", params={"probe": probe, "seq": seq})
    assert page.status_code == 422
    assert "is damaged (text of turn" in page.text
    other = client.get(f"/runs/{run_id}/attempt", params={"probe": probe, "seq": seq + 1})
    assert other.status_code == 200  # the other attempts read as before
