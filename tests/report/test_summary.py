"""The typed run summary: :func:`build_summary` fields against the JSON of :func:`run_summary`
(keys, order, optional keys present only when they say something), reading the JSON back,
pooled rates, the release gate on both forms, and the shared formatters."""

from __future__ import annotations

import json

import pytest

from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.errors import RedlineError
from redline.evaluation import FAIL, PASS, UNDETECTED, wilson_interval
from redline.report.errors import ReportError
from redline.report.formatting import MISSING, pct, pct_interval
from redline.report.summary import (
    MetricSummary,
    PooledRate,
    ProbeSummary,
    RunSummary,
    build_summary,
    gate_violations,
    run_summary,
)
from redline.store import RUN_INTERRUPTED, RunNotFound, Store

BASE_KEYS = ["probe", "attempts", "failed", "errored", "outputs", "undetected", "failure_rate", "ci95", "measure"]
PROBES = ["harmful.Requests", "bias.ForcedChoice", "toxicity.Insult", "output.XSS", "bias.Decisions", "never.Ran"]


def _attempt(probe: str, seq: int, judgments: list, error: str | None = None) -> Attempt:
    a = Attempt(prompt=f"prompt {seq}", probe_classname=probe, seq=seq)
    a.outputs = [f"output {i}" for i in range(len(judgments))]
    a.notes["evaluation"] = list(judgments)
    if error:
        a.notes["error"] = error
    a.status = ATTEMPT_COMPLETE
    return a


@pytest.fixture()
def store(tmp_path):
    with Store(tmp_path / "summary.db") as s:
        yield s


@pytest.fixture()
def run_id(store):
    """A run with every kind of probe entry: finished with a failure rate, finished bias probe
    with a mark and a missing mark, not measured, unfinished pass/fail, unfinished bias probe
    (answers that are no pass/fail) and a selected probe without any attempt."""
    run_id = store.create_run("test.echo", {"probe_names": PROBES, "scan": {"generations": 2}})
    store.save_attempt(run_id, _attempt("harmful.Requests", 0, [FAIL, PASS]))
    store.save_attempt(run_id, _attempt("harmful.Requests", 1, [FAIL, UNDETECTED]))
    store.save_attempt(run_id, _attempt("harmful.Requests", 2, [], error="HTTP 500"))
    store.save_probe_result(
        run_id,
        "harmful.Requests",
        0,
        {
            "metrics": {
                "failure_rate": {"value": 2 / 3, "ci95": [0.2076596, 0.9385081], "n": 3, "undetected": 1, "details": {}}
            },
            "marks": {},
            "goal": "g",
            "tags": [],
            "detectors": ["refusal.Compliance"],
            "not_measured": None,
        },
    )
    for seq, answer in enumerate(["male", "female", UNDETECTED]):
        store.save_attempt(run_id, _attempt("bias.ForcedChoice", seq, [answer]))
    store.save_probe_result(
        run_id,
        "bias.ForcedChoice",
        1,
        {
            "metrics": {
                "stereotype_rate": {"value": 0.5, "ci95": [0.1, 0.9], "n": 2, "undetected": 1, "details": {}},
                "order_bias": {"value": None, "ci95": None, "n": 0, "undetected": 3, "details": {}},
            },
            "marks": {
                "stereotype_rate": {"metric": "stereotype_rate", "mark": "C", "meaning": "critical"},
                "order_bias": {"metric": "order_bias", "mark": None, "meaning": "not measured: no judged outputs"},
            },
        },
    )
    store.save_probe_result(
        run_id, "toxicity.Insult", 2, {"metrics": {}, "marks": {}, "not_measured": "no classifier installed"}
    )
    store.save_attempt(run_id, _attempt("output.XSS", 0, [FAIL]))
    store.save_attempt(run_id, _attempt("output.XSS", 1, [PASS, PASS, UNDETECTED]))
    store.save_attempt(run_id, _attempt("bias.Decisions", 0, ["yes", "no", UNDETECTED]))
    store.save_attempt(run_id, _attempt("extra.Unlisted", 0, [PASS]))  # stored, not selected: listed last
    store.set_run_status(run_id, RUN_INTERRUPTED, "stopped")
    return run_id


def test_the_json_is_the_typed_summary_as_dict(store, run_id):
    summary = build_summary(store, run_id)
    data = run_summary(store, run_id)
    assert data == summary.as_dict()
    assert list(data) == [
        "run_id",
        "model",
        "status",
        "created",
        "generations",
        "probes",
        "compliance",
        "outcome",
        "attempts",
        "errored",
        "error_reasons",
        "cached",
        "answers",
    ]
    assert (summary.run_id, summary.model, summary.status, summary.generations) == (
        run_id,
        "test.echo",
        RUN_INTERRUPTED,
        2,
    )
    assert summary.created == store.get_run(run_id).created == data["created"]
    assert [p.probe for p in summary.probes] == [*PROBES, "extra.Unlisted"]
    for typed, entry in zip(summary.probes, data["probes"]):
        assert list(entry)[: len(BASE_KEYS)] == BASE_KEYS and list(entry)[-1] == "complete"
        for key in BASE_KEYS[1:6]:
            assert getattr(typed, key) == entry[key]
        assert typed.failure_rate == entry["failure_rate"]
        assert (list(typed.ci95) if typed.ci95 else None) == entry["ci95"]
        assert typed.complete is entry["complete"]
    json.dumps(data)  # JSON-ready: no tuple, enum or record left inside


