"""Cost before you spend: estimates, the plan, and a budget that stops a run cleanly (resumable)."""

from __future__ import annotations

import sys
import types

import pytest

from fakes import ScriptedGenerator, user_text
from helpers.mock_openai import MockOpenAI
from redline.attempt import Attempt, Conversation, Message, Turn
from redline.engine import ScanConfig, scan
from redline.engine.budget import (
    BUDGET_REACHED,
    Budget,
    BudgetError,
    Prices,
    RequestShape,
    conversation_chars,
    strategy_queries,
    text_tokens,
)
from redline.engine.pipeline import build_probes
from redline.engine.plan import plan_scan
from redline.generators import get_generator
from redline.generators.usage import CallUsage, metering, report_model_outputs, report_response, stop_metering
from redline.probes import get_probe
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, Store


def echo(name: str = "test.counting") -> ScriptedGenerator:
    return ScriptedGenerator(user_text, name=name, delay=0.005)


def test_prices_parse_and_refuse() -> None:
    assert Prices.parse("2.5, 10") == Prices(2.5, 10.0)
    assert Prices(2.5, 10).cost(1_000_000, 100_000) == pytest.approx(3.5)
    for bad in ("2.5", "a,b", "1,2,3", "-1,2", "inf,1"):
        with pytest.raises(BudgetError) as info:
            Prices.parse(bad)
        assert "--price-per-mtok" in str(info.value)


def test_budget_options_are_checked() -> None:
    with pytest.raises(BudgetError, match="--price-per-mtok"):
        Budget(max_usd=1.0)
    with pytest.raises(BudgetError, match="--budget-usd"):
        Budget(max_usd=0.0, prices=Prices(1, 1))
    with pytest.raises(BudgetError, match="--max-requests"):
        Budget(max_requests=0)


def test_estimate_of_one_attempt() -> None:
    probe = get_probe("harmful.Requests")
    chars = 41
    assert text_tokens(chars) == 11
    single = RequestShape(generations=3, max_tokens=100, supports_n=False).estimate(probe, chars)
    assert (single.requests, single.prompt_tokens, single.output_tokens) == (3, 33, 300)
    batched = RequestShape(generations=3, max_tokens=100, supports_n=True).estimate(probe, chars)
    assert (batched.requests, batched.prompt_tokens, batched.output_tokens) == (1, 11, 300)
    conversation = Conversation(turns=[Turn("system", Message(text="abcd")), Turn("user", Message(text="efghijkl"))])
    assert conversation_chars(conversation) == 12


def test_plan_counts_every_attempt_and_prices_them() -> None:
    config = ScanConfig(model="openai:x", probes="harmful.Requests,encoding.Base64", generations=2)
    plan = plan_scan(config, Prices(1.0, 2.0))
    rows = {row.probe: row for row in plan.probes}
    assert rows["harmful.Requests"].attempts == 24 and rows["encoding.Base64"].attempts == 12
    assert plan.shape.supports_n and plan.shape.max_tokens == 256  # openai: n in one request, max_tokens unset
    assert plan.total.requests == 36
    assert plan.total.output_tokens == 36 * 2 * 256
    chars = sum(conversation_chars(a.prompt) for a in get_probe("harmful.Requests").create_attempts())
    assert rows["harmful.Requests"].estimate.prompt_tokens >= chars // 4
    data = plan.as_dict()
    assert data["total"]["cost_usd"] == pytest.approx(
        (plan.total.prompt_tokens * 1.0 + plan.total.output_tokens * 2.0) / 1e6, abs=1e-6
    )
    # a resumed run plans only what is left
    left = plan_scan(config, finished=lambda probe: set(range(20)) if probe == "harmful.Requests" else set())
    assert {r.probe: r.attempts for r in left.probes} == {"harmful.Requests": 4, "encoding.Base64": 12}


def test_plan_uses_the_family_max_tokens_and_generations() -> None:
    plan = plan_scan(ScanConfig(model="test.echo", probes="encoding.Base64", generator_options={"max_tokens": 7}))
    assert plan.total.output_tokens == 12 * 7


def test_plan_of_a_strategy_multiplies_by_its_query_budget() -> None:
    base = plan_scan(ScanConfig(model="test.echo", probes="harmful.Requests", sample=2))
    bound = plan_scan(
        ScanConfig(model="test.echo", probes="harmful.Requests", sample=2, strategy="escalation", max_turns=3)
    )
    assert bound.bounded  # the strategy's own query_bound: max_turns × generations
    # per attempt: 3 target queries, each with an attacker and a judge request
    assert bound.total.requests == base.total.requests * 3 * 3
    assert bound.total.prompt_tokens > 9 * base.total.prompt_tokens  # the dialogue grows
    capped = plan_scan(
        ScanConfig(model="test.echo", probes="harmful.Requests", sample=2, strategy="escalation", max_queries=2)
    )
    assert capped.total.requests == base.total.requests * 2 * 3


def test_plan_of_an_agent_probe_counts_every_step_of_its_loop() -> None:
    plan = plan_scan(ScanConfig(model="test.agent:careful", probes="agent.DestructiveAction", sample=2, generations=2))
    (row,) = plan.probes
    # each generation may take max_steps model turns, each resending the conversation
    assert row.estimate.requests == 2 * 5 * 2
    assert row.estimate.output_tokens == row.estimate.requests * plan.shape.max_tokens
    assert row.estimate.prompt_tokens > row.estimate.requests * 10


