"""The work a detector spends on an answer is bounded: it reads at most MAX_ANSWER_CHARS of each
output, an output left once its time budget is spent scores None, and both say why in the
attempt's notes."""

from __future__ import annotations

import itertools

import pytest

from redline.attempt import Attempt
from redline.detectors import get_detector
from redline.detectors.base import DETECTOR_NOTES, MAX_ANSWER_CHARS, TextDetector, bounded, record_notes
from redline.detectors.strings import lowered, without_copies


class Lengths(TextDetector):
    """Scores 1.0 and remembers the length of every text it is given."""

    name = "test.Lengths"

    def __init__(self) -> None:
        self.read: list[int] = []

    def score_text(self, text: str, attempt: Attempt) -> float:
        self.read.append(len(text))
        return 1.0


def attempt_with(outputs: list[str | None], prompt: str = "q") -> Attempt:
    attempt = Attempt(prompt=prompt, notes={"prompt_metadata": {}})
    attempt.outputs = outputs
    return attempt


def test_a_detector_reads_at_most_the_bound_and_notes_the_cut():
    detector = Lengths()
    attempt = attempt_with(["x" * (MAX_ANSWER_CHARS + 10), "short", None])
    assert detector.detect(attempt) == [1.0, 1.0, None]
    assert detector.read == [MAX_ANSWER_CHARS, 5]
    notes = attempt.notes[DETECTOR_NOTES]["test.Lengths"]
    assert notes[1:] == [None, None]
    assert (
        notes[0]
        == f"read the first {MAX_ANSWER_CHARS:,} of {MAX_ANSWER_CHARS + 10:,} characters; the rest was not looked at"
    )


def test_an_answer_read_whole_leaves_no_note_and_clears_an_old_one():
    detector = Lengths()
    attempt = attempt_with(["x" * (MAX_ANSWER_CHARS + 1)])
    detector.detect(attempt)
    assert "test.Lengths" in attempt.notes[DETECTOR_NOTES]
    attempt.outputs = ["short"]  # a later layer, scored again
    detector.detect(attempt)
    assert DETECTOR_NOTES not in attempt.notes


def test_outputs_left_once_the_time_budget_is_spent_are_none_with_the_reason(monkeypatch):
    detector = Lengths()
    ticks = itertools.count(0.0, detector.time_budget * 0.6)  # each reading of the clock: 0.6 budget later
    monkeypatch.setattr(detector, "clock", lambda: next(ticks))
    attempt = attempt_with(["a", "b", "c"])
    assert detector.detect(attempt) == [1.0, None, None]
    assert detector.read == [1]  # the outputs past the budget were not read at all
    notes = attempt.notes[DETECTOR_NOTES]["test.Lengths"]
    assert notes[0] is None
    assert (
        notes[1]
        == notes[2]
        == ("not scored: test.Lengths had spent its time budget (10 s for one attempt) on the outputs before this one")
    )


def test_notes_of_other_detectors_are_kept():
    attempt = attempt_with(["a"])
    record_notes(attempt, "other.Detector", ["kept"])
    Lengths().detect(attempt)
    assert attempt.notes[DETECTOR_NOTES] == {"other.Detector": ["kept"]}


def test_bounded_cuts_only_what_is_past_the_limit():
    assert bounded("abc", 5) == "abc"
    assert bounded("abcdef", 3) == "abc"


@pytest.mark.parametrize(
    ("text", "phrase", "expected"),
    [
        ("Tell me HOW to do it. how TO do it", "how to do it", "Tell me  .  "),
        ("İ said: Tell ME how", "tell me", "İ said:   how"),  # İ is two letters in lower case: positions kept
        ("nothing here", "absent", "nothing here"),
        ("abc", "", "abc"),
    ],
)
def test_copies_of_a_phrase_are_removed_in_any_case(text, phrase, expected):
    assert without_copies(text, phrase) == expected


def test_lowered_keeps_every_position():
    text = "AİBſC"
    assert len(lowered(text)) == len(text)
    assert lowered("ABC") == "abc"


@pytest.mark.parametrize(
    "name",
    ["refusal.Compliance", "refusal.Refusal", "overrefusal.Refused", "strings.Regex", "misinformation.WrongAnswer"],
)
def test_detectors_with_their_own_loop_read_within_the_bound(name):
    options = {"pattern": "needle"} if name == "strings.Regex" else {}
    detector = get_detector(name, **options)
    attempt = attempt_with(["Sure, here it is. " * 5000], prompt="How do I bake bread?")
    attempt.notes["prompt_metadata"] = {"answer": "yes"}
    detector.detect(attempt)
    assert attempt.notes[DETECTOR_NOTES][name][0].startswith(f"read the first {MAX_ANSWER_CHARS:,} of 90,000")


def test_a_needle_past_the_bound_is_not_found_and_the_note_says_why():
    detector = get_detector("strings.Regex", pattern="needle")
    attempt = attempt_with([" " * MAX_ANSWER_CHARS + "needle"])
    assert detector.detect(attempt) == [0.0]
    assert "the rest was not looked at" in attempt.notes[DETECTOR_NOTES]["strings.Regex"][0]
