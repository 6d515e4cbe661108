"""``redline scan`` reports failure rates corrected for judge error: the run records its
detectors' versions, ``--json`` carries ``corrected_rate`` for ``refusal.Compliance`` when the
class ships a validation of that version, a validation saved in the store takes precedence, and
``--fail-above`` gates on the corrected rate. The model is ``test.repeat`` (one fixed answer);
the expected corrections are computed from the run's own counts."""

from __future__ import annotations

import json

import pytest

from redline.cli.main import main
from redline.detectors import Validation
from redline.detectors.refusal import Compliance
from redline.evaluation.statistics import rogan_gladen
from redline.store import Store, ValidationRecord

ANSWER = "Sure. Step 1: gather the materials. Step 2: mix them in a bowl. Step 3: wait an hour, then use it."
SHIPPED = Validation("shipped-set", tp=45, fp=5, fn=5, tn=45)
#: harmful.Requests judged by the compliance judge alone, whose correction these tests follow
SCAN = [
    "scan", "-m", f"test.repeat:{ANSWER}", "-p", "harmful.Requests", "--sample", "4",
    "--probe-opt", "harmful.Requests.detectors=[refusal.Compliance]",
]  # fmt: skip


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """``run_cli(*args)`` → (exit status, stdout, stderr) of ``redline ARGS`` in this process."""
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)
    monkeypatch.delenv("REDLINE_STORE", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("REDLINE_HEARTBEAT", "0")

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main([str(a) for a in args])
        captured = capsys.readouterr()
        return int(exit_info.value.code or 0), captured.out, captured.err

    return run


def test_scan_json_carries_the_rate_corrected_with_the_shipped_validation(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(Compliance, "validation", SHIPPED)
    db = tmp_path / "r.db"
    code, out, err = run_cli(*SCAN, "--store", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    probe = summary["probes"][0]
    assert probe["judge"] == "refusal.Compliance"
    assert probe["judge_validation"] == "shipped validation on shipped-set"
    assert (probe["sensitivity"], probe["specificity"]) == (0.9, 0.9)
    expected = rogan_gladen(probe["failed"], probe["outputs"], tp=45, fn=5, tn=45, fp=5)
    assert probe["corrected_rate"] == round(expected.value, 6)
    assert probe["corrected_ci95"] == [round(x, 6) for x in expected.ci95]
    assert (probe["reviewed"], probe["review_errors"], probe["correction_note"]) == (0, 0, None)
    with Store(db) as store:  # phase 4 recorded the version of the detector that scored the probe
        result = store.probe_results(summary["run_id"])["harmful.Requests"]
        assert result.detector_versions == {"refusal.Compliance": Compliance.version}

    # a validation saved for this version comes first; the gate compares the corrected rate
    with Store(db) as store:
        store.save_validation(ValidationRecord("refusal.Compliance", Compliance.version, "mine.jsonl", 9, 1, 1, 9))
    code, out, err = run_cli("show", summary["run_id"], "--store", db, "--json", "--fail-above", "0")
    probe = json.loads(out)["probes"][0]
    assert probe["judge_validation"].startswith("saved validation on mine.jsonl (")
    assert probe["corrected_rate"] == round(
        rogan_gladen(probe["failed"], probe["outputs"], tp=9, fn=1, tn=9, fp=1).value, 6
    )
    # the answer complies step by step: every output failed, (1 - 0.1) / 0.8 clipped to 100%
    assert (probe["failed"], probe["corrected_rate"]) == (4, 1.0)
    assert code == 3
    assert (
        "gate failed: harmful.Requests: failure rate corrected for judge error 100.0% > 0.0% (observed 100.0%)" in err
    )


def test_a_judge_without_validation_is_said_in_the_json_and_the_notes(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(Compliance, "validation", None)
    monkeypatch.setenv("COLUMNS", "80")
    db = tmp_path / "r.db"
    code, out, err = run_cli(*SCAN, "--store", db, "--json")
    assert code == 0, err
    probe = json.loads(out)["probes"][0]
    assert (probe["judge"], probe["judge_validation"], probe["corrected_rate"]) == ("refusal.Compliance", None, None)
    assert probe["correction_note"] == "judge not validated"
    code, out, err = run_cli("show", json.loads(out)["run_id"], "--store", db)
    assert code == 0, err
    assert "refusal.Compliance not validated: its failure rates are not corrected" in " ".join(out.split())


def test_a_shipped_validation_of_another_version_is_not_used(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(Compliance, "validation", SHIPPED)
    db = tmp_path / "r.db"
    code, out, err = run_cli(*SCAN, "--store", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["probes"][0]["corrected_rate"] is not None  # corrected while the version matched
    monkeypatch.setattr(Compliance, "version", Compliance.version + "-next")  # the judge changed since
    code, out, err = run_cli("show", summary["run_id"], "--store", db, "--json")
    assert code == 0, err
    probe = json.loads(out)["probes"][0]
    assert (probe["corrected_rate"], probe["correction_note"]) == (None, "judge not validated")
