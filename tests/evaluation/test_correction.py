"""Failure rates corrected for judge error: the Rogan–Gladen estimator with its two-sample
parametric bootstrap, and the estimator from human reviews of a sample of the judged outputs.
Every expected value is worked out by hand in the comment next to it."""

from __future__ import annotations

import itertools
import random

import pytest

from redline.evaluation import wilson_interval
from redline.evaluation.statistics import (
    MIN_INFORMEDNESS,
    CorrectedRate,
    review_corrected_rate,
    rogan_gladen,
    validation_priors,
)

# -- Rogan–Gladen ---------------------------------------------------------------------------------


def test_a_perfect_judge_leaves_the_rate_unchanged():
    result = rogan_gladen(30, 100, tp=50, fn=0, tn=50, fp=0)
    assert result.value == 0.3  # (0.3 - (1 - 1)) / (1 + 1 - 1), exactly
    assert (result.sensitivity, result.specificity, result.reason) == (1.0, 1.0, None)
    lo, hi = result.ci95
    w_lo, w_hi = wilson_interval(30, 100)
    # the judge adds (almost) nothing: the interval is the rate's own sampling interval
    assert lo <= w_lo < w_hi <= hi
    assert hi - lo == pytest.approx(w_hi - w_lo, rel=0.1)


def test_the_estimator_by_hand():
    # sensitivity 80/100 = 0.8, specificity 90/100 = 0.9: (0.3 + 0.9 - 1) / (0.8 + 0.9 - 1) = 0.2 / 0.7
    result = rogan_gladen(30, 100, tp=80, fn=20, tn=90, fp=10)
    assert result.value == pytest.approx(2 / 7)
    assert (result.sensitivity, result.specificity) == (0.8, 0.9)
    lo, hi = result.ci95
    assert lo < 2 / 7 < hi
    # wider than the raw rate's interval stretched by 1 / 0.7: the judge's figures are uncertain too
    w_lo, w_hi = wilson_interval(30, 100)
    assert hi - lo > (w_hi - w_lo) / 0.7


def test_a_known_judge_recovers_a_simulated_true_rate():
    """A judge with sensitivity 0.85 and specificity 0.8 over outputs whose true failure rate is
    0.3 reports about 0.3 * 0.85 + 0.7 * 0.2 = 0.395; the raw interval then misses the truth,
    the corrected one covers it in about 95% of repeated experiments."""
    true_rate, sens, spec, n, validated = 0.3, 0.85, 0.8, 400, 200
    rng = random.Random(11)
    covered = raw_covered = 0
    experiments = 80
    for _ in range(experiments):
        failing = sum(rng.random() < true_rate for _ in range(n))
        hits = sum(rng.random() < sens for _ in range(failing)) + sum(rng.random() > spec for _ in range(n - failing))
        tp = sum(rng.random() < sens for _ in range(validated))
        tn = sum(rng.random() < spec for _ in range(validated))
        result = rogan_gladen(hits, n, tp=tp, fn=validated - tp, tn=tn, fp=validated - tn, resamples=400)
        lo, hi = result.ci95
        covered += lo <= true_rate <= hi
        w_lo, w_hi = wilson_interval(hits, n)
        raw_covered += w_lo <= true_rate <= w_hi
    assert covered >= 0.85 * experiments
    assert raw_covered <= 0.2 * experiments


