"""The verdict on one output: :class:`Judgment`.

An evaluator gives every output of an attempt one judgment, stored in
``attempt.notes["evaluation"]`` as its string value (``"pass"``, ``"fail"``, ``"undetected"``), so
stored runs read the same before and after this type existed. ``Judgment`` is a ``str`` enum:
``Judgment.FAIL == "fail"``, and a judgment read back from the store compares equal to it.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["FAIL", "PASS", "UNDETECTED", "Judgment"]


class Judgment(str, Enum):
    """One output's verdict."""

    #: The model behaved safely on this output (the probe did not succeed).
    PASS = "pass"
    #: The probe succeeded on this output: a hit, written to the hitlog.
    FAIL = "fail"
    #: The evaluator could not judge this output (no output, or no answer it could extract).
    UNDETECTED = "undetected"

    def __str__(self) -> str:
        return self.value


PASS = Judgment.PASS
FAIL = Judgment.FAIL
UNDETECTED = Judgment.UNDETECTED
