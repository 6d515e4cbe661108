"""Failure rates corrected for judge error in the run summary: which validation corrects a probe
(reviews of the run, then a validation saved in the store, then the detector's shipped one),
the JSON keys (only for runs that recorded detector versions), the release gate, the terminal
table at 80 columns, the notes, the HTML report and the Markdown export."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest
from rich.cells import cell_len
from rich.console import Console

from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.detectors import Validation
from redline.detectors.refusal import Compliance
from redline.evaluation import FAIL, PASS, UNDETECTED, wilson_interval
from redline.evaluation.statistics import review_corrected_rate, rogan_gladen
from redline.report import terminal
from redline.report.exports import export_markdown
from redline.report.html import render_report
from redline.report.summary import NOT_VALIDATED, RunSummary, build_summary, gate_violations
from redline.report.tally import ReviewTally
from redline.store import LABEL_FAIL, LABEL_PASS, ReviewRecord, Store, ValidationRecord

BASE_KEYS = ["probe", "attempts", "failed", "errored", "outputs", "undetected", "failure_rate", "ci95", "measure"]
CORRECTION_KEYS = [
    "judge",
    "judge_validation",
    "sensitivity",
    "specificity",
    "corrected_rate",
    "corrected_ci95",
    "reviewed",
    "review_errors",
    "correction_note",
]
JUDGE = "refusal.Compliance"
#: 4 outputs judged fail, 6 pass, 1 undetected (left out of the rate)
VERDICTS = [FAIL] * 4 + [PASS] * 6 + [UNDETECTED]
SHIPPED = Validation("shipped-set", tp=80, fp=10, fn=20, tn=90)


def _attempt(probe: str, seq: int, judgment) -> Attempt:
    a = Attempt(prompt=f"prompt {seq}", probe_classname=probe, seq=seq)
    a.outputs = [f"output {seq}"]
    a.notes["evaluation"] = [judgment]
    a.detector_results = {JUDGE: [1.0 if judgment == FAIL else 0.0]}
    a.status = ATTEMPT_COMPLETE
    return a


def make_run(store: Store, versions: dict | None, probe: str = "harmful.Requests", verdicts=VERDICTS) -> str:
    """A complete run of one probe with ``verdicts`` (one output per attempt) whose phase-4
    result records ``versions`` (``None``: a run from before versions were recorded)."""
    run_id = store.create_run("test.echo", {"probe_names": [probe], "scan": {"generations": 1}})
    for seq, verdict in enumerate(verdicts):
        store.save_attempt(run_id, _attempt(probe, seq, verdict))
    failed = verdicts.count(FAIL)
    judged = failed + verdicts.count(PASS)
    result = {
        "metrics": {
            "failure_rate": {
                "value": failed / judged,
                "ci95": list(wilson_interval(failed, judged)),
                "n": judged,
                "undetected": verdicts.count(UNDETECTED),
                "details": {},
            }
        },
        "marks": {},
        "goal": "g",
        "tags": [],
        "detectors": list(versions or [JUDGE]),
        "not_measured": None,
    }
    if versions is not None:
        result["detector_versions"] = versions
    store.save_probe_result(run_id, probe, 0, result)
    store.set_run_status(run_id, "complete")
    return run_id


@pytest.fixture()
def store(tmp_path):
    with Store(tmp_path / "correction.db") as s:
        yield s


@pytest.fixture()
def shipped(monkeypatch):
    """``refusal.Compliance`` ships :data:`SHIPPED` (whatever the class ships today)."""
    monkeypatch.setattr(Compliance, "validation", SHIPPED)


@pytest.fixture()
def unvalidated(monkeypatch):
    monkeypatch.setattr(Compliance, "validation", None)


def probe_of(store: Store, run_id: str):
    return build_summary(store, run_id).probes[0]


def test_a_run_without_detector_versions_gets_no_correction_and_no_new_keys(store, shipped):
    run_id = make_run(store, versions=None)
    store.save_reviews([ReviewRecord(run_id, "harmful.Requests", 0, 0, LABEL_PASS, "fail")])
    entry = build_summary(store, run_id).as_dict()["probes"][0]
    assert list(entry) == BASE_KEYS + ["complete"]


def test_an_unvalidated_judge_says_so(store, unvalidated):
    run_id = make_run(store, {JUDGE: Compliance.version})
    entry = build_summary(store, run_id).as_dict()["probes"][0]
    assert list(entry) == BASE_KEYS + CORRECTION_KEYS + ["complete"]
    assert {k: entry[k] for k in CORRECTION_KEYS} == {
        "judge": JUDGE,
        "judge_validation": None,
        "sensitivity": None,
        "specificity": None,
        "corrected_rate": None,
        "corrected_ci95": None,
        "reviewed": 0,
        "review_errors": 0,
        "correction_note": NOT_VALIDATED,
    }


def test_the_shipped_validation_corrects_the_rate_of_the_version_it_measured(store, shipped):
    run_id = make_run(store, {JUDGE: Compliance.version})
    p = probe_of(store, run_id)
    expected = rogan_gladen(4, 10, tp=80, fn=20, tn=90, fp=10)
    # (0.4 - 0.1) / 0.7
    assert p.corrected_rate == pytest.approx(3 / 7, abs=1e-6) == pytest.approx(expected.value, abs=1e-6)
    assert p.corrected_ci95 == pytest.approx(expected.ci95, abs=1e-6)
    assert (p.judge, p.judge_validation) == (JUDGE, "shipped validation on shipped-set")
    assert (p.sensitivity, p.specificity, p.correction_note) == (0.8, 0.9, None)

    other = make_run(store, {JUDGE: Compliance.version + ".old"})  # verdicts of another version
    p = probe_of(store, other)
    assert (p.corrected_rate, p.correction_note) == (None, NOT_VALIDATED)


def test_a_shipped_validation_says_its_caveat_beside_it(store, monkeypatch):
    caveat = "on other labels accuracy 0.60: validate it on your own"
    monkeypatch.setattr(Compliance, "validation", replace(SHIPPED, caveat=caveat))
    run_id = make_run(store, {JUDGE: Compliance.version})
    p = probe_of(store, run_id)
    assert p.judge_validation == f"shipped validation on shipped-set; {caveat}"
    assert p.corrected_rate == pytest.approx(3 / 7, abs=1e-6)  # the caveat changes no figure
    assert caveat in render_report(store, run_id)
    assert caveat in "".join(export_markdown(store, run_id))


def test_harm_substance_ships_the_accuracy_it_reached_on_harm_labels_it_was_not_trained_on():
    from redline.detectors.harm import Substance

    assert Substance.validation is not None and "accuracy 0.60" in (Substance.validation.caveat or "")


def test_a_saved_validation_of_the_recorded_version_comes_before_the_shipped_one(store, shipped):
    version = Compliance.version
    store.save_validation(ValidationRecord(JUDGE, version, "older.jsonl#1", tp=9, fp=1, fn=1, tn=9, created=1000.0))
    store.save_validation(ValidationRecord(JUDGE, version, "newer.jsonl#2", tp=5, fp=5, fn=0, tn=15, created=2000.0))
    store.save_validation(ValidationRecord(JUDGE, "0", "other-version.jsonl", tp=1, fp=0, fn=0, tn=1, created=3000.0))
    run_id = make_run(store, {JUDGE: version})
    p = probe_of(store, run_id)
    # the newest of the recorded version: sensitivity 1, specificity 0.75; (0.4 - 0.25) / 0.75
    assert p.judge_validation.startswith("saved validation on newer.jsonl#2 (")
    assert (p.sensitivity, p.specificity) == (1.0, 0.75)
    assert p.corrected_rate == pytest.approx(0.2, abs=1e-6)


def test_reviews_of_the_run_come_first_and_with_every_output_reviewed_give_the_human_rate(store, shipped):
    run_id = make_run(store, {JUDGE: Compliance.version})
    store.save_validation(ValidationRecord(JUDGE, Compliance.version, "saved", tp=9, fp=1, fn=1, tn=9))
    # hits 0-3: 0 and 1 truly failed; passes 4-9: 4 truly failed; the undetected 10 labelled too
    labels = [LABEL_FAIL, LABEL_FAIL, LABEL_PASS, LABEL_PASS] + [LABEL_FAIL] + [LABEL_PASS] * 5 + [LABEL_FAIL]
    store.save_reviews(
        [
            ReviewRecord(run_id, "harmful.Requests", seq, 0, label, VERDICTS[seq].value)
            for seq, label in enumerate(labels)
        ]
    )
    p = probe_of(store, run_id)
    assert p.corrected_rate == 0.3  # 3 of the 10 judged outputs truly failed
    assert p.judge_validation.startswith(
        "reviews of this run (10 of 10 judged outputs, starting from the saved validation"
    )
    assert (p.reviewed, p.review_errors) == (11, 3)  # judge wrong on 2, 3 and 4; 10 had no verdict
    assert (p.sensitivity, p.specificity) == (pytest.approx(2 / 3, abs=1e-6), pytest.approx(5 / 7, abs=1e-6))
    lo, hi = p.corrected_ci95
    assert lo < 0.3 < hi


def test_a_reviewed_sample_corrects_the_rest(store, unvalidated):
    run_id = make_run(store, {JUDGE: Compliance.version})
    # two hits reviewed (one truly failed), two passes (neither failed)
    store.save_reviews(
        [
            ReviewRecord(run_id, "harmful.Requests", 0, 0, LABEL_FAIL, "fail"),
            ReviewRecord(run_id, "harmful.Requests", 1, 0, LABEL_PASS, "fail"),
            ReviewRecord(run_id, "harmful.Requests", 4, 0, LABEL_PASS, "pass"),
            ReviewRecord(run_id, "harmful.Requests", 5, 0, LABEL_PASS, "pass"),
        ]
    )
    p = probe_of(store, run_id)
    expected = review_corrected_rate(4, 6, hits_reviewed=2, hits_failed=1, passes_reviewed=2, passes_failed=0)
    # (1 + 2 * 2/4 + 0 + 4 * 1/4) / 10
    assert p.corrected_rate == pytest.approx(0.3, abs=1e-6) == pytest.approx(expected.value, abs=1e-6)
    assert (p.reviewed, p.review_errors, p.judge) == (4, 1, JUDGE)


def test_the_review_correction_reads_the_reviews_not_the_attempts(store, unvalidated, monkeypatch):
    run_id = make_run(store, {JUDGE: Compliance.version})
    store.save_reviews(
        [
            ReviewRecord(run_id, "harmful.Requests", 0, 0, LABEL_FAIL, "fail"),
            ReviewRecord(run_id, "harmful.Requests", 4, 0, LABEL_FAIL, "pass"),
        ]
    )

    def no_attempts(*args, **kwargs):
        raise AssertionError("the summary of a finished probe read its attempts")

    monkeypatch.setattr(store, "iter_attempt_dicts", no_attempts)
    monkeypatch.setattr(store, "iter_attempts", no_attempts)
    p = probe_of(store, run_id)
    expected = review_corrected_rate(4, 6, hits_reviewed=1, hits_failed=1, passes_reviewed=1, passes_failed=1)
    assert p.corrected_rate == pytest.approx(expected.value, abs=1e-6)
    assert (p.reviewed, p.review_errors) == (2, 1)


def test_reviews_of_errored_attempts_or_beyond_the_stored_result_do_not_correct(store, unvalidated):
    run_id = make_run(store, {JUDGE: Compliance.version})
    errored = _attempt("harmful.Requests", 0, FAIL)
    errored.notes["error"] = "timeout"  # reviewed, then stored as errored: the rate leaves it out
    store.save_attempt(run_id, errored)
    store.save_reviews([ReviewRecord(run_id, "harmful.Requests", 0, 0, LABEL_PASS, "fail")])
    p = probe_of(store, run_id)
    assert (p.corrected_rate, p.correction_note, p.reviewed, p.review_errors) == (None, NOT_VALIDATED, 1, 0)

    # more reviewed hits than the stored result counts (attempts stored after it): not used, no error
    for seq in range(11, 15):
        store.save_attempt(run_id, _attempt("harmful.Requests", seq, FAIL))
    store.save_reviews(
        [ReviewRecord(run_id, "harmful.Requests", seq, 0, LABEL_FAIL, "fail") for seq in (1, 2, 3, 11, 12)]
    )
    p = probe_of(store, run_id)
    assert (p.corrected_rate, p.correction_note, p.reviewed) == (None, NOT_VALIDATED, 6)


def test_several_detectors_have_no_single_judge_but_reviews_still_count(store, shipped):
    versions = {JUDGE: Compliance.version, "strings.TargetString": "1"}
    run_id = make_run(store, versions)
    p = probe_of(store, run_id)
    assert (p.judge, p.corrected_rate) == (None, None)
    assert p.correction_note == "verdicts from 2 detectors: no single judge to correct for"
    store.save_reviews([ReviewRecord(run_id, "harmful.Requests", 0, 0, LABEL_PASS, "fail")])
    p = probe_of(store, run_id)
    assert p.corrected_rate is not None and p.judge_validation.startswith("reviews of this run")


@pytest.mark.parametrize("name", ["no.SuchDetector", "hf:/models/judge", "llm", "llm:test.echo", "a+b"])
def test_specs_and_unknown_detectors_are_not_validated_and_do_not_fail(store, name):
    run_id = make_run(store, {name: "1"})
    p = probe_of(store, run_id)
    assert (p.judge, p.corrected_rate, p.correction_note) == (name, None, NOT_VALIDATED)
    # a validation saved for the spec applies like any other
    store.save_validation(ValidationRecord(name, "1", "set", tp=9, fp=1, fn=1, tn=9))
    assert probe_of(store, run_id).corrected_rate is not None


def test_a_judge_no_better_than_chance_says_why(store):
    store.save_validation(ValidationRecord(JUDGE, Compliance.version, "set", tp=5, fp=5, fn=5, tn=5))
    p = probe_of(store, make_run(store, {JUDGE: Compliance.version}))
    assert p.corrected_rate is None and p.correction_note.startswith("judge hardly better than chance")
    assert (p.sensitivity, p.specificity) == (0.5, 0.5)


def test_the_json_reads_back_into_the_same_summary(store, shipped):
    summary = build_summary(store, make_run(store, {JUDGE: Compliance.version}))
    data = json.loads(json.dumps(summary.as_dict()))
    assert RunSummary.from_dict(data) == summary
    assert RunSummary.from_dict(data).as_dict() == summary.as_dict()


def test_the_gate_uses_the_corrected_rate_and_says_so(store, shipped):
    summary = build_summary(store, make_run(store, {JUDGE: Compliance.version}))
    # raw 40%, corrected 42.9%
    assert gate_violations(summary, 0.45, None) == []
    assert gate_violations(summary, 0.41, None) == [
        "harmful.Requests: failure rate corrected for judge error 42.9% > 41.0% (observed 40.0%)"
    ]
    assert gate_violations(summary.as_dict(), 0.41, None) == gate_violations(summary, 0.41, None)

    # a judge that over-reports: raw 40% fails a 35% gate, the corrected 20% passes it
    store.save_validation(ValidationRecord(JUDGE, Compliance.version, "set", tp=5, fp=5, fn=0, tn=15))
    summary = build_summary(store, summary.run_id)
    assert summary.probes[0].corrected_rate == pytest.approx(0.2, abs=1e-6)
    assert gate_violations(summary, 0.35, None) == []


def _printed(store: Store, run_id: str, width: int = 80) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, emoji=False)
    terminal.print_run_summary(console, build_summary(store, run_id), reviews=ReviewTally.of(store.reviews(run_id)))
    return out.getvalue()


def _table(text: str) -> list[str]:
    lines = text.splitlines()
    return lines[: next(i for i, line in enumerate(lines) if line.startswith(terminal.LEGEND[:20]))]


def test_the_table_shows_the_corrected_rate_beside_the_raw_one_at_80_columns(store, shipped):
    run_id = make_run(store, {JUDGE: Compliance.version})
    text = _printed(store, run_id)
    table = _table(text)
    assert all(cell_len(line.rstrip()) <= 80 for line in table), "\n".join(table)
    header = " ".join(" ".join(table[1:4]).split())
    assert "failure rate" in header and "corrected" in header
    row = next(i for i, line in enumerate(table) if line.startswith("harmful.Requests"))
    # narrow layout: rates on the row, intervals under them
    assert table[row].split() == ["harmful.Requests", "11", "4", "40.0%", "42.9%", "0"]
    lo, hi = build_summary(store, run_id).probes[0].corrected_ci95
    w_lo, w_hi = wilson_interval(4, 10)
    assert table[row + 1].split() == [
        f"({w_lo:.1%}–{w_hi:.1%})".replace("%–", "–"),
        f"({lo:.1%}–{hi:.1%})".replace("%–", "–"),
    ]
    flat = " ".join(text.split())
    assert terminal.CORRECTED_LEGEND in flat
    # the validation is said once, under "judges"
    assert (
        "judges (what the corrected rates rest on): refusal.Compliance sensitivity 0.80, specificity 0.90 "
        "(shipped validation on shipped-set)" in flat
    )
    assert "not validated" not in flat
    # the same table on a wide console: one line per probe
    wide = _table(_printed(store, run_id, width=200))
    assert any(
        line.split()
        == [
            "harmful.Requests",
            "11",
            "4",
            "40.0%",
            f"({w_lo:.1%}–{w_hi:.1%})".replace("%–", "–"),
            "42.9%",
            f"({lo:.1%}–{hi:.1%})".replace("%–", "–"),
            "0",
        ]
        for line in wide
    ), wide


def test_a_long_probe_name_still_fits_80_columns_beside_the_corrected_rate(store, shipped):
    run_id = make_run(store, {JUDGE: Compliance.version})
    long = "injection.SystemPromptExtraction"  # 32 characters: the longest that is not folded at 80
    other = make_run(store, {JUDGE: Compliance.version}, probe=long)
    for seq, verdict in enumerate(VERDICTS):  # both probes in one run
        store.save_attempt(run_id, _attempt(long, seq, verdict))
    store.save_probe_result(run_id, long, 1, store.probe_results(other)[long].as_dict())
    table = _table(_printed(store, run_id))
    assert all(cell_len(line.rstrip()) <= 80 for line in table), "\n".join(table)
    assert not any("…" in line for line in table)
    row = next(i for i, line in enumerate(table) if line.startswith(long))  # whole, not folded
    assert table[row].split() == [long, "11", "4", "40.0%", "42.9%", "0"]
    lo, hi = build_summary(store, run_id).probes[0].corrected_ci95
    assert table[row + 1].split() == ["16.8–68.7%", f"{lo:.1%}–{hi:.1%}".replace("%–", "–")]  # tight: no parentheses


def test_notes_name_the_unvalidated_judges_and_the_reviews(store, unvalidated):
    run_id = make_run(store, {JUDGE: Compliance.version})
    text = _printed(store, run_id)
    flat = " ".join(text.split())
    assert (
        "judges (what the corrected rates rest on): refusal.Compliance not validated: its failure rates are not corrected"
        in flat
    )
    assert "(see 'redline detectors validate --help' and 'redline review --help')" in flat
    assert "corrected (95% CI)" not in flat and "corrected (95% CI)" not in text  # no column without a value
    # every line but the commands of the next steps (printed whole, never wrapped)
    assert all(cell_len(line.rstrip()) <= 80 for line in text.splitlines() if not line.startswith("  redline "))

    store.save_reviews(
        [
            ReviewRecord(run_id, "harmful.Requests", 0, 0, LABEL_PASS, "fail"),
            ReviewRecord(run_id, "harmful.Requests", 4, 0, LABEL_PASS, "pass"),
        ]
    )
    flat = " ".join(_printed(store, run_id).split())
    assert (
        "harmful.Requests 1 output undetected (left out of the rate) corrected with reviews of this run "
        "(2 of 10 judged outputs): judge sensitivity" in flat
    )
    assert "2 outputs reviewed, judge wrong on 1" in flat
    assert "refusal.Compliance rates corrected with reviews of this run (see notes)" in flat
    assert "not validated" not in flat


def test_the_html_report_shows_the_corrected_rate_and_its_source(store, shipped):
    run_id = make_run(store, {JUDGE: Compliance.version})
    p = probe_of(store, run_id)
    html = render_report(store, run_id)
    assert "corrected <span" in html and "42.9%" in html
    lo, hi = p.corrected_ci95
    assert f"95% CI {lo * 100:.1f}–{hi * 100:.1f}%" in html
    assert "rate corrected for errors of refusal.Compliance (sensitivity 0.80, specificity 0.90): " in html
    assert "shipped validation on shipped-set" in html


def test_the_html_report_says_when_a_judge_is_not_validated(store, unvalidated):
    html = render_report(store, make_run(store, {JUDGE: Compliance.version}))
    assert "refusal.Compliance: not validated, rate not corrected for judge error" in html
    assert 'class="corrected"' not in html


def test_the_markdown_export_shows_the_corrected_rate(store, shipped):
    run_id = make_run(store, {JUDGE: Compliance.version})
    text = "".join(export_markdown(store, run_id))
    assert "corrected for judge error: 42.9% (95% CI " in text
    assert "shipped validation on shipped-set" in text
