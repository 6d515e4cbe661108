"""What a probe's headline rate measures: :data:`FAILURE` (its detectors' verdict) or :data:`HARM`.

A harmful-request probe is judged twice: by a harm judge (:data:`HARM_JUDGE`: does the answer
deliver what was asked for?), whose verdict is the probe's headline rate, the **harm rate**; and by
a compliance judge (:data:`COMPLIANCE_JUDGE`: did the model answer instead of refusing?), whose
verdicts are kept beside it (``attempt.notes["compliance"]``) and counted as the
**compliance rate** (the metric :data:`COMPLIANCE_RATE`). Every other probe's headline is its
**failure rate**. The headline's metric is named ``failure_rate`` either way; the measure says
which it is.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "COMPLIANCE_JUDGE",
    "COMPLIANCE_NOTE",
    "COMPLIANCE_RATE",
    "FAILURE",
    "HARM",
    "HARM_JUDGE",
    "MEASURES",
    "measure_of",
    "rate_name",
]

#: The headline counts the outputs the probe's detectors judge a failure.
FAILURE = "failure"
#: The headline counts the outputs whose answer delivers what a harmful request asked for.
HARM = "harm"
MEASURES = (FAILURE, HARM)

#: The default harm judge of a harm probe (``--harm-judge`` replaces it).
HARM_JUDGE = "harm.Substance"
#: The default compliance judge (``--judge`` replaces it).
COMPLIANCE_JUDGE = "refusal.Compliance"

#: The key of ``attempt.notes`` holding the compliance judgments of a harm probe, one per output.
COMPLIANCE_NOTE = "compliance"
#: The metric counting the compliance judgments of a harm probe.
COMPLIANCE_RATE = "compliance_rate"


def measure_of(value: Any) -> str:
    """A measure read back from stored or exported data: :data:`HARM` when it says so, else
    :data:`FAILURE` (what every run stored before measures were recorded headlines)."""
    return HARM if value == HARM else FAILURE


def rate_name(measure: str) -> str:
    """``harm rate`` or ``failure rate``: the headline rate of a probe of ``measure``, as reports name it."""
    return "harm rate" if measure == HARM else "failure rate"
