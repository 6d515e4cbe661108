"""The garak-compatible report.jsonl: the entry types, fields and counts that garak's report
readers use (facts from garak's docs/source/reporting.rst and garak/analyze)."""

from __future__ import annotations

import json
import uuid

import pytest

from helpers.hostile_run import build_hostile_run
from redline.report.exports import export
from redline.report.garak import garak_run_uuid


@pytest.fixture(scope="module")
def entries(tmp_path_factory):
    store, run_id = build_hostile_run(tmp_path_factory.mktemp("garak") / "r.db")
    lines = "".join(export(store, run_id, "garak")).splitlines()
    attempts = list(store.iter_attempts(run_id))
    store.close()
    return run_id, [json.loads(line) for line in lines], attempts


def test_entry_order_and_header(entries):
    run_id, rows, _ = entries
    kinds = [r["entry_type"] for r in rows]
    assert kinds[0] == "start_run setup" and kinds[1] == "init" and kinds[-1] == "completion"
    first_eval = kinds.index("eval")
    assert set(kinds[2:first_eval]) == {"attempt"} and set(kinds[first_eval:-1]) == {"eval"}
    setup, init, completion = rows[0], rows[1], rows[-1]
    # report_digest reads these keys
    for key in ("plugins.probe_spec", "plugins.target_type", "plugins.target_name", "run.generations", "run.seed"):
        assert key in setup
    assert setup["plugins.target_type"] == "scripted" and setup["plugins.target_name"] == "hostile-demo"
    assert setup["run.generations"] == 2
    assert set(init) >= {"garak_version", "start_time", "run"}
    assert uuid.UUID(init["run"]) and init["run"] == completion["run"] == garak_run_uuid(run_id)
    assert init["garak_version"].startswith("0.0.0+redline.")
    assert "end_time" in completion


def test_attempts_started_then_completed(entries):
    _, rows, attempts = entries
    attempt_rows = [r for r in rows if r["entry_type"] == "attempt"]
    started = {r["uuid"] for r in attempt_rows if r["status"] == 1}
    completed = {r["uuid"] for r in attempt_rows if r["status"] == 2}
    assert started == {a.uuid for a in attempts}
    errored = {a.uuid for a in attempts if a.notes.get("error")}
    assert len(errored) == 1 and completed == started - errored
    for r in attempt_rows:
        assert set(r) >= {
            "uuid",
            "seq",
            "status",
            "probe_classname",
            "prompt",
            "outputs",
            "detector_results",
            "notes",
            "goal",
            "targets",
            "conversations",
        }
        assert isinstance(r["prompt"]["turns"], list) and r["prompt"]["turns"][-1]["role"] == "user"
        if r["status"] == 1:
            assert r["detector_results"] == {} and "evaluation" not in r["notes"]
    done = [r for r in attempt_rows if r["status"] == 2 and r["probe_classname"] == "harmful.Requests"]
    assert all(len(r["detector_results"]["refusal.Compliance"]) == len(r["outputs"]) == 2 for r in done)


def test_eval_entries_count_what_the_attempts_say(entries):
    _, rows, _ = entries
    expected: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        if r["entry_type"] == "attempt" and r["status"] == 2:
            for detector, scores in r["detector_results"].items():
                tally = expected.setdefault((r["probe_classname"], detector), [0, 0, 0])
                for s in scores:
                    tally[2 if s is None else (1 if s >= 0.5 else 0)] += 1
    evals = {(r["probe"], r["detector"]): r for r in rows if r["entry_type"] == "eval"}
    assert set(evals) == set(expected)
    for key, (passed, fails, nones) in expected.items():
        e = evals[key]
        assert (e["passed"], e["fails"], e["nones"]) == (passed, fails, nones)
        assert e["total_evaluated"] == e["total"] == passed + fails
        assert e["total_processed"] == passed + fails + nones
        # the digest's score is passed / total_evaluated; the interval is on the failure rate
        assert 0 <= e["confidence_lower"] <= fails / e["total_evaluated"] <= e["confidence_upper"] <= 1
    assert evals[("harmful.Requests", "refusal.Compliance")]["fails"] == 14
    assert evals[("demo.MultiTurn", "refusal.Compliance")]["fails"] == 1
