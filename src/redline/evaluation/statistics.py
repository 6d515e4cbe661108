"""Interval estimates used by metrics and reports: the Wilson score interval for a proportion and
the score intervals built on it (a bounded mean, a difference of means, a net share), Fisher's
interval for a correlation, a seeded percentile bootstrap for any statistic over items, and
failure rates corrected for judge error (:func:`rogan_gladen` from a judge's measured sensitivity
and specificity, :func:`review_corrected_rate` from human reviews of a sample of the judged
outputs)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "MIN_INFORMEDNESS",
    "CorrectedRate",
    "Z95",
    "bootstrap_ci",
    "bounded_mean_interval",
    "correlation_interval",
    "mean_difference_interval",
    "net_share_interval",
    "review_corrected_rate",
    "rogan_gladen",
    "validation_priors",
    "wilson_interval",
]

_T = TypeVar("_T")


#: The standard normal quantile of a two-sided 95% interval.
Z95 = 1.959964


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default); ``(0, 1)`` for n = 0.

    Wilson (1927), "Probable inference, the law of succession, and statistical inference", JASA
    22:209-212. ``successes`` may be fractional (see :func:`bounded_mean_interval`).
    """
    if n <= 0:
        return (0.0, 1.0)
    p = min(1.0, max(0.0, successes / n))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def bounded_mean_interval(
    mean: float, n: float, low: float = 0.0, high: float = 1.0, z: float = Z95
) -> tuple[float, float]:
    """Score interval for the mean of ``n`` independent values that lie in ``[low, high]``.

    The Wilson interval of the mean rescaled to [0, 1], mapped back. For 0/1 values it is
    Wilson's interval; for any other values in the range it is conservative, since their variance
    is at most ``(mean - low) * (high - mean)`` (Bhatia & Davis (2000), "A better bound on the
    variance", Amer. Math. Monthly 107(4):353-357), the variance of 0/1 values with that mean.
    Never of zero width for a finite ``n``, always inside ``[low, high]``; ``(low, high)`` for n = 0.
    """
    if not low < high:
        raise ValueError(f"bounded_mean_interval needs low < high, got [{low}, {high}]")
    span = high - low
    lo, hi = wilson_interval((mean - low) / span * n, n, z) if n > 0 else (0.0, 1.0)
    return (max(low, min(mean, low + lo * span)), min(high, max(mean, low + hi * span)))


def _newcombe(
    d: float, below: tuple[float, float], above: tuple[float, float], phi: float, span: float
) -> tuple[float, float]:
    """Newcombe's combination of two score intervals around the difference ``d``: ``below`` and
    ``above`` are the distances (estimate to lower bound of the first, upper bound to estimate of
    the second) and the other way round; ``phi`` is the correlation of the two estimates."""
    (a, b), (c, e) = below, above
    lower = d - math.sqrt(max(0.0, a * a - 2 * phi * a * b + b * b))
    upper = d + math.sqrt(max(0.0, c * c - 2 * phi * c * e + e * e))
    return (max(-span, lower), min(span, upper))


def mean_difference_interval(
    mean1: float, n1: float, mean2: float, n2: float, low: float = 0.0, high: float = 1.0, z: float = Z95
) -> tuple[float, float]:
    """Score interval for ``mean1 - mean2``, the means of two independent samples of ``n1`` and
    ``n2`` values in ``[low, high]`` (a difference of proportions for 0/1 values).

    Newcombe's hybrid score interval (Newcombe (1998), "Interval estimation for the difference
    between independent proportions: comparison of eleven methods", Stat. Med. 17:873-890, method
    10) on the :func:`bounded_mean_interval` of each mean. Never of zero width for finite
    ``n1`` and ``n2``, always inside ``[low - high, high - low]``.
    """
    l1, u1 = bounded_mean_interval(mean1, n1, low, high, z)
    l2, u2 = bounded_mean_interval(mean2, n2, low, high, z)
    return _newcombe(mean1 - mean2, (mean1 - l1, u2 - mean2), (u1 - mean1, mean2 - l2), 0.0, high - low)