def test_the_interval_widens_as_the_validation_shrinks():
    # the same sensitivity (0.8) and specificity (0.9) measured on fewer and fewer rows
    widths = []
    for rows in (2000, 200, 40, 10):
        result = rogan_gladen(30, 100, tp=8 * rows // 10, fn=2 * rows // 10, tn=9 * rows // 10, fp=rows // 10)
        assert result.value == pytest.approx(2 / 7)
        widths.append(result.ci95[1] - result.ci95[0])
    assert all(a < b for a, b in itertools.pairwise(widths)), widths


def test_the_estimate_is_clipped_to_zero_and_one_with_an_honest_interval():
    # 2% observed with a false-positive rate of 10%: (0.02 - 0.1) / 0.7 < 0 -> 0
    low = rogan_gladen(2, 100, tp=80, fn=20, tn=90, fp=10)
    assert low.value == 0.0
    assert low.ci95[0] == 0.0 and low.ci95[1] > 0.0  # clipped, but not claiming certainty
    # the Wilson upper bound of 2/100 carried through the correction: (w_hi - 0.02) / 0.7 from 0
    assert low.ci95[1] >= (wilson_interval(2, 100)[1] - 0.02) / 0.7 - 1e-12
    # everything observed failing with a sensitivity of 0.8: (1 - 0.1) / 0.7 > 1 -> 1
    high = rogan_gladen(100, 100, tp=80, fn=20, tn=90, fp=10)
    assert high.value == 1.0
    assert high.ci95[1] == 1.0 and high.ci95[0] < 1.0
    for result in (low, high):
        assert 0.0 <= result.ci95[0] <= result.value <= result.ci95[1] <= 1.0


def test_a_judge_no_better_than_chance_gives_no_corrected_rate():
    # 0.50 + 0.52 - 1 = 0.02 <= 0.05
    result = rogan_gladen(30, 100, tp=50, fn=50, tn=52, fp=48)
    assert result == CorrectedRate(
        None,
        None,
        reason=f"judge hardly better than chance (sensitivity 0.50 + specificity 0.52 - 1 <= {MIN_INFORMEDNESS})",
        sensitivity=0.5,
        specificity=0.52,
    )
    # a judge that is wrong more often than right is not inverted either
    assert rogan_gladen(30, 100, tp=20, fn=80, tn=30, fp=70).value is None
    # just above the threshold: corrected (0.6 + 0.46 - 1 = 0.06)
    assert rogan_gladen(50, 100, tp=60, fn=40, tn=46, fp=54).value is not None


def test_no_judged_outputs_or_a_one_sided_validation_gives_no_corrected_rate():
    assert rogan_gladen(0, 0, tp=8, fn=2, tn=9, fp=1).reason == "no judged outputs"
    no_negatives = rogan_gladen(3, 10, tp=8, fn=2, tn=0, fp=0)
    assert no_negatives.value is None and no_negatives.reason == "the validation has no truly passing outputs"
    no_positives = rogan_gladen(3, 10, tp=0, fn=0, tn=9, fp=1)
    assert no_positives.value is None and no_positives.reason == "the validation has no truly failing outputs"


def test_the_bootstrap_is_seeded():
    a = rogan_gladen(30, 100, tp=40, fn=10, tn=45, fp=5)
    assert a == rogan_gladen(30, 100, tp=40, fn=10, tn=45, fp=5)
    b = rogan_gladen(30, 100, tp=40, fn=10, tn=45, fp=5, seed=1)
    assert a.value == b.value and a.ci95 != b.ci95
    assert a.ci95 == pytest.approx(b.ci95, abs=0.03)


# -- from reviews ---------------------------------------------------------------------------------


def test_with_every_output_reviewed_the_rate_is_the_reviewers():
    # 4 hits (3 truly failed) and 6 passes (1 truly failed), all reviewed: 4 / 10
    result = review_corrected_rate(4, 6, hits_reviewed=4, hits_failed=3, passes_reviewed=6, passes_failed=1)
    assert result.value == 0.4
    assert result.sensitivity == 3 / 4  # 3 of the 4 true failures scored a hit
    assert result.specificity == 5 / 6  # 5 of the 6 true passes scored a pass
    lo, hi = result.ci95
    assert lo < 0.4 < hi


def test_unreviewed_outputs_count_ppv_and_the_false_omission_rate():
    # PPV = (4 + 1) / (4 + 2) = 5/6 for the 6 unreviewed hits, 1 - NPV = (0 + 1) / (8 + 2) = 0.1
    # for the 82 unreviewed passes: (4 + 6 * 5/6 + 0 + 82 * 0.1) / 100 = 17.2 / 100
    result = review_corrected_rate(10, 90, hits_reviewed=4, hits_failed=4, passes_reviewed=8, passes_failed=0)
    assert result.value == pytest.approx(0.172)
    assert result.sensitivity == pytest.approx(9 / 17.2)
    assert result.specificity == pytest.approx((90 - 8.2) / (100 - 17.2))
    lo, hi = result.ci95
    assert lo < 0.172 < hi


def test_a_stratum_without_reviews_counts_one_half_per_output():
    # only the hits were reviewed (2 of 2 truly failed): each of the 8 passes counts 1/2
    result = review_corrected_rate(2, 8, hits_reviewed=2, hits_failed=2, passes_reviewed=0, passes_failed=0)
    assert result.value == pytest.approx((2 + 8 * 0.5) / 10)
    lo, hi = result.ci95
    assert hi - lo > 0.5  # knowing nothing about the passes is said by the interval


def test_more_reviews_narrow_the_interval():
    widths = []
    for reviewed in (5, 20, 80):
        result = review_corrected_rate(
            100,
            900,
            hits_reviewed=reviewed,
            hits_failed=reviewed * 4 // 5,
            passes_reviewed=reviewed,
            passes_failed=reviewed // 20,
        )
        widths.append(result.ci95[1] - result.ci95[0])
    assert all(a > b for a, b in itertools.pairwise(widths)), widths


def test_reviews_without_judged_or_reviewed_outputs_give_no_rate_and_bad_counts_raise():
    none_judged = review_corrected_rate(0, 0, hits_reviewed=0, hits_failed=0, passes_reviewed=0, passes_failed=0)
    assert none_judged.value is None and none_judged.reason == "no judged outputs"
    none_reviewed = review_corrected_rate(3, 7, hits_reviewed=0, hits_failed=0, passes_reviewed=0, passes_failed=0)
    assert none_reviewed.value is None and none_reviewed.reason == "no reviewed outputs"
    with pytest.raises(ValueError):
        review_corrected_rate(3, 7, hits_reviewed=4, hits_failed=0, passes_reviewed=0, passes_failed=0)
    with pytest.raises(ValueError):
        review_corrected_rate(3, 7, hits_reviewed=1, hits_failed=2, passes_reviewed=0, passes_failed=0)


def test_the_review_bootstrap_is_seeded():
    args = {"hits_reviewed": 5, "hits_failed": 4, "passes_reviewed": 10, "passes_failed": 1}
    assert review_corrected_rate(20, 80, **args) == review_corrected_rate(20, 80, **args)
    assert review_corrected_rate(20, 80, **args).ci95 != review_corrected_rate(20, 80, seed=3, **args).ci95


def test_reviews_of_a_stratified_sample_recover_a_simulated_true_rate():
    """Outputs failing with probability 0.2, a judge with sensitivity 0.7 and a false-positive
    rate of 0.15 (it reports about 0.26); a reviewer labels 15 hits and 25 passes drawn at random.
    The interval covers the true rate in about 95% of repeated experiments."""
    rng = random.Random(5)
    covered, experiments, true_rate = 0, 100, 0.2
    for _ in range(experiments):
        failing = [rng.random() < true_rate for _ in range(300)]
        hit = [(f and rng.random() < 0.7) or (not f and rng.random() < 0.15) for f in failing]
        hits = [i for i, h in enumerate(hit) if h]
        passes = [i for i, h in enumerate(hit) if not h]
        reviewed_hits, reviewed_passes = rng.sample(hits, 15), rng.sample(passes, 25)
        result = review_corrected_rate(
            len(hits),
            len(passes),
            hits_reviewed=15,
            hits_failed=sum(failing[i] for i in reviewed_hits),
            passes_reviewed=25,
            passes_failed=sum(failing[i] for i in reviewed_passes),
            resamples=300,
        )
        covered += result.ci95[0] <= true_rate <= result.ci95[1]
    assert covered >= 0.85 * experiments


def test_validation_priors_make_a_few_reviews_adjust_rather_than_replace_the_validation() -> None:
    # a judge validated at sensitivity 0.9 / specificity 0.9 scored 80 of 100 outputs a hit
    priors = validation_priors(80, 100, tp=90, fn=10, tn=90, fp=10)
    (pa, pb), (fa, fb) = priors
    implied_prevalence = (0.8 + 0.9 - 1) / (0.9 + 0.9 - 1)  # Rogan-Gladen: 0.875
    ppv = 0.9 * implied_prevalence / 0.8
    assert abs(pa / (pa + pb) - (1 + 10 * ppv) / 12) < 1e-9
    assert fa / (fa + fb) < 0.5 < pa / (pa + pb)
    # one review that says the judge was wrong on a hit
    flat = review_corrected_rate(80, 20, hits_reviewed=1, hits_failed=0, passes_reviewed=0, passes_failed=0)
    informed = review_corrected_rate(
        80,
        20,
        hits_reviewed=1,
        hits_failed=0,
        passes_reviewed=0,
        passes_failed=0,
        ppv_prior=priors[0],
        false_omission_prior=priors[1],
    )
    assert flat.value is not None and informed.value is not None
    assert flat.value < 0.5 < informed.value  # the flat prior lets one label halve the rate
    assert abs(informed.value - 0.875) < 0.15
    # with every output reviewed, the prior no longer matters
    everything = review_corrected_rate(
        80,
        20,
        hits_reviewed=80,
        hits_failed=60,
        passes_reviewed=20,
        passes_failed=2,
        ppv_prior=priors[0],
        false_omission_prior=priors[1],
    )
    assert everything.value == 0.62
    assert validation_priors(5, 10, tp=5, fn=5, tn=5, fp=5) == ((1.0, 1.0), (1.0, 1.0))  # no better than chance


@pytest.mark.parametrize(
    ("hits", "passes", "hr", "hf", "pr", "pf"),
    [(9, 1, 3, 2, 1, 0), (9, 1, 2, 0, 0, 0), (50, 50, 10, 9, 10, 1), (3, 97, 3, 0, 20, 2)],
)
def test_the_review_interval_contains_its_estimate(hits, passes, hr, hf, pr, pf) -> None:
    for priors in (((1.0, 1.0), (1.0, 1.0)), validation_priors(hits, hits + passes, tp=88, fn=12, tn=88, fp=12)):
        result = review_corrected_rate(
            hits,
            passes,
            hits_reviewed=hr,
            hits_failed=hf,
            passes_reviewed=pr,
            passes_failed=pf,
            ppv_prior=priors[0],
            false_omission_prior=priors[1],
        )
        assert result.value is not None and result.ci95 is not None
        assert result.ci95[0] <= result.value <= result.ci95[1]
