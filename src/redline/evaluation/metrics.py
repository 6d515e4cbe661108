"""Metric calculators aggregate evaluated attempts into statistics with 95% intervals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from redline.attempt import Attempt
from redline.evaluation.judgment import FAIL, PASS, UNDETECTED
from redline.evaluation.statistics import bootstrap_ci, wilson_interval

__all__ = ["FailureRateCalculator", "Metric", "MetricCalculator", "bootstrap_ci", "wilson_interval"]


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


class MetricCalculator:
    """Base class: :meth:`calculate` maps evaluated attempts to named :class:`Metric` objects."""

    def calculate(self, attempts: Sequence[Attempt]) -> dict[str, Metric]:
        raise NotImplementedError


class FailureRateCalculator(MetricCalculator):
    """``failure_rate``: failed outputs / judged outputs, with a Wilson 95% interval.

    Undetected outputs are counted in ``undetected`` and excluded from the rate.
    """

    def calculate(self, attempts: Sequence[Attempt]) -> dict[str, Metric]:
        failed = passed = undetected = 0
        for attempt in attempts:
            for judgment in attempt.notes.get("evaluation", []):
                if judgment == FAIL:
                    failed += 1
                elif judgment == PASS:
                    passed += 1
                elif judgment == UNDETECTED:
                    undetected += 1
        n = failed + passed
        rate = failed / n if n else None
        return {
            "failure_rate": Metric(
                value=rate,
                ci95=wilson_interval(failed, n) if n else None,
                n=n,
                undetected=undetected,
                details={"failed": failed, "passed": passed},
            )
        }
