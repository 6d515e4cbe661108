"""The label-budget planner: how many labels bring a run's corrected rate to a 95% interval of ±0.05."""

from __future__ import annotations

import math

from redline.evaluation.planner import Z95, plan_labels


def test_the_planner_matches_a_hand_computed_neyman_allocation():
    # 200 hits, 800 passes, no labels: both strata's failure share is 1/2 (Beta(1, 1)), S_h = 1/2.
    # rate 1/2; V = (0.05 / z)^2 - 0.25 / 1000; n = 0.5^2 / (V + 0.25 / 1000) = 0.25 / (0.05 / z)^2
    n = 0.25 / (0.05 / Z95) ** 2  # 384.1...
    assert 384 < n < 385
    plan = plan_labels(200, 800)
    assert plan.reachable
    assert (plan.hits_needed, plan.passes_needed) == (math.ceil(0.2 * n), math.ceil(0.8 * n)) == (77, 308)
    assert plan.more == 385


def test_the_planner_needs_fewer_labels_as_the_labels_agree_with_the_judge():
    def needed(hits_failed: int, passes_failed: int) -> int:
        plan = plan_labels(
            400, 1600, hits_reviewed=40, hits_failed=hits_failed, passes_reviewed=40, passes_failed=passes_failed
        )
        return plan.hits_needed + plan.passes_needed

    # reviewers agreeing with the judge: hits labelled failed, passes labelled passed
    halves, most, all_ = needed(20, 20), needed(32, 8), needed(40, 0)
    assert halves > most > all_
    assert plan_labels(400, 1600, hits_reviewed=40, hits_failed=40, passes_reviewed=40, passes_failed=0).more < (
        plan_labels(400, 1600, hits_reviewed=40, hits_failed=20, passes_reviewed=40, passes_failed=20).more
    )


def test_labels_already_made_count_towards_the_plan():
    before = plan_labels(200, 800)
    after = plan_labels(200, 800, hits_reviewed=50, hits_failed=25, passes_reviewed=50, passes_failed=25)
    assert after.more == before.more - 100


def test_a_run_too_small_for_the_target_says_labels_cannot_reach_it():
    plan = plan_labels(30, 30)
    assert not plan.reachable
    assert plan.floor > 0.05
    assert plan.more == 60  # labelling everything is the most labels can do
