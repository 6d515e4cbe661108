"""How many more human labels would bring a run's corrected failure rate to a target precision.

The rate corrected with reviews of the run (:func:`~redline.evaluation.statistics.review_corrected_rate`)
is a stratified estimate: the judge's hits and passes are two strata, and the reviews of each
estimate the share of its outputs that truly failed. :func:`plan_labels` returns the labels per
stratum that bring the estimate's 95% interval to a half-width of ``target`` (Neyman allocation,
Cochran 1977, *Sampling Techniques*, 3rd ed., §5.5 and eq. 5.26); docs/judges.md gives the formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["TARGET_HALF_WIDTH", "Z95", "LabelPlan", "plan_labels"]

TARGET_HALF_WIDTH = 0.05
"""The half-width of the 95% interval the planner aims at."""

Z95 = 1.959964
"""The standard normal quantile of a two-sided 95% interval."""


@dataclass(frozen=True)
class LabelPlan:
    """The labels a probe needs: ``hits_needed``/``passes_needed`` in all (reviews already made
    counted), ``more`` still to make, and ``reachable`` (false when the run's own sampling error,
    ``floor`` as a half-width, already exceeds the target: more outputs are needed, not labels)."""

    hits_needed: int
    passes_needed: int
    more: int
    floor: float
    reachable: bool = True


def _share(failed: int, reviewed: int) -> float:
    """The Beta(1, 1) posterior mean of a stratum's true failure share, as the correction uses."""
    return (failed + 1) / (reviewed + 2)


def plan_labels(
    hits: int,
    passes: int,
    *,
    hits_reviewed: int = 0,
    hits_failed: int = 0,
    passes_reviewed: int = 0,
    passes_failed: int = 0,
    target: float = TARGET_HALF_WIDTH,
) -> LabelPlan:
    """The labels that bring the corrected rate of ``hits + passes`` judged outputs to a 95%
    interval of ± ``target``, given the reviews so far (``*_reviewed`` in each stratum,
    ``*_failed`` of them labelled "the model failed").

    With ``N`` outputs, stratum weights ``W_h = N_h / N`` and ``S_h² = p_h (1 - p_h)`` where
    ``p_h`` is the stratum's failure share (Beta(1, 1) posterior mean of its reviews), the
    labelling variance allowed is ``V = (target / z)² - p (1 - p) / N`` (``p`` the corrected rate:
    the second term is the run's own sampling error, which labels cannot remove), and the labels
    needed are ``n = (Σ W_h S_h)² / (V + Σ W_h S_h² / N)``, allocated ``n_h = n W_h S_h / Σ W_h S_h``
    (each at most ``N_h``). The more the reviews agree with the judge, the smaller the ``S_h``
    and ``n``."""
    total = hits + passes
    if total <= 0:
        return LabelPlan(0, 0, 0, 0.0, reachable=False)
    sizes = (hits, passes)
    shares = (_share(hits_failed, hits_reviewed), _share(passes_failed, passes_reviewed))
    weights = [size / total for size in sizes]
    spreads = [math.sqrt(p * (1 - p)) for p in shares]
    rate = sum(w * p for w, p in zip(weights, shares))
    floor_variance = rate * (1 - rate) / total
    allowed = (target / Z95) ** 2 - floor_variance
    floor = Z95 * math.sqrt(floor_variance)
    reviewed = (hits_reviewed, passes_reviewed)
    if allowed <= 0:
        return LabelPlan(hits, passes, sum(max(0, s - r) for s, r in zip(sizes, reviewed)), floor, reachable=False)
    spread = sum(w * s for w, s in zip(weights, spreads))
    if spread == 0:
        return LabelPlan(0, 0, 0, floor)
    n = spread**2 / (allowed + sum(w * s * s for w, s in zip(weights, spreads)) / total)
    needed = [min(size, math.ceil(n * w * s / spread)) for size, w, s in zip(sizes, weights, spreads)]
    more = sum(max(0, k - r) for k, r in zip(needed, reviewed))
    return LabelPlan(needed[0], needed[1], more, floor)
