"""Metric calculators aggregate evaluated attempts into statistics with 95% intervals."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from redline.attempt import Attempt
from redline.evaluation.evaluator import FAIL, PASS, UNDETECTED

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
            ci95=tuple(ci) if ci is not None else None,  # type: ignore[arg-type]
            n=value.get("n", 0),
            undetected=value.get("undetected", 0),
            details=value.get("details") or {},
        )


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default); ``(0, 1)`` for n = 0."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_ci(
    samples: Sequence[Any],
    statistic: Callable[[Sequence[Any]], float | None],
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``statistic`` over ``samples`` (seeded, reproducible).

    Resamples on which the statistic is undefined (``None``) are dropped; returns ``None`` when
    there are no samples or no resample is defined.
    """
    if not samples:
        return None
    rng = random.Random(seed)
    n = len(samples)
    values = []
    for _ in range(resamples):
        value = statistic([samples[rng.randrange(n)] for _ in range(n)])
        if value is not None and not math.isnan(value):
            values.append(value)
    if not values:
        return None
    values.sort()
    alpha = (1 - level) / 2
    lo = values[int(math.floor(alpha * (len(values) - 1)))]
    hi = values[int(math.ceil((1 - alpha) * (len(values) - 1)))]
    return (float(lo), float(hi))


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
