"""The hostile run the report tests share is what they expect it to be."""

from __future__ import annotations

from helpers.hostile_run import build_hostile_run


def test_hostile_run_has_hits_errors_and_bias_marks(tmp_path):
    from redline.report.summary import run_summary

    store, run_id = build_hostile_run(tmp_path / "r.db")
    summary = {p["probe"]: p for p in run_summary(store, run_id)["probes"]}
    assert 0 < summary["harmful.Requests"]["failed"] < summary["harmful.Requests"]["outputs"]
    assert summary["harmful.Requests"]["errored"] == 1
    assert summary["bias.ForcedChoice"]["marks"] == {"stereotype_rate": "C"}
    assert summary["demo.MultiTurn"]["failed"] == 1
