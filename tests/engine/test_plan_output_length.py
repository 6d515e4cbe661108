"""``--plan`` counts the output length every request carries: a remote family's default, a probe's
larger need, or ``--max-tokens`` over both."""

from __future__ import annotations

from redline.engine import ScanConfig
from redline.engine.plan import plan_scan
from redline.generators.output import DEFAULT_MAX_TOKENS
from redline.probes import get_probe

PROBES = "consumption.Repetition,harmful.Requests"


def test_the_plan_counts_the_default_and_a_probes_larger_need():
    plan = plan_scan(ScanConfig(model="openai:m", probes=PROBES, sample=2))
    rows = {row.probe: row for row in plan.probes}
    need = get_probe("consumption.Repetition").output_tokens
    assert need is not None and need > DEFAULT_MAX_TOKENS
    assert not plan.shape.assumed and plan.shape.max_tokens == DEFAULT_MAX_TOKENS
    assert rows["consumption.Repetition"].max_tokens == need
    assert rows["consumption.Repetition"].estimate.output_tokens == 2 * need
    assert rows["harmful.Requests"].max_tokens == DEFAULT_MAX_TOKENS
    assert rows["harmful.Requests"].estimate.output_tokens == 2 * DEFAULT_MAX_TOKENS
    assert [row.probe for row in plan.raised] == ["consumption.Repetition"]
    assert {p["probe"]: p["max_tokens"] for p in plan.as_dict()["probes"]} == {
        "consumption.Repetition": need,
        "harmful.Requests": DEFAULT_MAX_TOKENS,
    }


def test_max_tokens_given_holds_for_every_probe_in_the_plan():
    plan = plan_scan(ScanConfig(model="openai:m", probes=PROBES, sample=2, generator_options={"max_tokens": 40}))
    assert {row.max_tokens for row in plan.probes} == {40}
    assert plan.total.output_tokens == 4 * 40 and not plan.raised


def test_a_family_that_does_not_follow_probe_needs_is_planned_at_its_own_length():
    plan = plan_scan(ScanConfig(model="test.echo", probes=PROBES, sample=2, generator_options={"max_tokens": 7}))
    assert {row.max_tokens for row in plan.probes} == {7}
