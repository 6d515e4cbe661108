"""Interval estimates used by metrics and reports: the Wilson score interval for a proportion and
a seeded percentile bootstrap for any statistic over items."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["bootstrap_ci", "wilson_interval"]

_T = TypeVar("_T")


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
    samples: Sequence[_T],
    statistic: Callable[[list[_T]], float | None],
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``statistic`` over ``samples`` (seeded, reproducible).

    ``statistic`` receives each resample as a list of ``len(samples)`` samples drawn with
    replacement. Resamples on which the statistic is undefined (``None``) are dropped; returns ``None`` when
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
    lo = values[math.floor(alpha * (len(values) - 1))]
    hi = values[math.ceil((1 - alpha) * (len(values) - 1))]
    return (float(lo), float(hi))
