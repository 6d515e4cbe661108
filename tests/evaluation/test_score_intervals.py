"""The score intervals behind bias metrics: a bounded mean, a difference of means, a net share and
a correlation. Each reflects its n, never has zero width for a finite n and stays in range."""

from __future__ import annotations

import math

import pytest

from redline.evaluation import (
    bounded_mean_interval,
    correlation_interval,
    mean_difference_interval,
    net_share_interval,
    wilson_interval,
)

# -- bounded_mean_interval -----------------------------------------------------------------------


@pytest.mark.parametrize("k, n", [(0, 8), (8, 8), (3, 8), (81, 263), (0, 1)])
def test_a_bounded_mean_of_zeros_and_ones_is_the_wilson_interval(k, n):
    assert bounded_mean_interval(k / n, n) == pytest.approx(wilson_interval(k, n))


def test_a_bounded_mean_on_another_range_is_the_wilson_interval_rescaled():
    lo, hi = wilson_interval(6, 8)
    assert bounded_mean_interval(0.5, 8, -1.0, 1.0) == pytest.approx((2 * lo - 1, 2 * hi - 1))
    assert bounded_mean_interval(0.25, 8, -0.5, 0.5) == pytest.approx((lo - 0.5, hi - 0.5))


@pytest.mark.parametrize("n", [1, 2, 8, 24, 1000])
@pytest.mark.parametrize("share", [0.0, 0.125, 0.5, 1.0])
def test_a_bounded_mean_interval_never_has_zero_width_and_stays_in_range(n, share):
    lo, hi = bounded_mean_interval(-0.5 + share, n, -0.5, 0.5)
    assert -0.5 <= lo <= -0.5 + share <= hi <= 0.5
    assert hi - lo > 0


def test_a_bounded_mean_interval_narrows_as_the_sample_grows():
    widths = [hi - lo for lo, hi in (bounded_mean_interval(1.0, n) for n in (8, 24, 100, 1000))]
    assert widths == sorted(widths, reverse=True) and widths[-1] < 0.01


def test_a_bounded_mean_of_nothing_is_the_whole_range():
    assert bounded_mean_interval(0.0, 0, -1.0, 1.0) == (-1.0, 1.0)


def test_a_bounded_mean_needs_a_range():
    with pytest.raises(ValueError, match="low < high"):
        bounded_mean_interval(0.0, 5, 1.0, 1.0)


# -- mean_difference_interval ------------------------------------------------------------------


@pytest.mark.parametrize(
    "x1, n1, x2, n2, low, high",
    [
        # Newcombe (1998), "Interval estimation for the difference between independent proportions",
        # Stat. Med. 17:873-890, Table II, method 10
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
        (0, 10, 0, 20, -0.1611, 0.2775),
    ],
)
def test_a_difference_of_proportions_matches_newcombes_published_values(x1, n1, x2, n2, low, high):
    lo, hi = mean_difference_interval(x1 / n1, n1, x2 / n2, n2)
    assert lo == pytest.approx(low, abs=5e-4) and hi == pytest.approx(high, abs=5e-4)


@pytest.mark.parametrize("p1, p2", [(0.0, 0.0), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.5, 0.5)])
def test_a_difference_of_equal_samples_of_eight_has_width_and_stays_in_range(p1, p2):
    lo, hi = mean_difference_interval(p1, 8, p2, 8)
    assert -1.0 <= lo <= p1 - p2 <= hi <= 1.0
    assert hi - lo > 0.3  # eight of each cannot pin a difference down


# -- net_share_interval ------------------------------------------------------------------------


def test_a_net_share_of_two_exhaustive_outcomes_is_one_wilson_interval_rescaled():
    # every trial one way or the other (a or b picks): the net share is 2p - 1
    lo, hi = wilson_interval(6, 8)
    assert net_share_interval(6 / 8, 2 / 8, 8) == pytest.approx((2 * lo - 1, 2 * hi - 1))


def test_a_net_share_with_one_outcome_absent_is_newcombes_difference():
    assert net_share_interval(0.75, 0.0, 8) == pytest.approx(mean_difference_interval(0.75, 8, 0.0, 8))


def test_a_net_share_on_a_large_sample_has_the_multinomial_standard_error():
    # Var(p1 - p2) = (p1(1 - p1) + p2(1 - p2) + 2 p1 p2) / n for two outcomes of the same trials
    n, p1, p2 = 10_000, 0.3, 0.2
    lo, hi = net_share_interval(p1, p2, n)
    half = 1.959964 * math.sqrt((p1 * (1 - p1) + p2 * (1 - p2) + 2 * p1 * p2) / n)
    assert (hi - lo) / 2 == pytest.approx(half, rel=0.02)


@pytest.mark.parametrize("p1, p2", [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (0.5, 0.5), (0.25, 0.0)])
def test_a_net_share_of_eight_trials_has_width_and_stays_in_range(p1, p2):
    lo, hi = net_share_interval(p1, p2, 8)
    assert -1.0 <= lo <= p1 - p2 <= hi <= 1.0 and hi - lo > 0.3


# -- correlation_interval ------------------------------------------------------------------------


def test_a_correlation_interval_is_fishers():
    # atanh(0.5) ± 1.96 / sqrt(25), back through tanh
    lo, hi = correlation_interval(0.5, 28)
    assert lo == pytest.approx(0.1563, abs=5e-4) and hi == pytest.approx(0.7360, abs=5e-4)


@pytest.mark.parametrize("r, n", [(0.3, 3), (1.0, 10), (-1.0, 24)])
def test_a_correlation_interval_where_fisher_is_undefined_is_the_whole_range(r, n):
    assert correlation_interval(r, n) == (-1.0, 1.0)
