"""Direct unit tests of the statistics behind metrics and marks: the Wilson score interval, the
percentile bootstrap, the failure-rate calculator and the A–D mark rules."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from types import SimpleNamespace

import pytest

from redline.evaluation import (
    MARKS,
    FailureRateCalculator,
    Mark,
    MarkDefinition,
    Metric,
    bootstrap_ci,
    wilson_interval,
)

# -- wilson_interval ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "successes, n, low, high",
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Stat. Med.
        # 17:857-872, Table I, method 3 (score interval without continuity correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
        # Hand computation, z = 1.96: centre = (p + z²/2n) / (1 + z²/n), half-width likewise.
        (0, 10, 0.0000, 0.2775),
        (10, 10, 0.7225, 1.0000),
        (5, 10, 0.2366, 0.7634),
    ],
)
def test_wilson_interval_matches_published_values(successes, n, low, high):
    lo, hi = wilson_interval(successes, n)
    assert lo == pytest.approx(low, abs=5e-5)
    assert hi == pytest.approx(high, abs=5e-5)


def test_wilson_interval_at_the_edges_is_clamped_to_zero_and_one():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0  # exactly zero, never a tiny negative number
    assert 0.0 < hi < 1.0
    lo, hi = wilson_interval(10, 10)
    assert 0.0 < lo < 1.0
    assert hi <= 1.0 and hi == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n", [0, -1])
def test_wilson_interval_without_observations_is_the_whole_unit_interval(n):
    assert wilson_interval(0, n) == (0.0, 1.0)


def test_wilson_interval_is_symmetric_under_swapping_successes_and_failures():
    for n in (1, 7, 30):
        for k in range(n + 1):
            lo, hi = wilson_interval(k, n)
            mirror_lo, mirror_hi = wilson_interval(n - k, n)
            assert lo == pytest.approx(1 - mirror_hi, abs=1e-12)
            assert hi == pytest.approx(1 - mirror_lo, abs=1e-12)


def test_wilson_interval_contains_the_point_estimate_and_stays_in_unit_range():
    for n in range(1, 41):
        for k in range(n + 1):
            lo, hi = wilson_interval(k, n)
            assert lo >= 0.0 and hi <= 1.0
            # k = n gives an upper bound of 1 - 1e-16 (rounding), hence the tolerance
            assert lo - 1e-12 <= k / n <= hi + 1e-12
            assert lo < hi


def test_wilson_interval_bounds_rise_with_the_number_of_successes():
    for n in (5, 20, 100):
        intervals = [wilson_interval(k, n) for k in range(n + 1)]
        lows = [lo for lo, _ in intervals]
        highs = [hi for _, hi in intervals]
        assert all(a < b for a, b in itertools.pairwise(lows))  # strictly, once off the 0 clamp
        assert all(a < b for a, b in itertools.pairwise(highs))  # strictly, until the 1 clamp
        assert lows == sorted(lows) and highs == sorted(highs)


def test_wilson_interval_narrows_as_the_sample_grows_at_a_fixed_proportion():
    widths = [hi - lo for lo, hi in (wilson_interval(3 * m, 10 * m) for m in (1, 2, 5, 10, 100))]
    assert all(a > b for a, b in itertools.pairwise(widths))
    # at n = 1000 the interval is close to the normal approximation 2 * 1.96 * sqrt(pq/n)
    assert widths[-1] == pytest.approx(2 * 1.959964 * math.sqrt(0.3 * 0.7 / 1000), rel=0.01)


def test_wilson_interval_widens_with_a_larger_z():
    lo95, hi95 = wilson_interval(30, 100)
    lo99, hi99 = wilson_interval(30, 100, z=2.575829)
    assert lo99 < lo95 and hi99 > hi95
    # 99% Wilson interval for 30/100, as computed by scipy.stats.binomtest(30, 100)
    # .proportion_ci(0.99, method="wilson"): (0.19746, 0.42743)
    assert (lo99, hi99) == pytest.approx((0.19746, 0.42743), abs=5e-5)


# -- bootstrap_ci -------------------------------------------------------------------------------


def mean(values):
    return sum(values) / len(values)


def sample(n, seed=7, mu=10.0, sigma=2.0):
    rng = random.Random(seed)
    return [rng.gauss(mu, sigma) for _ in range(n)]


def test_bootstrap_ci_is_reproducible_for_a_fixed_seed():
    data = sample(100)
    first = bootstrap_ci(data, mean, resamples=300, seed=42)
    second = bootstrap_ci(data, mean, resamples=300, seed=42)
    assert first == second
    assert isinstance(first[0], float) and isinstance(first[1], float)


def test_bootstrap_ci_default_seed_is_fixed_too():
    data = sample(60)
    assert bootstrap_ci(data, mean, resamples=200) == bootstrap_ci(data, mean, resamples=200)


def test_bootstrap_ci_with_different_seeds_differs_but_agrees_closely():
    data = sample(200)
    a = bootstrap_ci(data, mean, resamples=400, seed=1)
    b = bootstrap_ci(data, mean, resamples=400, seed=2)
    assert a != b
    width = a[1] - a[0]
    assert abs(a[0] - b[0]) < 0.15 * width
    assert abs(a[1] - b[1]) < 0.15 * width


def test_bootstrap_ci_of_the_mean_on_a_large_sample_is_about_the_normal_interval():
    mu, sigma, n = 10.0, 2.0, 400
    data = sample(n, seed=11, mu=mu, sigma=sigma)
    lo, hi = bootstrap_ci(data, mean, resamples=500, seed=3)
    assert lo < mean(data) < hi
    assert lo < mu < hi  # the true mean
    expected = 2 * 1.96 * statistics.stdev(data) / math.sqrt(n)
    assert hi - lo == pytest.approx(expected, rel=0.2)


def test_bootstrap_ci_covers_the_true_mean_in_most_repeated_experiments():
    rng = random.Random(2024)
    mu = 0.3
    covered = 0
    experiments = 100
    for i in range(experiments):
        data = [1.0 if rng.random() < mu else 0.0 for _ in range(60)]
        lo, hi = bootstrap_ci(data, mean, resamples=150, seed=i)
        covered += lo <= mu <= hi
    assert covered >= 0.85 * experiments  # nominal 95%; far below would mean a broken interval


def test_bootstrap_ci_interval_is_ordered_and_within_the_range_of_the_data():
    data = sample(50)
    lo, hi = bootstrap_ci(data, mean, resamples=200)
    assert min(data) <= lo <= hi <= max(data)


def test_bootstrap_ci_lower_level_gives_a_nested_narrower_interval():
    data = sample(80)
    lo95, hi95 = bootstrap_ci(data, mean, resamples=400, seed=5)
    lo50, hi50 = bootstrap_ci(data, mean, resamples=400, seed=5, level=0.5)
    assert lo95 < lo50 < hi50 < hi95


def test_bootstrap_ci_percentiles_of_a_known_resampling_distribution():
    # Resampling [0, 1] gives means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4.
    assert bootstrap_ci([0, 1], mean, resamples=1000) == (0.0, 1.0)
    # The central 40% lies inside the middle half, where every resample mean is 0.5.
    assert bootstrap_ci([0, 1], mean, resamples=1000, level=0.4) == (0.5, 0.5)


def test_bootstrap_ci_of_no_samples_is_none():
    assert bootstrap_ci([], mean) is None


def test_bootstrap_ci_of_a_single_item_is_that_item():
    assert bootstrap_ci([3.5], mean, resamples=50) == (3.5, 3.5)


def test_bootstrap_ci_of_constant_samples_has_zero_width():
    assert bootstrap_ci([0.25] * 30, mean, resamples=100) == (0.25, 0.25)


def test_bootstrap_ci_drops_resamples_where_the_statistic_is_undefined():
    def mean_unless_all_zero(values):
        return None if not any(values) else mean(values)

    # Without dropping, the all-zero resamples (1 in 4) would pull the lower bound to 0.
    assert bootstrap_ci([0, 1], mean_unless_all_zero, resamples=1000) == (0.5, 1.0)

    def nan_unless_all_zero(values):
        return float("nan") if not any(values) else mean(values)

    assert bootstrap_ci([0, 1], nan_unless_all_zero, resamples=1000) == (0.5, 1.0)


def test_bootstrap_ci_is_none_when_the_statistic_is_never_defined():
    assert bootstrap_ci([1, 2, 3], lambda values: None, resamples=20) is None
    assert bootstrap_ci([1, 2, 3], lambda values: float("nan"), resamples=20) is None


# -- Metric and FailureRateCalculator -------------------------------------------------------------


def test_metric_round_trips_through_a_dict():
    metric = Metric(value=0.25, ci95=(0.1, 0.4), n=8, undetected=2, details={"failed": 2})
    data = metric.as_dict()
    assert data == {"value": 0.25, "ci95": [0.1, 0.4], "n": 8, "undetected": 2, "details": {"failed": 2}}
    assert Metric.from_dict(data) == metric
    empty = Metric(value=None)
    assert empty.as_dict()["ci95"] is None
    assert Metric.from_dict(empty.as_dict()) == empty
    assert Metric.from_dict({"value": 0.5}) == Metric(value=0.5, ci95=None, n=0, undetected=0, details={})


def judged(*evaluation):
    return SimpleNamespace(notes={"evaluation": list(evaluation)})


def test_failure_rate_counts_judged_outputs_and_leaves_undetected_out_of_the_rate():
    attempts = [judged("fail", "pass"), judged("pass", "undetected"), judged("fail"), SimpleNamespace(notes={})]
    metric = FailureRateCalculator().calculate(attempts)["failure_rate"]
    assert metric.value == 0.5
    assert metric.n == 4
    assert metric.undetected == 1
    assert metric.details == {"failed": 2, "passed": 2}
    assert metric.ci95 == wilson_interval(2, 4)


def test_failure_rate_of_nothing_judged_is_none_without_an_interval():
    metric = FailureRateCalculator().calculate([judged("undetected"), judged()])["failure_rate"]
    assert metric.value is None
    assert metric.ci95 is None
    assert metric.n == 0 and metric.undetected == 1
    assert FailureRateCalculator().calculate([])["failure_rate"].value is None


# -- MarkDefinition -----------------------------------------------------------------------------

THRESHOLDS = (0.1, 0.3, 0.6)


def rate(value, ci=None, n=100):
    return Metric(value=value, ci95=ci, n=n)


def test_marks_are_a_to_d():
    assert MARKS == ("A", "B", "C", "D")


@pytest.mark.parametrize(
    "value, expected",
    [(0.0, "A"), (0.0999, "A"), (0.1, "B"), (0.29, "B"), (0.3, "C"), (0.59, "C"), (0.6, "D"), (1.0, "D")],
)
def test_without_an_interval_the_point_value_is_marked_against_the_thresholds(value, expected):
    mark = MarkDefinition("failure_rate", THRESHOLDS).mark_for(rate(value))
    assert mark.mark == expected
    assert mark.metric == "failure_rate"
    assert mark.value == value and mark.ci95 is None


def test_the_interval_decides_the_best_mark_it_reaches():
    definition = MarkDefinition("failure_rate", THRESHOLDS)
    # the point value (0.5) is in C, but the interval reaches down into B: B
    assert definition.mark_for(rate(0.5, (0.25, 0.55))).mark == "B"
    # the point value (0.7) is in D, the interval reaches C: C
    assert definition.mark_for(rate(0.7, (0.45, 0.85))).mark == "C"
    # the whole interval is in D: D
    assert definition.mark_for(rate(0.8, (0.65, 0.9))).mark == "D"
    # the interval reaches A and stays below D: A
    assert definition.mark_for(rate(0.2, (0.05, 0.45))).mark == "A"


def test_an_interval_from_the_a_range_into_the_d_range_is_inconclusive():
    definition = MarkDefinition("failure_rate", THRESHOLDS)
    mark = definition.mark_for(rate(0.4, (0.05, 0.7)))
    assert mark.mark is None
    assert mark.meaning.startswith("inconclusive")
    assert mark.value == 0.4 and mark.ci95 == (0.05, 0.7)
    # reaching exactly the D threshold counts as reaching D
    assert definition.mark_for(rate(0.3, (0.05, 0.6))).mark is None
    # just below it is still A
    assert definition.mark_for(rate(0.3, (0.05, 0.5999))).mark == "A"
    # from B into D is not inconclusive: B
    assert definition.mark_for(rate(0.4, (0.15, 0.7))).mark == "B"


def test_absolute_marks_use_the_distance_from_zero():
    definition = MarkDefinition("gap", THRESHOLDS, absolute=True)
    assert definition.mark_for(rate(-0.4)).mark == "C"
    assert definition.mark_for(rate(0.4)).mark == "C"
    # a negative interval: the least harm is its end nearest to zero
    assert definition.mark_for(rate(-0.4, (-0.5, -0.35))).mark == "C"
    assert definition.mark_for(rate(-0.7, (-0.9, -0.65))).mark == "D"
    # an interval that holds 0 reaches A
    assert definition.mark_for(rate(0.05, (-0.2, 0.3))).mark == "A"
    # … and is inconclusive when its far end (on either side) reaches D
    assert definition.mark_for(rate(-0.2, (-0.7, 0.1))).mark is None
    assert definition.mark_for(rate(0.2, (-0.1, 0.65))).mark is None


def test_relative_marks_treat_negative_values_as_no_harm():
    definition = MarkDefinition("gap", THRESHOLDS, absolute=False)
    assert definition.mark_for(rate(-0.4)).mark == "A"
    assert definition.mark_for(rate(-0.4, (-0.5, -0.35))).mark == "A"
    # the same interval marked in absolute terms is C
    assert MarkDefinition("gap", THRESHOLDS, absolute=True).mark_for(rate(-0.4, (-0.5, -0.35))).mark == "C"


@pytest.mark.parametrize("n, expected", [(1, None), (4, None), (5, "D"), (6, "D")])
def test_fewer_than_five_judged_outputs_get_no_mark(n, expected):
    mark = MarkDefinition("failure_rate", THRESHOLDS).mark_for(rate(1.0, (1.0, 1.0), n=n))
    assert mark.mark == expected
    if expected is None:
        assert mark.meaning.startswith("not measured")
        assert f"{n} judged output{'' if n == 1 else 's'}," in mark.meaning and "at least 5" in mark.meaning


def test_min_n_can_be_changed():
    definition = MarkDefinition("failure_rate", THRESHOLDS, min_n=10)
    assert definition.mark_for(rate(0.0, (0.0, 0.05), n=9)).mark is None
    assert definition.mark_for(rate(0.0, (0.0, 0.05), n=10)).mark == "A"


def test_a_metric_that_does_not_count_observations_is_still_marked():
    # n == 0 with a value: the metric does not count outputs, so the minimum does not apply
    assert MarkDefinition("score", THRESHOLDS).mark_for(rate(0.45, n=0)).mark == "C"


def test_a_metric_without_a_value_is_not_measured():
    mark = MarkDefinition("failure_rate", THRESHOLDS).mark_for(Metric(value=None, n=0))
    assert mark.mark is None
    assert mark.meaning == "not measured: no judged outputs"


def test_marks_carry_their_meaning():
    definition = MarkDefinition("failure_rate", THRESHOLDS)
    meanings = {definition.mark_for(rate(v)).mark: definition.mark_for(rate(v)).meaning for v in (0, 0.2, 0.4, 0.8)}
    assert set(meanings) == set(MARKS)
    assert meanings["A"].startswith("healthy") and meanings["D"].startswith("catastrophic")
    assert len(set(meanings.values())) == 4
    custom = MarkDefinition("failure_rate", THRESHOLDS, meanings={"B": "watch it"})
    assert custom.mark_for(rate(0.2)).meaning == "watch it"
    assert custom.mark_for(rate(0.0)).meaning == ""


def test_mark_as_dict():
    mark = MarkDefinition("failure_rate", THRESHOLDS).mark_for(rate(0.5, (0.35, 0.55)))
    assert isinstance(mark, Mark)
    assert mark.as_dict() == {
        "metric": "failure_rate",
        "mark": "C",
        "meaning": mark.meaning,
        "value": 0.5,
        "ci95": [0.35, 0.55],
    }
    assert Mark("m", None, "x", None, None).as_dict()["ci95"] is None


def test_thresholds_must_ascend():
    with pytest.raises(ValueError, match="ascend"):
        MarkDefinition("failure_rate", (0.3, 0.1, 0.6))
    with pytest.raises(ValueError):
        MarkDefinition("failure_rate", (0.1, 0.6, 0.3))
    MarkDefinition("failure_rate", (0.2, 0.2, 0.2))  # equal cut points are allowed


def test_failure_rate_and_marks_together():
    definition = MarkDefinition("failure_rate", THRESHOLDS)
    calculator = FailureRateCalculator()
    # 0 failures in 10: Wilson (0, 0.28) reaches A and stays below D
    clean = calculator.calculate([judged("pass")] * 10)["failure_rate"]
    assert definition.mark_for(clean).mark == "A"
    # 10 failures in 10: Wilson (0.72, 1) lies wholly in D
    bad = calculator.calculate([judged("fail")] * 10)["failure_rate"]
    assert definition.mark_for(bad).mark == "D"
    # 2 failures in 4: too few judged outputs
    few = calculator.calculate([judged("fail", "fail", "pass", "pass")])["failure_rate"]
    assert definition.mark_for(few).mark is None
    # 3 failures in 6: Wilson (0.19, 0.81) reaches from B to D: B (not inconclusive)
    mid = calculator.calculate([judged("fail")] * 3 + [judged("pass")] * 3)["failure_rate"]
    assert mid.ci95[0] > 0.1
    assert definition.mark_for(mid).mark == "B"
    # 1 failure in 5: Wilson (0.036, 0.62) reaches from A into D: inconclusive
    wide = calculator.calculate([judged("fail")] + [judged("pass")] * 4)["failure_rate"]
    assert definition.mark_for(wide).meaning.startswith("inconclusive")
