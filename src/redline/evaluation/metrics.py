"""Metric calculators aggregate evaluated attempts into statistics with 95% intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol

from redline.attempt import Attempt
from redline.evaluation.judgment import FAIL, PASS, UNDETECTED
from redline.evaluation.measures import COMPLIANCE_NOTE, COMPLIANCE_RATE
from redline.evaluation.statistics import bootstrap_ci, wilson_interval

__all__ = [
    "MAX_CATEGORIES",
    "OTHER_CATEGORIES",
    "ComplianceRateCalculator",
    "FailureRateCalculator",
    "Metric",
    "MetricCalculator",
    "Noted",
    "bootstrap_ci",
    "category_of",
    "wilson_interval",
]

MAX_CATEGORIES = 100
"""The most categories a failure rate is broken down into; the outputs of any further category
are counted together under :data:`OTHER_CATEGORIES` (a dataset may hold a category per row)."""

OTHER_CATEGORIES = "(other categories)"


def category_of(notes: Mapping[str, Any]) -> str | None:
    """The category of the item an attempt comes from, read from the attempt's ``notes`` (live
    or as stored): its prompt's ``category`` metadata, else its item's, as text; ``None`` when
    it has none."""
    for key in ("prompt_metadata", "item_metadata"):
        metadata = notes.get(key)
        # a dict and a str, what every stored attempt holds, are tested by type before the ABC checks
        if type(metadata) is dict or isinstance(metadata, Mapping):
            category = metadata.get("category")
            if type(category) is str:
                return category
            if category is not None and not isinstance(category, (Mapping, list)):
                return str(category)
    return None


@dataclass
class Metric:
    """A statistic: ``value`` with its 95% interval ``ci95`` (``None`` when there is no data),
    the number of observations ``n`` it rests on, and how many were ``undetected``."""

    value: float | None
    ci95: tuple[float, float] | None = None
    n: int = 0
    undetected: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["ci95"] = list(self.ci95) if self.ci95 is not None else None
        return data

    @classmethod
    def from_dict(cls, value: dict) -> Metric:
        ci = value.get("ci95")
        return cls(
            value=value.get("value"),
            ci95=tuple(ci) if ci is not None else None,
            n=value.get("n", 0),
            undetected=value.get("undetected", 0),
            details=value.get("details") or {},
        )


class Noted(Protocol):
    """What a notes-only calculator reads of an attempt: its ``notes``."""

    @property
    def notes(self) -> dict[str, Any]: ...


class MetricCalculator:
    """Base class: :meth:`calculate` maps evaluated attempts to named :class:`Metric` objects."""

    #: ``True`` when :meth:`calculate` reads nothing of an attempt but its ``notes``: phase 4 then
    #: gives it the stored notes alone (objects with a ``notes`` attribute, see :class:`Noted`).
    notes_only: ClassVar[bool] = False

    def calculate(self, attempts: Sequence[Attempt]) -> dict[str, Metric]:
        raise NotImplementedError


class FailureRateCalculator(MetricCalculator):
    """``failure_rate``: failed outputs / judged outputs, with a Wilson 95% interval.

    Undetected outputs are counted in ``undetected`` and excluded from the rate. When the
    attempts' items have categories (:func:`category_of`), ``details["by_category"]`` holds
    ``{category: {"failed", "passed", "undetected"}}`` in the order the categories first appear
    (at most :data:`MAX_CATEGORIES`, the rest under :data:`OTHER_CATEGORIES`): what the summary's
    per-category rates are computed from.
    """

    notes_only = True

    def calculate(self, attempts: Sequence[Noted]) -> dict[str, Metric]:
        failed = passed = undetected = 0
        # per category: [failed, passed, undetected], in the order categories first appear
        by_category: dict[str, list[int]] = {}
        for attempt in attempts:
            counts: list[int] | None = None
            category = category_of(attempt.notes)
            if category is not None:
                if category not in by_category and len(by_category) >= MAX_CATEGORIES:
                    category = OTHER_CATEGORIES
                counts = by_category.setdefault(category, [0, 0, 0])
            for judgment in attempt.notes.get("evaluation", []):
                if judgment == FAIL:
                    failed += 1
                    slot = 0
                elif judgment == PASS:
                    passed += 1
                    slot = 1
                elif judgment == UNDETECTED:
                    undetected += 1
                    slot = 2
                else:
                    continue
                if counts is not None:
                    counts[slot] += 1
        n = failed + passed
        rate = failed / n if n else None
        details: dict[str, Any] = {"failed": failed, "passed": passed}
        if by_category:
            details["by_category"] = {
                name: {"failed": f, "passed": p, "undetected": u} for name, (f, p, u) in by_category.items()
            }
        return {
            "failure_rate": Metric(
                value=rate,
                ci95=wilson_interval(failed, n) if n else None,
                n=n,
                undetected=undetected,
                details=details,
            )
        }


class ComplianceRateCalculator(MetricCalculator):
    """``compliance_rate``: of a harm probe's outputs the compliance judges judged (pass or
    fail), the share where the model answered instead of refusing, with a Wilson 95% interval,
    read from ``notes["compliance"]`` (see :class:`~redline.evaluation.evaluator.HarmEvaluator`).
    Outputs judged neither way count in ``undetected``; attempts without the note (a run begun
    before it) count in neither, and a probe with none has no compliance rate."""

    notes_only = True

    def calculate(self, attempts: Sequence[Noted]) -> dict[str, Metric]:
        complied = refused = undetected = 0
        noted = False
        for attempt in attempts:
            judgments = attempt.notes.get(COMPLIANCE_NOTE)
            if not isinstance(judgments, list):
                continue
            noted = True
            for judgment in judgments:
                if judgment == FAIL:
                    complied += 1
                elif judgment == PASS:
                    refused += 1
                elif judgment == UNDETECTED:
                    undetected += 1
        if not noted:
            return {}
        n = complied + refused
        return {
            COMPLIANCE_RATE: Metric(
                value=complied / n if n else None,
                ci95=wilson_interval(complied, n) if n else None,
                n=n,
                undetected=undetected,
                details={"complied": complied, "refused": refused},
            )
        }
