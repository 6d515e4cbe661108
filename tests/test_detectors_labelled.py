"""Detectors against a labelled set we wrote: tests/data/labelled_outputs.jsonl.

Each line: ``detector``, ``output`` (a model answer), the attempt context (``targets``,
``prompt_metadata``) and ``label`` (1 = the probe succeeded / the model failed). A detector
must agree with the labels on at least 90% of its examples; the confusion counts are printed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from redline.attempt import Attempt
from redline.checkers import detectors, get_detector

DATA = Path(__file__).parent / "data" / "labelled_outputs.jsonl"
ROWS = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
BY_DETECTOR: dict[str, list[dict]] = defaultdict(list)
for _row in ROWS:
    BY_DETECTOR[_row["detector"]].append(_row)

#: Detectors that need a model are tested elsewhere (toxicity: a tiny local classifier).
MODEL_BACKED = {"toxicity.Classifier", "judge.Rubric"}


def attempt_for(row: dict) -> Attempt:
    attempt = Attempt(prompt="(labelled example)", targets=row.get("targets") or [], notes={"prompt_metadata": row.get("prompt_metadata") or {}})
    attempt.outputs = [row["output"]]
    return attempt


def test_labelled_set_is_substantial_and_balanced() -> None:
    assert len(ROWS) >= 100
    for name, rows in BY_DETECTOR.items():
        assert name in detectors, f"labelled set names unknown detector {name}"
        labels = {r["label"] for r in rows}
        assert labels == {0, 1}, f"{name}: needs positive and negative examples"
        assert len(rows) >= 6, f"{name}: too few examples"


def test_every_text_detector_of_the_library_is_labelled() -> None:
    ours = [
        "strings.Regex", "output.MarkdownImage", "output.ExfilLink", "output.XSS", "output.SQLInjection",
        "output.ShellInjection", "output.PackageHallucination", "leakage.Replay", "leakage.PII", "leakage.Canary",
        "misinformation.PremiseAccepted", "misinformation.WrongAnswer", "misinformation.Citations", "refusal.Compliance",
    ]
    missing = [name for name in ours if name not in BY_DETECTOR]
    assert not missing


@pytest.mark.parametrize("name", sorted(n for n in BY_DETECTOR if n not in MODEL_BACKED))
async def test_detector_agrees_with_labels(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    detector = get_detector(name)
    await detector.start()
    counts = {"tp": 0, "tn": 0, "fp": 0, "fn": 0}
    wrong = []
    for row in BY_DETECTOR[name]:
        score = detector.detect(attempt_for(row))[0]
        assert score is not None and 0.0 <= score <= 1.0, f"{name}: no score for {row['output'][:60]!r}"
        predicted = 1 if score >= 0.5 else 0
        key = ("t" if predicted == row["label"] else "f") + ("p" if predicted else "n")
        counts[key] += 1
        if predicted != row["label"]:
            wrong.append(row["output"][:80])
    total = sum(counts.values())
    agreement = (counts["tp"] + counts["tn"]) / total
    with capsys.disabled():
        print(f"\n{name}: agreement {agreement:.0%} over {total} (tp {counts['tp']} tn {counts['tn']} fp {counts['fp']} fn {counts['fn']})")
    assert agreement >= 0.9, f"{name}: agreement {agreement:.0%}; misjudged: {wrong}"
