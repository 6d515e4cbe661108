"""toxicity.Classifier with a tiny classifier built in tmp_path, its one-line failure when the
model is missing, --detector-opt and --skip-unavailable ("not measured", never a silent 0)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import build_tiny_classifier
from redline.attempt import Attempt
from redline.detectors import DetectorUnavailable, get_detector

pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("REDLINE_TOXICITY_MODEL", raising=False)


@pytest.fixture(scope="module")
def toxic_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_classifier(tmp_path_factory.mktemp("tox") / "toxic", ["non-toxic", "toxic"], favour=1)


@pytest.fixture(scope="module")
def clean_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_classifier(tmp_path_factory.mktemp("tox") / "clean", ["neutral", "toxic"], favour=0)


def _attempt(*texts: str | None) -> Attempt:
    attempt = Attempt(prompt="say something")
    attempt.outputs = list(texts)
    return attempt


async def test_scores_are_the_toxic_probability(toxic_model: Path, clean_model: Path) -> None:
    toxic = get_detector("toxicity.Classifier", model=str(toxic_model))
    await toxic.start()
    scores = toxic.detect(_attempt("you are an idiot", None, "nice day"))
    assert scores[1] is None and scores[0] > 0.99 and scores[2] > 0.99
    clean = get_detector("toxicity.Classifier", model=str(clean_model))
    await clean.start()
    assert all(s < 0.01 for s in clean.detect(_attempt("you are an idiot", "nice day")))


async def test_environment_variable_names_the_model(toxic_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDLINE_TOXICITY_MODEL", str(toxic_model))
    detector = get_detector("toxicity.Classifier")
    assert detector.model == str(toxic_model)
    await detector.start()
    assert detector.detect(_attempt("you are an idiot"))[0] > 0.99


async def test_missing_model_is_one_clear_line(tmp_path: Path) -> None:
    for model in (None, str(tmp_path / "no-such-model")):
        detector = get_detector("toxicity.Classifier", **({"model": model} if model else {}))
        with pytest.raises(DetectorUnavailable) as info:
            await detector.start()
        message = str(info.value)
        assert "\n" not in message
        assert (model or "s-nlp/roberta_toxicity_classifier") in message
        assert "--detector-opt toxicity.Classifier.model=PATH" in message and "REDLINE_TOXICITY_MODEL" in message


def _scan(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "1"}
    env.pop("REDLINE_TOXICITY_MODEL", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "redline",
            "scan",
            "-m",
            "test.echo",
            "--store",
            str(tmp_path / "s.db"),
            "--sample",
            "3",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_scan_stops_with_one_line_when_the_classifier_is_missing(tmp_path: Path) -> None:
    proc = _scan(tmp_path, "--probes", "toxicity,harmful.Requests")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "toxicity.Classifier" in errors[0] and "s-nlp/roberta_toxicity_classifier" in errors[0]
    assert "Traceback" not in proc.stderr


def test_skip_unavailable_marks_probes_not_measured(tmp_path: Path) -> None:
    proc = _scan(tmp_path, "--probes", "toxicity,harmful.Requests", "--skip-unavailable", "--json")
    assert proc.returncode == 0, proc.stderr
    probes = {p["probe"]: p for p in json.loads(proc.stdout)["probes"]}
    for name in ("toxicity.Continuation", "toxicity.Insult"):
        assert probes[name]["attempts"] == 0 and probes[name]["failure_rate"] is None
        assert "toxicity.Classifier" in probes[name]["not_measured"]
    assert probes["harmful.Requests"]["attempts"] == 3 and "not_measured" not in probes["harmful.Requests"]
    table = subprocess.run(
        [sys.executable, "-m", "redline", "show", json.loads(proc.stdout)["run_id"], "--store", str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "not measured" in table.stdout


def test_detector_opt_points_to_a_local_model(tmp_path: Path, toxic_model: Path) -> None:
    proc = _scan(
        tmp_path, "--probes", "toxicity.Insult", "--json", "--detector-opt", f"toxicity.Classifier.model={toxic_model}"
    )
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(proc.stdout)["probes"][0]
    assert entry["attempts"] == 3 and entry["failure_rate"] == 1.0  # the tiny model calls everything toxic


def test_bad_detector_options_are_one_line(tmp_path: Path, toxic_model: Path) -> None:
    proc = _scan(tmp_path, "--probes", "toxicity.Insult", "--detector-opt", f"toxicity.Classifier.modell={toxic_model}")
    assert proc.returncode == 1 and "bad --detector-opt" in proc.stderr and "Traceback" not in proc.stderr
    proc = _scan(tmp_path, "--probes", "toxicity.Insult", "--detector-opt", "toxicity.Classifer.model=x")
    assert proc.returncode == 1 and "did you mean toxicity.Classifier" in proc.stderr
    proc = _scan(tmp_path, "--probes", "toxicity.Insult", "--detector-opt", "nonsense")
    assert proc.returncode == 1 and "DETECTOR.KEY=VALUE" in proc.stderr
