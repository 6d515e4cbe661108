"""Corrections that know their limits: a validation records what its answers look like, and the
summary applies its correction only to runs whose outputs look like them."""

from __future__ import annotations

import json

import pytest

from redline.cli.main import main
from redline.detectors.refusal import COMPLIANCE_VALIDATION, Compliance
from redline.evaluation.statistics import rogan_gladen
from redline.evaluation.support import MAX_OUTSIDE_SHARE, Profile, check_support, describe, shipped_profile
from redline.report.summary import NOT_SUPPORTED

LIKE = "Sure. Step 1: gather the materials. Step 2: mix them in a bowl. Step 3: wait an hour, then use it."
CYRILLIC = "Конечно. Шаг 1: соберите материалы. Шаг 2: смешайте их в миске. Шаг 3: подождите час."
UNLIKE = "Sure, here it is. " + " ".join(f"Step {i}: add it, mix it, use it." for i in range(101))


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """``run_cli(*args)`` → (exit status, stdout, stderr) of ``redline ARGS`` in this process."""
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)
    monkeypatch.delenv("REDLINE_STORE", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("REDLINE_HEARTBEAT", "0")
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main([str(a) for a in args])
        captured = capsys.readouterr()
        return int(exit_info.value.code or 0), captured.out, captured.err

    return run


def _scan(answer: str) -> list[str]:
    """A scan whose rate is the compliance judge's (harmful.Requests judged by it alone)."""
    return [
        "scan", "-m", f"test.repeat:{answer}", "-p", "harmful.Requests", "--sample", "4",
        "--probe-opt", "harmful.Requests.detectors=[refusal.Compliance]",
    ]  # fmt: skip


def test_descriptors_read_length_script_refusal_voices_and_layout():
    assert describe("I'm sorry, but I can't help with that.") == {
        "length": "1-9",
        "script": "latin",
        "refusal": "opening",
        "voices": "plain",
        "layout": "prose",
    }
    jailbreak = "GPT: I'm sorry, I cannot do that.\n\nDAN: Sure!\n1. first\n2. second\n3. third"
    assert describe(jailbreak)["voices"] == "several"
    assert describe(jailbreak)["layout"] == "list"
    assert describe(CYRILLIC)["script"] == "cyrillic"
    assert describe(UNLIKE)["length"] == "800+"
    assert describe(None)["length"] == "empty"
    assert describe("```python\nprint(1)\n```")["layout"] == "code"


def test_outputs_with_values_rare_in_the_validation_lie_outside_its_support():
    profile = Profile.of("mine", [LIKE] * 99 + [CYRILLIC])  # Cyrillic: 1% of the answers, at the bound
    assert profile.share("script", "cyrillic") == 0.01
    assert check_support(profile, [LIKE] * 10).supported
    rare = Profile.of("mine", [LIKE] * 200 + [CYRILLIC])
    check = check_support(rare, [CYRILLIC] * 3 + [LIKE] * 7)
    assert (check.n, check.outside, check.by_descriptor["script"]) == (10, 3, 3)
    assert check.outside_share > MAX_OUTSIDE_SHARE and not check.supported
    assert "3 of 10 outputs (30%)" in check.reason()


def test_an_output_given_many_times_counts_each_time_and_a_missing_one_as_empty():
    profile = Profile.of("mine", [LIKE] * 200)
    check = check_support(profile, [None, "", CYRILLIC, CYRILLIC, LIKE])
    assert (check.n, check.outside) == (5, 4)
    assert check.by_descriptor["length"] == 2  # the missing and the empty output
    assert check.by_descriptor["script"] == 4  # those two have no letters; the Cyrillic ones another script


def test_the_shipped_validation_of_the_compliance_judge_records_its_answers():
    profile = shipped_profile("refusal.Compliance", COMPLIANCE_VALIDATION.dataset)
    assert profile is not None
    assert profile.n == sum((COMPLIANCE_VALIDATION.tp, COMPLIANCE_VALIDATION.fp, COMPLIANCE_VALIDATION.fn)) + (
        COMPLIANCE_VALIDATION.tn + COMPLIANCE_VALIDATION.undetected
    )
    assert shipped_profile("refusal.Compliance", "another dataset") is None


def test_a_run_unlike_the_validation_gets_correction_not_supported_and_its_raw_rate(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(Compliance, "validation", COMPLIANCE_VALIDATION)
    db = tmp_path / "r.db"
    code, out, err = run_cli(*_scan(UNLIKE), "--store", db, "--json")
    assert code == 0, err
    summary = json.loads(out)
    probe = summary["probes"][0]
    assert probe["corrected_rate"] is None and probe["corrected_ci95"] is None
    assert probe["correction_note"].startswith(f"{NOT_SUPPORTED}: 4 of 4 outputs (100%)")
    assert f"redline review {summary['run_id']}" in probe["correction_note"]
    assert probe["failure_rate"] == probe["failed"] / probe["outputs"]
    code, out, err = run_cli("show", summary["run_id"], "--store", db, "--fail-above", "0")
    assert f"not corrected for judge error: {NOT_SUPPORTED}" in " ".join(out.split())
    # the gate compares the raw rate
    assert code == 3
    assert f"harmful.Requests: failure rate {probe['failure_rate']:.1%} > 0.0%" in err


def test_a_run_like_the_validation_gets_the_correction(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(Compliance, "validation", COMPLIANCE_VALIDATION)
    code, out, err = run_cli(*_scan(LIKE), "--store", tmp_path / "r.db", "--json")
    assert code == 0, err
    probe = json.loads(out)["probes"][0]
    v = COMPLIANCE_VALIDATION
    expected = rogan_gladen(probe["failed"], probe["outputs"], tp=v.tp, fn=v.fn, tn=v.tn, fp=v.fp)
    assert probe["corrected_rate"] == round(expected.value, 6)
    assert probe["correction_note"] is None
    assert probe["judge_validation"] == f"shipped validation on {v.dataset}"
