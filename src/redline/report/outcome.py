"""Whether a run's measurements are all there, as every report says it: the status shown for a
run whose attempts errored (``complete with errors``), the commonest reasons they errored and how
many outputs came from the response cache. The command that retries them is :mod:`.resume`'s."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from redline.report.formatting import plural
from redline.store import RUN_COMPLETE

__all__ = [
    "COMPLETE_WITH_ERRORS",
    "MAX_REASONS",
    "REASON_WIDTH",
    "ErrorReason",
    "cached_note",
    "errored_note",
    "group_reasons",
    "shown_status",
    "status_class",
]

#: The status shown for a run that finished with errored attempts (its stored status is ``complete``).
COMPLETE_WITH_ERRORS = "complete with errors"
#: How many distinct reasons a summary keeps, commonest first.
MAX_REASONS = 5
#: The longest reason kept, in characters (the rest is cut and ends in ``…``).
REASON_WIDTH = 160


@dataclass(frozen=True)
class ErrorReason:
    """One reason attempts errored (the first line of the error, cut to :data:`REASON_WIDTH`)
    and how many attempts gave it."""

    reason: str
    count: int

    def as_dict(self) -> dict[str, Any]:
        """``{"reason", "count"}``."""
        return {"reason": self.reason, "count": self.count}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ErrorReason:
        return cls(reason=str(data.get("reason", "")), count=int(data.get("count", 0) or 0))


def _reason(error: object) -> str:
    text = str(error).strip()
    line = text.splitlines()[0] if text else "unknown error"
    return line if len(line) <= REASON_WIDTH else line[: REASON_WIDTH - 1] + "…"


def group_reasons(errors: Iterable[object], limit: int = MAX_REASONS) -> tuple[ErrorReason, ...]:
    """The ``limit`` commonest reasons among ``errors`` (the ``notes["error"]`` of errored
    attempts), each with its count, commonest first (ties in the order first seen)."""
    counts = Counter(_reason(e) for e in errors)
    return tuple(ErrorReason(reason, count) for reason, count in counts.most_common(limit))


def shown_status(status: str, errored: int) -> str:
    """The status a report shows: :data:`COMPLETE_WITH_ERRORS` for a complete run with errored
    attempts, else the stored ``status`` (``running``, ``interrupted``…)."""
    return COMPLETE_WITH_ERRORS if status == RUN_COMPLETE and errored else status


def status_class(status: str, errored: int) -> str:
    """The CSS class of a shown status: ``errors`` for a complete run with errored attempts, else
    the stored status."""
    return "errors" if status == RUN_COMPLETE and errored else status


def errored_note(errored: int, attempts: int) -> str:
    """``15 of 15 attempts errored``; empty when none did."""
    return f"{errored} of {plural(attempts, 'attempt')} errored" if errored else ""


def cached_note(cached: int, answers: int) -> str:
    """``12 of 76 outputs answered from the cache``; empty when none was."""
    return f"{cached} of {plural(answers, 'output')} answered from the cache" if cached else ""
