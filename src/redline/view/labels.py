"""A reviewer's label of one output, as the view asks for it and shows it.

The review form asks whether the judge was right, which is how a person reads a verdict: for an
output the judge scored ``fail`` (a hit) or ``pass``, the choices are ``correct``,
``false_positive`` (a hit on an output that did not fail) and ``false_negative`` (a pass on an
output that failed); for an output without a pass/fail verdict (``undetected``, or a bias
probe's answer), the reviewer says ``fail`` or ``pass`` directly. The store keeps what the model
did (:data:`~redline.store.LABEL_FAIL` / :data:`~redline.store.LABEL_PASS`) next to the verdict, as
``redline review`` does, so both feed the same corrected rates.
"""

from __future__ import annotations

from redline.store import LABEL_FAIL, LABEL_PASS, ReviewRecord
from redline.view.errors import BadRequest

__all__ = [
    "CORRECT",
    "FALSE_NEGATIVE",
    "FALSE_POSITIVE",
    "REVIEWER",
    "choice_of",
    "choices",
    "label_for",
    "label_text",
]

CORRECT, FALSE_POSITIVE, FALSE_NEGATIVE = "correct", "false_positive", "false_negative"

REVIEWER = "view"
"""The reviewer stored with a label made in the view."""

_JUDGED = (LABEL_FAIL, LABEL_PASS)


def choices(verdict: str | None) -> list[tuple[str, str]]:
    """The ``(value, text)`` choices of the form for an output with ``verdict``."""
    if verdict == LABEL_FAIL:
        return [
            (CORRECT, "correct: the model failed"),
            (FALSE_POSITIVE, "false positive: the model did not fail"),
        ]
    if verdict == LABEL_PASS:
        return [
            (CORRECT, "correct: the model did not fail"),
            (FALSE_NEGATIVE, "false negative: the model failed"),
        ]
    return [(LABEL_FAIL, "the model failed"), (LABEL_PASS, "the model passed")]


def label_for(choice: str, verdict: str | None) -> str:
    """The stored label (``fail``/``pass``) of ``choice`` for an output with ``verdict``; raises
    :class:`BadRequest` for a choice that does not apply to that verdict."""
    if verdict in _JUDGED:
        other = LABEL_PASS if verdict == LABEL_FAIL else LABEL_FAIL
        wrong = FALSE_POSITIVE if verdict == LABEL_FAIL else FALSE_NEGATIVE
        if choice == CORRECT:
            return verdict
        if choice == wrong:
            return other
    elif choice in _JUDGED:
        return choice
    allowed = ", ".join(value for value, _ in choices(verdict))
    shown = verdict if verdict else "no verdict"
    raise BadRequest(f"label {choice!r} does not apply to an output judged {shown!r}: choose {allowed}")


def label_text(review: ReviewRecord) -> str:
    """How the view names a stored label: ``correct``, ``false positive`` or ``false negative``
    against a pass/fail verdict, else ``model failed`` / ``model passed``."""
    wrong = review.judge_wrong
    if wrong is None:
        return "model failed" if review.label == LABEL_FAIL else "model passed"
    if not wrong:
        return "correct"
    return "false positive" if review.verdict == LABEL_FAIL else "false negative"


def choice_of(review: ReviewRecord) -> str:
    """The form's choice that gives ``review`` (so the form shows the label already saved)."""
    if review.verdict in _JUDGED:
        if review.label == review.verdict:
            return CORRECT
        return FALSE_POSITIVE if review.verdict == LABEL_FAIL else FALSE_NEGATIVE
    return review.label
