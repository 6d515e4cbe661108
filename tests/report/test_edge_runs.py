"""Reports on runs that are not the happy path: no attempts at all, an interrupted run with a
half-done bias probe and an errored attempt, a finished bias probe whose answers were all
undetected. Every format renders, and nothing is counted as judged that was not."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rich.console import Console

from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.report.exports import export
from redline.report.html import render_report
from redline.report.summary import run_summary
from redline.store import Store

FORMATS = ("json", "jsonl", "csv", "md", "hitlog", "garak")


def _attempt(probe: str, seq: int, output: str, judgment: str, **notes) -> Attempt:
    a = Attempt(prompt=f"prompt {seq} for {probe}", probe_classname=probe, seq=seq)
    a.outputs = [output]
    a.notes["evaluation"] = [judgment]
    a.notes.update(notes)
    a.status = ATTEMPT_COMPLETE
    return a


@pytest.fixture()
def store(tmp_path):
    s = Store(tmp_path / "edge.db")
    yield s
    s.close()


def _empty_run(store: Store) -> str:
    return store.create_run(
        "test.echo", {"probe_names": ["harmful.Requests", "bias.ForcedChoice"], "scan": {"generations": 1}}
    )


def _interrupted_run(store: Store) -> str:
    run_id = store.create_run(
        "test.echo",
        {"probe_names": ["harmful.Requests", "bias.ForcedChoice", "output.XSS"], "scan": {"generations": 1}},
    )
    for seq in range(3):
        a = _attempt("harmful.Requests", seq, "Sure, here is how", "fail")
        a.detector_results["refusal.Compliance"] = [1.0]
        store.save_attempt(run_id, a)
    store.save_attempt(run_id, _attempt("harmful.Requests", 3, "no idea", "undetected"))
    for seq, judgment in enumerate(["male", "female", "equal", "undetected"]):
        store.save_attempt(
            run_id, _attempt("bias.ForcedChoice", seq, "(a)", judgment, prompt_metadata={"a": "male", "b": "female"})
        )
    errored = Attempt(prompt="x", probe_classname="output.XSS", seq=0)
    errored.notes["error"] = "HTTP 500"
    store.save_attempt(run_id, errored)
    store.set_run_status(run_id, "interrupted")
    return run_id


def _render_everything(store: Store, run_id: str) -> dict[str, str]:
    out = {fmt: "".join(export(store, run_id, fmt)) for fmt in FORMATS}
    out["html"] = render_report(store, run_id)
    return out


def test_run_without_attempts_renders_in_every_format(store):
    run_id = _empty_run(store)
    out = _render_everything(store, run_id)
    summary = json.loads(out["json"])
    assert [p["attempts"] for p in summary["probes"]] == [0, 0]
    assert all(p["failure_rate"] is None and p["outputs"] == 0 and not p["complete"] for p in summary["probes"])
    assert out["jsonl"] == "" and out["hitlog"] == ""
    assert list(csv.DictReader(io.StringIO(out["csv"]))) == []
    assert "0 attempts" in out["md"] and "judged outputs failed" not in out["md"]
    assert out["html"].startswith("<!doctype html>") and "no judged outputs" in out["html"]


def test_interrupted_run_counts_only_what_was_judged(store):
    run_id = _interrupted_run(store)
    out = _render_everything(store, run_id)
    probes = {p["probe"]: p for p in run_summary(store, run_id)["probes"]}
    requests, forced, xss = probes["harmful.Requests"], probes["bias.ForcedChoice"], probes["output.XSS"]
    # the undetected output is left out of the rate, as it is once the probe finishes
    assert (requests["outputs"], requests["undetected"], requests["failure_rate"]) == (3, 1, 1.0)
    # a bias probe's answers ("male", "equal"…) are no pass/fail: no made-up 0% failure rate
    assert forced["failure_rate"] is None and forced["ci95"] is None
    assert forced["outputs"] == 3 and forced["undetected"] == 1 and not forced["complete"]
    assert xss["errored"] == 1 and xss["failure_rate"] is None
    assert json.loads(out["json"]) == run_summary(store, run_id)
    assert "**Worst probe: harmful.Requests, 3 of 3 judged outputs failed" in out["md"]
    assert (
        "| harmful.Requests (incomplete) | 4 | 3 | 100.0% | 43.9–100.0% | 0 | 1 output undetected (no verdict, left out of the rate) |"
        in out["md"]
    )
    assert (
        "| bias.ForcedChoice (incomplete) | 4 | – | – | – | 0 | 1 output undetected (no verdict)<br>not finished"
        in out["md"]
    )
    assert len(out["jsonl"].splitlines()) == 9
    assert len(out["hitlog"].splitlines()) == 3
    assert "interrupted" in out["html"]


def test_finished_bias_probe_with_only_undetected_answers_is_not_shown_as_judged(store):
    run_id = store.create_run("test.echo", {"probe_names": ["bias.ForcedChoice"], "scan": {"generations": 1}})
    for seq in range(6):
        store.save_attempt(run_id, _attempt("bias.ForcedChoice", seq, "Yes, I agree.", "undetected"))
    empty = {"value": None, "ci95": None, "n": 0, "undetected": 6, "details": {}}
    store.save_probe_result(
        run_id,
        "bias.ForcedChoice",
        0,
        {
            "metrics": {"stereotype_rate": empty, "order_bias": empty},
            "marks": {
                "stereotype_rate": {
                    "metric": "stereotype_rate",
                    "mark": None,
                    "meaning": "not measured: no judged outputs",
                    "value": None,
                    "ci95": None,
                }
            },
        },
    )
    entry = run_summary(store, run_id)["probes"][0]
    assert entry["outputs"] == 0 and entry["undetected"] == 6
    md = "".join(export(store, run_id, "md"))
    assert "stereotype\\_rate not measured (6 undetected)" in md


def test_compare_table_prints_model_names_literally(store, monkeypatch):
    import redline.cli.report as cli_report
    from redline.report.compare import compare_runs

    a = store.create_run(
        "test.repeat:![x](https://evil.example/p.png) [bold]loud[/bold]", {"probe_names": [], "scan": {}}
    )
    b = store.create_run("test.echo", {"probe_names": [], "scan": {}})
    buffer = io.StringIO()
    monkeypatch.setattr(cli_report, "out_console", Console(file=buffer, width=400, color_system=None))
    cli_report._print_comparison(compare_runs(store, a, store, b))
    printed = buffer.getvalue()
    assert "![x](https://evil.example/p.png)" in printed and "[bold]loud[/bold]" in printed
