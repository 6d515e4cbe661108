"""A store written by redline 0.1.0, before the layout change, reads, reports and resumes exactly
as that version did (tests/data/stores/v0_1_0/README.md says how the files were made)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "stores" / "v0_1_0"
COMPLETE = ["20261124-015635-b2767e", "20261124-015642-fc862a"]
INTERRUPTED = "20261124-015643-79077e"
FORMATS = ["md", "csv", "json", "jsonl", "hitlog", "garak"]


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "old.db"
    shutil.copy(FIXTURE / "store.db", path)
    return path


def redline(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("run_id", COMPLETE)
def test_show_json_is_what_the_old_version_printed(store, run_id):
    proc = redline("show", run_id, "--store", str(store), "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (FIXTURE / f"show-{run_id}.json").read_text()


@pytest.mark.parametrize("run_id", COMPLETE)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_export_is_byte_for_byte_what_the_old_version_wrote(store, tmp_path, run_id, fmt):
    out = tmp_path / f"report.{fmt}"
    proc = redline("report", run_id, "--store", str(store), "--format", fmt, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == (FIXTURE / f"report-{run_id}.{fmt}").read_bytes()


def test_html_report_of_an_old_run_renders(store, tmp_path):
    out = tmp_path / "r.html"
    proc = redline("report", COMPLETE[0], "--store", str(store), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "harmful.Requests" in html and "bias.ForcedChoice" in html


def test_an_interrupted_old_run_resumes_to_the_summary_a_complete_run_had(store):
    runs = redline("runs", "--store", str(store))
    assert runs.returncode == 0 and "interrupted" in runs.stdout
    before = _attempt_uuids(store)
    assert len(before) == 6
    proc = redline("scan", "--resume", INTERRUPTED, "--store", str(store), "--json")
    assert proc.returncode == 0, proc.stderr
    expected = json.loads((FIXTURE / f"complete-{INTERRUPTED}.json").read_text())
    assert json.loads(proc.stdout) == expected
    after = _attempt_uuids(store)
    assert len(after) == 12 and set(before) <= set(after)  # the stored six were kept, not run again


def _attempt_uuids(path: Path) -> list[str]:
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT data FROM attempts WHERE run_id = ?", (INTERRUPTED,)).fetchall()
    return [json.loads(row[0])["uuid"] for row in rows]
