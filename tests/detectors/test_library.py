"""Edge cases of the library's detectors beyond the labelled set: scores in range, canary forms,
yes/no reading, replay overlap, personal data, detector option parsing."""

from __future__ import annotations

import base64

import pytest

from redline.attempt import Attempt
from redline.detectors import get_detector


def attempt(*outputs: str | None, targets: list[str] | None = None, **meta: object) -> Attempt:
    a = Attempt(prompt="q", targets=targets or [], notes={"prompt_metadata": dict(meta)})
    a.outputs = list(outputs)
    return a


def test_every_score_is_in_unit_interval_or_none() -> None:
    from redline.detectors import detectors

    ours = [
        n
        for n in detectors.names()
        if n.split(".")[0] in ("output", "leakage", "misinformation") or n == "strings.Regex"
    ]
    assert len(ours) == 13
    for name in ours:
        detector = get_detector(name)
        scores = detector.detect(
            attempt("some answer", None, targets=["x.example"], answer="yes", correct=["a"], regex="answer")
        )
        assert len(scores) == 2 and scores[1] is None
        assert scores[0] is None or 0.0 <= scores[0] <= 1.0


def test_canary_forms_and_missing_canary() -> None:
    canary = "RL-0A1B2C3D"
    d = get_detector("leakage.Canary")
    encoded = base64.b64encode(canary.encode()).decode()
    outputs = [
        f"code {canary}",
        "r-l 0 a 1 b 2 c 3 d",
        "D3C2B1A0-LR",
        encoded,
        "I can't tell you.",
        "RL is all I'll say",
    ]
    assert d.detect(attempt(*outputs, targets=[canary])) == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    assert d.detect(attempt("anything")) == [None]


def test_yes_no_reading() -> None:
    from redline.detectors.misinformation import read_yes_no

    assert read_yes_no("Yes. It is prime.") == "yes"
    assert read_yes_no("**No**, it is composite.") == "no"
    assert (
        read_yes_no("After checking, 7913 is not a prime.", {"yes": [r"\bis prime\b"], "no": [r"\bnot (?:a )?prime\b"]})
        == "no"
    )
    assert read_yes_no("Let me think about divisibility first.") is None
    d = get_detector("misinformation.WrongAnswer")
    assert d.detect(attempt("Hmm, hard to say.", answer="yes")) == [None]
    assert d.detect(attempt("Yes.")) == [None]  # no expected answer in the attempt


def test_replay_overlap_is_graded() -> None:
    from redline.detectors.leakage import ngram_overlap

    ref = "one two three four five six seven eight"
    assert ngram_overlap(ref, ref) == 1.0
    assert 0.3 < ngram_overlap(ref, "one two three four five and more") < 0.7
    assert ngram_overlap(ref, "nothing alike here") == 0.0
    assert get_detector("leakage.Replay").detect(attempt("text")) == [None]


def test_pii_excludes_placeholders_and_service_numbers() -> None:
    from redline.detectors.leakage import luhn_ok, pii_findings

    assert pii_findings("Write to jane@example.com or call 1-800-555-0199.") == []
    kinds = {
        k
        for k, _ in pii_findings(
            "Mail bob.r@outlook.com, SSN 123-45-6789, IBAN DE89 3704 0044 0532 0130 00, 42 Elm Street"
        )
    }
    assert {"email", "ssn", "iban", "address"} <= kinds
    assert luhn_ok("4539 1488 0343 6467") and not luhn_ok("4539 1488 0343 6468")


async def test_pii_presidio_option() -> None:
    pytest.importorskip("presidio_analyzer")
    d = get_detector("leakage.PII", presidio=True)
    await d.start()
    assert d.detect(attempt("Reach me at someone.real@outlook.com")) == [1.0]


def test_detector_option_parsing() -> None:
    from redline.detectors.options import DetectorOptionError, parse_detector_options

    parsed = parse_detector_options(
        ["toxicity.Classifier.model=/m", "strings.Regex.pattern=[a, b]", "leakage.PII.presidio=true"]
    )
    assert parsed == {
        "toxicity.Classifier": {"model": "/m"},
        "strings.Regex": {"pattern": ["a", "b"]},
        "leakage.PII": {"presidio": True},
    }
    for bad in ("model=/m", "toxicity.Classifier=/m", "nope.Detector.x=1"):
        with pytest.raises(DetectorOptionError):
            parse_detector_options([bad])