def test_usage_reports_go_to_the_current_call_only() -> None:
    report_response({"prompt_tokens": 3, "completion_tokens": 4})  # no call metered: ignored
    usage = CallUsage()
    token = metering(usage)
    try:
        report_response({"prompt_tokens": 3, "completion_tokens": 4})
        report_response(None)
        report_model_outputs(2)
    finally:
        stop_metering(token)
    report_model_outputs(5)
    assert (usage.responses, usage.reported, usage.prompt_tokens, usage.completion_tokens) == (2, 1, 3, 4)
    assert usage.model_outputs == 2


async def test_max_requests_stops_cleanly_then_resume_continues_under_a_new_budget(tmp_path) -> None:
    store = Store(tmp_path / "r.db")
    config = ScanConfig(model="test.counting", probes="harmful.Requests", concurrency=4)
    budget = Budget(max_requests=5)
    gen = echo()
    run_id = await scan(config, store, generator=gen, budget=budget)
    run = store.get_run(run_id)
    assert run.status == RUN_INTERRUPTED
    assert run.message is not None and run.message.startswith(BUDGET_REACHED) and "5 of 5 requests" in run.message
    assert budget.stopped == run.message
    attempts = list(store.iter_attempts(run_id))
    assert len(gen.calls) == 5 and len(attempts) == 5  # never past the limit; every finished attempt stored
    assert all(not a.notes.get("error") for a in attempts)
    assert store.probe_results(run_id) == {}  # no phase 4 for a stopped run

    more = Budget(max_requests=100)
    gen2 = echo()
    assert await scan(None, store, resume=run_id, generator=gen2, budget=more) == run_id
    assert store.get_run(run_id).status == RUN_COMPLETE
    assert len(gen2.calls) == 19 and more.spent.requests == 19 and more.stopped is None
    assert len(list(store.iter_attempts(run_id))) == 24


async def test_answers_from_the_cache_cost_nothing(tmp_path) -> None:
    store = Store(tmp_path / "r.db")
    config = ScanConfig(model="test.counting", probes="encoding.Base64", concurrency=4)
    await scan(config, store, generator=echo())
    budget = Budget(max_requests=1)
    gen = echo()
    run_id = await scan(config, store, generator=gen, budget=budget)
    assert store.get_run(run_id).status == RUN_COMPLETE  # every answer cached: the budget never stops it
    assert gen.calls == [] and budget.spent.requests == 0


async def test_budget_usd_counts_the_usage_the_endpoint_reports(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REDLINE_TEST_KEY", "k")
    prices = Prices(1_000.0, 2_000.0)  # per million tokens: a few tokens cost a few thousandths
    with MockOpenAI(responder=lambda messages, body: "no") as server:
        store = Store(tmp_path / "r.db")
        config = ScanConfig(
            model="openai:mock",
            probes="harmful.Requests",
            concurrency=3,
            generator_options={"base_url": server.base_url, "api_key_env": "REDLINE_TEST_KEY", "max_tokens": 5},
        )
        budget = Budget(max_usd=0.2, prices=prices)
        run_id = await scan(config, store, budget=budget)
        answered = [server.answer("/v1/chat/completions", body)["usage"] for body in server.requests]
    reported_prompt = sum(u["prompt_tokens"] for u in answered)
    reported_output = sum(u["completion_tokens"] for u in answered)
    assert budget.spent.requests == len(server.requests) > 0
    assert (budget.spent.prompt_tokens, budget.spent.output_tokens) == (reported_prompt, reported_output)
    assert budget.spent_usd == pytest.approx(prices.cost(reported_prompt, reported_output))
    assert budget.spent_usd <= 0.2
    run = store.get_run(run_id)
    assert run.status == RUN_INTERRUPTED and run.message.startswith(BUDGET_REACHED)
    assert len(list(store.iter_attempts(run_id))) == len(server.requests) < 24


async def test_an_attempt_the_budget_cannot_cover_is_not_started(tmp_path) -> None:
    store = Store(tmp_path / "r.db")
    config = ScanConfig(model="test.counting", probes="harmful.Requests", generations=3)
    gen = echo()  # no n: three requests per attempt
    budget = Budget(max_requests=2)
    run_id = await scan(config, store, generator=gen, budget=budget)
    assert gen.calls == [] and list(store.iter_attempts(run_id)) == []
    assert store.get_run(run_id).message.startswith(BUDGET_REACHED)


def test_release_of_an_unknown_attempt_is_harmless() -> None:
    budget = Budget(max_requests=3)
    budget.release(Attempt())
    assert not budget.busy


def test_plan_of_a_single_turn_strategy_without_attacker() -> None:
    config = ScanConfig(model="test.echo", probes="harmful.Requests", sample=2, strategy="best-of-n")
    (probe,) = build_probes(config)
    queries, bounded = strategy_queries(probe, 1) or (0, False)
    plan = plan_scan(config)
    assert bounded and plan.total.requests == 2 * queries * 2  # target and judge, no attacker
    base = plan_scan(ScanConfig(model="test.echo", probes="harmful.Requests", sample=2))
    # single-turn: every target query sends the prompt once, the judge the prompt and an output
    assert plan.total.prompt_tokens == queries * (2 * base.total.prompt_tokens + 2 * 256)  # 2 attempts


async def test_litellm_reports_its_usage_into_a_metered_call(monkeypatch) -> None:
    module = types.ModuleType("litellm")

    async def acompletion(**kwargs):
        return {"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}

    module.acompletion = acompletion  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "litellm", module)
    generator = get_generator("litellm:p/m")
    usage = CallUsage()
    token = metering(usage)
    try:
        (out,) = await generator.generate(Conversation(turns=[Turn("user", Message(text="hi"))]), 1)
    finally:
        stop_metering(token)
    assert out is not None and out.text == "ok"
    assert (usage.responses, usage.reported, usage.prompt_tokens, usage.completion_tokens) == (1, 1, 7, 3)
