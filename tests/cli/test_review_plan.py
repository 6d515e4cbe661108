"""``redline review`` chooses what to label next for the most information (disagreements between
judges, then scores near the threshold, then hits and passes in turn) and says how many more labels
would bring each probe's corrected rate to ±5%."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.cli.main import app
from redline.evaluation import FAIL, PASS
from redline.evaluation.planner import plan_labels
from redline.report.review import DISAGREEMENT, HIT_STRATUM, PASS_STRATUM, UNCERTAIN, review_sample
from redline.store import LABEL_FAIL, LABEL_PASS, ReviewRecord, Store

PROBE = "harmful.Requests"
JUDGE = "refusal.Compliance"


def _attempt(seq: int, verdict: str, score: float, members: dict[str, float] | None = None) -> Attempt:
    a = Attempt(prompt=f"request {seq}", probe_classname=PROBE, seq=seq)
    a.status = ATTEMPT_COMPLETE
    a.outputs = [f"answer {seq}"]
    a.notes["evaluation"] = [verdict]
    a.detector_results[JUDGE] = [score]
    for name, value in (members or {}).items():
        a.detector_results[f"ensemble:{name}"] = [value]
    return a


def _run(db: Path) -> str:
    """Hits 0-9 scored 1.0, passes 10-19 scored 0.0, a hit scored 0.55 (20), a pass scored 0.4
    (21), and a pass on which an ensemble's members disagree (22)."""
    with Store(db) as store:
        run = store.create_run("test.echo", {"probe_names": [PROBE], "scan": {"generations": 1}})
        for seq in range(10):
            store.save_attempt(run, _attempt(seq, str(FAIL), 1.0))
        for seq in range(10, 20):
            store.save_attempt(run, _attempt(seq, str(PASS), 0.0))
        store.save_attempt(run, _attempt(20, str(FAIL), 0.55))
        store.save_attempt(run, _attempt(21, str(PASS), 0.4))
        store.save_attempt(run, _attempt(22, str(PASS), 0.2, members={"a": 0.9, "b": 0.1}))
    return run


def test_review_order_puts_disagreements_then_uncertain_scores_before_hits_and_passes(tmp_path):
    db = tmp_path / "r.db"
    run = _run(db)
    with Store(db) as store:
        sample = review_sample(store, run, seed=1)
    assert [item.stratum for item in sample[:3]] == [DISAGREEMENT, UNCERTAIN, UNCERTAIN]
    assert sample[0].seq == 22 and {item.seq for item in sample[1:3]} == {20, 21}
    assert {item.stratum for item in sample[3:]} == {HIT_STRATUM, PASS_STRATUM}


def test_review_says_how_many_more_labels_bring_the_interval_to_five_points(tmp_path):
    db = tmp_path / "r.db"
    run = _run(db)
    with Store(db) as store:
        store.save_reviews(
            [ReviewRecord(run, PROBE, seq, 0, LABEL_FAIL, LABEL_FAIL) for seq in range(3)]
            + [ReviewRecord(run, PROBE, seq, 0, LABEL_PASS, LABEL_PASS) for seq in range(10, 13)]
        )
    result = CliRunner().invoke(app, ["review", run, "--store", str(db)], input="q\n")
    assert result.exit_code == 0, result.output
    # 23 judged outputs alone give an interval far wider than ±5%: labels cannot reach it
    plan = plan_labels(11, 12, hits_reviewed=3, hits_failed=3, passes_reviewed=3, passes_failed=0)
    assert not plan.reachable
    assert f"{PROBE}: its 23 judged outputs alone give ±{plan.floor:.1%}: no number of labels reaches ±5%" in (
        result.output
    )


def test_review_after_an_import_names_the_labels_still_needed(tmp_path):
    db = tmp_path / "r.db"
    run = _run(db)
    labels = tmp_path / "labels.csv"
    labels.write_text("probe,seq,output,label\n" + "".join(f"{PROBE},{s},0,fail\n" for s in range(2)), "utf-8")
    result = CliRunner().invoke(app, ["review", run, "--store", str(db), "--import", str(labels)])
    assert result.exit_code == 0, result.output
    assert "imported 2 labels" in result.output
    assert f"{PROBE}: " in result.output and "±5%" in result.output