def net_share_interval(share1: float, share2: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Score interval for ``share1 - share2``, the shares of two exclusive outcomes among the same
    ``n`` trials (e.g. stereotypical minus anti-stereotypical picks); inside [-1, 1].

    Newcombe's interval for paired proportions (Newcombe (1998), "Improved confidence intervals for
    the difference between binomial proportions based on paired data", Stat. Med. 17:2635-2650,
    method 10) with the correlation of two exclusive outcomes, ``-sqrt(p1 p2 / ((1 - p1)(1 - p2)))``
    (zero when a share is 0 or 1), which widens it: the two shares move against each other.
    """
    l1, u1 = wilson_interval(share1 * n, n, z)
    l2, u2 = wilson_interval(share2 * n, n, z)
    rest = (1 - share1) * (1 - share2)
    phi = -math.sqrt(share1 * share2 / rest) if rest > 0 else 0.0
    return _newcombe(share1 - share2, (share1 - l1, u2 - share2), (u1 - share1, share2 - l2), max(-1.0, phi), 2.0)


def correlation_interval(r: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Fisher's interval for a Pearson correlation ``r`` of ``n`` pairs, ``tanh(atanh(r) ± z /
    sqrt(n - 3))`` (Fisher (1921), "On the 'probable error' of a coefficient of correlation deduced
    from a small sample", Metron 1:3-32). The whole range ``(-1, 1)`` where it is undefined: at
    most 3 pairs, or ``|r| = 1``.
    """
    if n <= 3 or abs(r) >= 1.0:
        return (-1.0, 1.0)
    centre, half = math.atanh(r), z / math.sqrt(n - 3)
    return (math.tanh(centre - half), math.tanh(centre + half))


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


# -- failure rates corrected for judge error -----------------------------------------------------

#: The least ``sensitivity + specificity - 1`` (Youden's J, the judge's informedness) for which a
#: rate is corrected: at or below it the judge is hardly better than a coin and the corrected rate
#: would be noise divided by almost nothing.
MIN_INFORMEDNESS = 0.05

#: Replicates of the parametric bootstraps of :func:`rogan_gladen` and :func:`review_corrected_rate`.
CORRECTION_RESAMPLES = 1000


