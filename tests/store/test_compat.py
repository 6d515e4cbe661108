"""A store written by redline 0.1.0, before the layout change, reads, reports and resumes as that
version did: the row exports byte for byte, the summaries (``show --json``, Markdown, JSON) with
everything they held, unchanged, and only additions since (tests/data/stores/v0_1_0/README.md
says how the files were made)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "stores" / "v0_1_0"
COMPLETE = ["20261124-015635-b2767e", "20261124-015642-fc862a"]
INTERRUPTED = "20261124-015643-79077e"


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "old.db"
    shutil.copy(FIXTURE / "store.db", path)
    return path


def redline(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=120)


#: Formats whose old output must come back byte for byte; the summary formats (md, json) may
#: only add: every old key with its value (JSON), every old line in its order (Markdown).
EXACT_FORMATS = ["csv", "jsonl", "hitlog", "garak"]

#: Lines of the old Markdown summary replaced on purpose: its headline pooled the failure rate of
#: unlike probes; the headline now names the worst probe (issue 36).
REPLACED = re.compile(r"^\*\*\d+ of \d+ judged outputs? failed \(.*\)\.\*\*$")


def assert_contains(new: object, old: object, where: str = "$") -> None:
    """``new`` holds everything ``old`` held, unchanged; dictionaries may have gained keys."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        for key, value in old.items():
            assert key in new, f"{where}.{key} is gone"
            assert_contains(new[key], value, f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old)):
            assert_contains(a, b, f"{where}[{i}]")
    else:
        assert new == old, f"{where}: {old!r} became {new!r}"


def assert_lines_kept(new: str, old: str) -> None:
    """Every line of ``old`` is in ``new``, in the same order (sections may have been added)."""
    lines = iter(new.splitlines())
    for line in old.splitlines():
        if REPLACED.match(line):
            assert line not in new.splitlines()  # the pooled headline is gone, not moved
            continue
        assert any(candidate == line for candidate in lines), f"line lost or moved: {line!r}"


@pytest.mark.parametrize("run_id", COMPLETE)
def test_show_json_holds_what_the_old_version_printed(store, run_id):
    proc = redline("show", run_id, "--store", str(store), "--json")
    assert proc.returncode == 0, proc.stderr
    old_text = (FIXTURE / f"show-{run_id}.json").read_text()
    assert_contains(json.loads(proc.stdout), json.loads(old_text))
    # the old keys keep their order: a reader that walks them sees the same document first
    assert list(json.loads(proc.stdout))[: len(json.loads(old_text))] == list(json.loads(old_text))


@pytest.mark.parametrize("run_id", COMPLETE)
@pytest.mark.parametrize("fmt", EXACT_FORMATS)
def test_every_export_is_byte_for_byte_what_the_old_version_wrote(store, tmp_path, run_id, fmt):
    out = tmp_path / f"report.{fmt}"
    proc = redline("report", run_id, "--store", str(store), "--format", fmt, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == (FIXTURE / f"report-{run_id}.{fmt}").read_bytes()


@pytest.mark.parametrize("run_id", COMPLETE)
def test_summary_exports_only_add_to_what_the_old_version_wrote(store, tmp_path, run_id):
    for fmt in ("md", "json"):
        out = tmp_path / f"report.{fmt}"
        proc = redline("report", run_id, "--store", str(store), "--format", fmt, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        old = (FIXTURE / f"report-{run_id}.{fmt}").read_text()
        if fmt == "json":
            assert_contains(json.loads(out.read_text()), json.loads(old))
        else:
            assert_lines_kept(out.read_text(), old)


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
    assert_contains(json.loads(proc.stdout), expected)
    after = _attempt_uuids(store)
    assert len(after) == 12 and set(before) <= set(after)  # the stored six were kept, not run again


def _attempt_uuids(path: Path) -> list[str]:
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT data FROM attempts WHERE run_id = ?", (INTERRUPTED,)).fetchall()
    return [json.loads(row[0])["uuid"] for row in rows]