def test_finished_probe_with_a_failure_rate(store, run_id):
    requests = build_summary(store, run_id).probes[0]
    assert requests == ProbeSummary(
        probe="harmful.Requests",
        attempts=3,
        failed=2,
        errored=1,
        outputs=3,
        undetected=1,
        failure_rate=0.666667,
        ci95=(0.20766, 0.938508),
        complete=True,
    )
    assert requests.is_rated and not requests.is_metrics_only
    entry = requests.as_dict()
    # nothing to say about metrics, marks or measurement: the keys are absent, not empty
    assert not {"metrics", "marks", "mark_notes", "not_measured"} & set(entry)
    assert entry["ci95"] == [0.20766, 0.938508]


def test_finished_bias_probe_has_metrics_marks_and_the_reason_for_a_missing_mark(store, run_id):
    forced = build_summary(store, run_id).probes[1]
    assert forced.metrics == {
        "stereotype_rate": MetricSummary(value=0.5, ci95=(0.1, 0.9), n=2, undetected=1),
        "order_bias": MetricSummary(value=None, ci95=None, n=0, undetected=3),
    }
    assert forced.marks == {"stereotype_rate": "C", "order_bias": None}
    assert forced.mark_notes == {"order_bias": "not measured: no judged outputs"}
    # the answers its evaluator could read count as outputs; failure rate: none, not 0%
    assert (forced.outputs, forced.undetected, forced.failure_rate, forced.ci95) == (2, 1, None, None)
    assert forced.is_metrics_only and not forced.is_rated
    entry = forced.as_dict()
    assert list(entry) == [*BASE_KEYS, "metrics", "marks", "mark_notes", "complete"]
    assert entry["metrics"]["stereotype_rate"] == {"value": 0.5, "ci95": [0.1, 0.9], "n": 2, "undetected": 1}


def test_not_measured_probe(store, run_id):
    insult = build_summary(store, run_id).probes[2]
    assert insult.not_measured == "no classifier installed" and insult.complete
    assert list(insult.as_dict()) == [*BASE_KEYS, "not_measured", "complete"]


def test_unfinished_probes_take_their_rate_from_the_stored_judgments(store, run_id):
    xss, decisions, never, unlisted = build_summary(store, run_id).probes[3:]
    # 1 fail, 2 pass judged; the undetected output is left out of the rate
    assert (xss.outputs, xss.undetected, xss.failed, xss.complete) == (3, 1, 1, False)
    assert xss.failure_rate == round(1 / 3, 6)
    assert xss.ci95 == tuple(round(x, 6) for x in wilson_interval(1, 3))
    # answers that are no pass/fail: outputs, but no made-up failure rate
    assert (decisions.outputs, decisions.undetected, decisions.failure_rate, decisions.ci95) == (2, 1, None, None)
    assert never == ProbeSummary(probe="never.Ran", complete=False)
    assert unlisted.failure_rate == 0.0 and not unlisted.complete
    for p in (xss, decisions, never):
        assert list(p.as_dict()) == [*BASE_KEYS, "complete"]


def test_the_json_reads_back_into_the_same_summary(store, run_id):
    summary = build_summary(store, run_id)
    assert RunSummary.from_dict(summary.as_dict()) == summary
    assert RunSummary.from_dict(json.loads(json.dumps(summary.as_dict()))) == summary


def test_a_partial_json_entry_reads_with_defaults():
    probe = ProbeSummary.from_dict({"probe": "p", "failure_rate": 0.5, "metrics": {"m": {"value": 0.1}}})
    assert (probe.attempts, probe.errored, probe.undetected, probe.complete) == (0, 0, 0, True)
    assert probe.metrics == {"m": MetricSummary(value=0.1)}
    assert (probe.marks, probe.mark_notes, probe.not_measured) == ({}, {}, None)


def test_pooled_rate_counts_only_probes_with_a_failure_rate(store, run_id):
    summary = build_summary(store, run_id)
    pooled = summary.pooled()
    # harmful.Requests 2/3, output.XSS 1/3, extra.Unlisted 0/1; the bias probes' outputs are not judged
    assert (pooled.failed, pooled.outputs) == (3, 7)
    assert pooled.rate == pytest.approx(3 / 7)
    assert pooled.ci95 == wilson_interval(3, 7)
    empty = PooledRate.of([ProbeSummary(probe="bias", outputs=5, metrics={"m": MetricSummary(0.2)})])
    assert (empty.outputs, empty.rate, empty.ci95) == (0, None, None)


def test_gate_reads_the_typed_summary_and_its_json_alike(store, run_id):
    summary = build_summary(store, run_id)
    typed = gate_violations(summary, 0.5, "C")
    assert typed == gate_violations(summary.as_dict(), 0.5, "C")
    assert typed == [
        "harmful.Requests: failure rate 66.7% > 50.0%",
        "bias.ForcedChoice: stereotype_rate mark C (gate: C or worse fails)",
        "toxicity.Insult: not measured (no classifier installed)",
        # unfinished, answers but no pass/fail judgment and no metrics yet: no evidence to pass on
        "bias.Decisions: no judged outputs (0 errored, 1 undetected)",
        f"run {run_id} is interrupted: resume it before gating",
    ]


def test_an_unknown_run_is_not_found(store):
    with pytest.raises(RunNotFound):
        build_summary(store, "nope")


def test_formatters():
    assert pct(None) == MISSING == "–"
    assert pct(0.125) == "12.5%" and pct(1.0) == "100.0%" and pct(0.5, digits=0) == "50%"
    assert pct(None, missing="-") == "-"
    assert pct_interval((0.05, 0.2)) == "5.0–20.0%" and pct_interval([0.0, 1.0], digits=0) == "0–100%"
    assert pct_interval(None) == pct_interval([]) == "–" and pct_interval(None, missing="-") == "-"


def test_report_error_is_a_redline_error():
    assert issubclass(ReportError, RedlineError) and issubclass(ReportError, RuntimeError)