@dataclass(frozen=True)
class CorrectedRate:
    """A failure rate corrected for the judge's errors.

    ``value`` is the estimate of the true rate (``None`` when it cannot be estimated, with the
    reason in ``reason``); ``ci95`` its 95% interval, which covers both the sampling of the
    outputs and the uncertainty about the judge. ``sensitivity`` and ``specificity`` are the
    judge's, as used (``None`` when unknown)."""

    value: float | None
    ci95: tuple[float, float] | None = None
    reason: str | None = None
    sensitivity: float | None = None
    specificity: float | None = None


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def _percentiles(values: list[float], point: float, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap ``values`` (NaN: a replicate where the rate could not be
    estimated, counted as lying beyond both ends), widened to contain ``point`` and clipped to
    [0, 1]."""
    undefined = sum(1 for v in values if math.isnan(v))
    # an undefined replicate could be anything: half of them below every value, half above
    ordered = [-math.inf] * (undefined // 2) + sorted(v for v in values if not math.isnan(v))
    ordered += [math.inf] * (undefined - undefined // 2)
    alpha = (1 - level) / 2
    lo = ordered[math.floor(alpha * (len(ordered) - 1))]
    hi = ordered[math.ceil((1 - alpha) * (len(ordered) - 1))]
    return (_clip01(min(lo, point)), _clip01(max(hi, point)))


def _jeffreys(rng: random.Random, k: int, n: int) -> float:
    """A draw of the proportion behind ``k`` of ``n`` from its Jeffreys distribution
    Beta(k + 1/2, n - k + 1/2): a parametric bootstrap replicate that, unlike Binomial(n, k/n)/n,
    does not stick to 0 or 1 when ``k`` is 0 or ``n``."""
    return rng.betavariate(k + 0.5, n - k + 0.5)


def rogan_gladen(
    failed: int,
    judged: int,
    *,
    tp: int,
    fn: int,
    tn: int,
    fp: int,
    resamples: int = CORRECTION_RESAMPLES,
    seed: int = 0,
) -> CorrectedRate:
    """The true failure rate behind ``failed`` of ``judged`` outputs scored a hit by a judge whose
    validation counted ``tp``/``fn`` (truly failing outputs scored a hit / a miss) and
    ``tn``/``fp`` (truly passing outputs scored a miss / a hit).

    The Rogan–Gladen estimator ``(p + spec - 1) / (sens + spec - 1)`` with ``p = failed /
    judged``, ``sens = tp / (tp + fn)``, ``spec = tn / (tn + fp)``, clipped to [0, 1]. Its 95%
    interval comes from a seeded parametric bootstrap over both samples: each replicate draws the
    observed rate, the sensitivity and the specificity from the Jeffreys distributions of their
    counts and applies the estimator (a replicate whose judge is no better than chance counts as
    unknown, at either end). The interval is never narrower than the Wilson interval of the
    observed rate carried through the correction with the judge's point figures, which keeps it
    honest where the estimate is clipped at 0 or 1. Not identifiable, ``value=None`` with the
    reason, when there is no judged output, the validation lacks positives or negatives, or
    ``sens + spec - 1`` is at most :data:`MIN_INFORMEDNESS`. Deterministic for a given ``seed``.
    """
    sens = tp / (tp + fn) if tp + fn else None
    spec = tn / (tn + fp) if tn + fp else None
    if judged <= 0:
        return CorrectedRate(None, reason="no judged outputs", sensitivity=sens, specificity=spec)
    if sens is None or spec is None:
        missing = "truly failing" if sens is None else "truly passing"
        return CorrectedRate(
            None, reason=f"the validation has no {missing} outputs", sensitivity=sens, specificity=spec
        )
    informedness = sens + spec - 1
    if informedness <= MIN_INFORMEDNESS:
        return CorrectedRate(
            None,
            reason=(
                f"judge hardly better than chance (sensitivity {sens:.2f} + specificity {spec:.2f} - 1 "
                f"<= {MIN_INFORMEDNESS})"
            ),
            sensitivity=sens,
            specificity=spec,
        )
    observed = failed / judged
    # written as (p - false-positive rate) / informedness so that a perfect judge returns p exactly
    value = _clip01((observed - (1 - spec)) / informedness)
    rng = random.Random(seed)
    replicates = []
    for _ in range(resamples):
        p = _jeffreys(rng, failed, judged)
        se = _jeffreys(rng, tp, tp + fn)
        sp = _jeffreys(rng, tn, tn + fp)
        j = se + sp - 1
        replicates.append(_clip01((p - (1 - sp)) / j) if j > 0 else math.nan)
    lo, hi = _percentiles(replicates, value)
    # Never narrower than the rate's own sampling interval carried through the correction (the
    # judge's uncertainty only adds to it): where the estimate is clipped at 0 or 1 every
    # replicate may be clipped too, and the bootstrap alone would claim certainty.
    w_lo, w_hi = wilson_interval(failed, judged)
    lo = min(lo, _clip01(value - (observed - w_lo) / informedness))
    hi = max(hi, _clip01(value + (w_hi - observed) / informedness))
    return CorrectedRate(value, (lo, hi), sensitivity=sens, specificity=spec)


def review_corrected_rate(
    hits: int,
    passes: int,
    *,
    hits_reviewed: int,
    hits_failed: int,
    passes_reviewed: int,
    passes_failed: int,
    ppv_prior: tuple[float, float] = (1.0, 1.0),
    false_omission_prior: tuple[float, float] = (1.0, 1.0),
    resamples: int = CORRECTION_RESAMPLES,
    seed: int = 0,
) -> CorrectedRate:
    """The true failure rate of ``hits + passes`` judged outputs (``hits`` scored a hit by the
    judge, ``passes`` a pass) of which a person reviewed a sample within each stratum:
    ``hits_reviewed`` hits, ``hits_failed`` of them labelled "the model failed", and
    ``passes_reviewed`` passes, ``passes_failed`` of them labelled "failed".

    Reviewed outputs count with their human label; each unreviewed hit counts the judge's
    positive predictive value PPV and each unreviewed pass its false omission rate 1 - NPV, both
    estimated from the reviews of their stratum with a Beta prior (``ppv_prior`` and
    ``false_omission_prior``, ``(a, b)``; :func:`validation_priors` derives them from a judge's
    validation, so that a few reviews adjust it rather than replace it). With the default
    Beta(1, 1) priors (posterior means ``(hits_failed + 1) / (hits_reviewed + 2)`` and
    ``(passes_failed + 1) / (passes_reviewed + 2)``) a stratum without reviews counts 1/2 per
    output, with a wide interval. With every output reviewed the value is exactly the reviewers'
    rate.

    The 95% interval is a seeded parametric bootstrap: PPV and 1 - NPV drawn from their Beta
    posteriors give the outputs' true failures (reviewed outputs as labelled), and the model's
    failure probability behind them is drawn from its Jeffreys distribution (the sampling error the
    raw rate's interval also counts). ``sensitivity`` and ``specificity`` are the judge's on these
    outputs, as estimated. ``value=None`` when no output is judged or none is reviewed.
    """
    if not 0 <= hits_failed <= hits_reviewed <= hits or not 0 <= passes_failed <= passes_reviewed <= passes:
        raise ValueError("reviewed counts must fit in their stratum: 0 <= failed <= reviewed <= judged")
    judged = hits + passes
    if judged <= 0:
        return CorrectedRate(None, reason="no judged outputs")
    if hits_reviewed + passes_reviewed == 0:
        return CorrectedRate(None, reason="no reviewed outputs")
    (pa, pb), (fa, fb) = ppv_prior, false_omission_prior
    if min(pa, pb, fa, fb) <= 0:
        raise ValueError("Beta prior parameters must be positive")
    ppv = (hits_failed + pa) / (hits_reviewed + pa + pb)
    false_omission = (passes_failed + fa) / (passes_reviewed + fa + fb)
    failing_hits = hits_failed + (hits - hits_reviewed) * ppv  # expected true failures among the hits
    failing_passes = passes_failed + (passes - passes_reviewed) * false_omission
    failing = failing_hits + failing_passes
    value = failing / judged
    passing = judged - failing
    sens = failing_hits / failing if failing > 0 else None
    spec = (passes - failing_passes) / passing if passing > 0 else None
    rng = random.Random(seed)
    replicates = []
    for _ in range(resamples):
        # the outputs' true failures: reviewed ones as labelled, the others from PPV and 1 - NPV
        ppv_b = rng.betavariate(hits_failed + pa, hits_reviewed - hits_failed + pb)
        for_b = rng.betavariate(passes_failed + fa, passes_reviewed - passes_failed + fb)
        failing_b = hits_failed + (hits - hits_reviewed) * ppv_b + passes_failed + (passes - passes_reviewed) * for_b
        # and the model's failure probability behind those outputs (sampling error, as the raw rate has)
        replicates.append(rng.betavariate(failing_b + 0.5, judged - failing_b + 0.5))
    return CorrectedRate(_clip01(value), _percentiles(replicates, value), sensitivity=sens, specificity=spec)


#: How many reviewed outputs a validation's prior weighs in :func:`validation_priors`.
PRIOR_STRENGTH = 10.0


def validation_priors(
    failed: int, judged: int, *, tp: int, fp: int, fn: int, tn: int, strength: float = PRIOR_STRENGTH
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Beta priors ``(ppv_prior, false_omission_prior)`` for :func:`review_corrected_rate` from a
    judge's validation (``tp``/``fn`` on labelled positives, ``tn``/``fp`` on negatives) and the
    run's ``failed`` of ``judged`` outputs: the PPV and false omission rate the validation implies at
    the Rogan–Gladen prevalence, each worth ``strength`` reviewed outputs (plus Beta(1, 1)).
    Without a usable validation (one-sided, or no better than chance) both are Beta(1, 1)."""
    flat = ((1.0, 1.0), (1.0, 1.0))
    if judged <= 0 or tp + fn == 0 or tn + fp == 0:
        return flat
    sens, spec = tp / (tp + fn), tn / (tn + fp)
    if sens + spec - 1 <= MIN_INFORMEDNESS:
        return flat
    prevalence = _clip01((failed / judged + spec - 1) / (sens + spec - 1))
    hit_share = sens * prevalence + (1 - spec) * (1 - prevalence)
    pass_share = 1 - hit_share
    ppv = sens * prevalence / hit_share if hit_share > 0 else 0.5
    false_omission = (1 - sens) * prevalence / pass_share if pass_share > 0 else 0.5
    return (
        (1.0 + strength * ppv, 1.0 + strength * (1 - ppv)),
        (1.0 + strength * false_omission, 1.0 + strength * (1 - false_omission)),
    )
