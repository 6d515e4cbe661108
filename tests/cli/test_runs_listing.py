"""``redline runs`` over a store with damaged run rows: the other runs are still listed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers.cli import CliRun, cli_runner
from redline.store import Store


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    return cli_runner(monkeypatch, capsys)


def store_with_damaged_runs(path: Path, damaged: int) -> tuple[str, list[str]]:
    """A store with one readable run and ``damaged`` runs whose creation time is not a time."""
    with Store(path) as store:
        good = store.create_run("test.echo", {})
        bad = [store.create_run("test.echo", {}) for _ in range(damaged)]
        for run_id in (good, *bad):
            store.release_run(run_id)
    con = sqlite3.connect(path)
    with con:
        con.executemany("UPDATE runs SET created = 'yesterday' WHERE run_id = ?", [(b,) for b in bad])
    con.close()
    return good, bad


def test_runs_lists_the_readable_runs_marks_a_damaged_one_and_exits_1(cli, tmp_path):
    db = tmp_path / "s.db"
    good, (bad,) = store_with_damaged_runs(db, 1)
    code, out, err = cli("runs", "--store", str(db))
    assert code == 1
    assert good in out and "interrupted" in out
    (line,) = [row for row in out.splitlines() if bad in row]
    assert "damaged (its creation time is not a time)" in line
    assert err == [
        f"error: store {db}: run '{bad}' is damaged (its creation time is not a time); it was not written by redline"
    ]
    code, out, err = cli("runs", "--store", str(db), "--json")
    assert code == 1 and len(err) == 1
    assert json.loads(out) == [
        {"run_id": bad, "status": "damaged", "problem": "its creation time is not a time"},
        {**json.loads(out)[1], "run_id": good, "model": "test.echo"},
    ]


def test_runs_counts_several_damaged_runs_in_one_line(cli, tmp_path):
    db = tmp_path / "s.db"
    good, bad = store_with_damaged_runs(db, 3)
    code, out, err = cli("runs", "--store", str(db), "--json")
    assert code == 1
    listed = json.loads(out)
    assert [r["status"] for r in listed] == ["damaged", "damaged", "damaged", "interrupted"]
    assert {r["run_id"] for r in listed[:3]} == set(bad) and listed[-1]["run_id"] == good
    assert len(err) == 1 and err[0].startswith(f"error: store {db}: 3 runs are damaged (run ")
    assert err[0].endswith("listed as damaged); they were not written by redline")


def test_runs_of_a_store_without_damage_exits_0_with_nothing_on_stderr(cli, tmp_path):
    db = tmp_path / "s.db"
    good, _ = store_with_damaged_runs(db, 0)
    code, out, err = cli("runs", "--store", str(db), "--json")
    assert (code, err) == (0, [])
    assert [r["run_id"] for r in json.loads(out)] == [good]
