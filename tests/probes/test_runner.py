"""AttemptRunner.run_all: a worker sends its next request while the attempt before is finished."""

from __future__ import annotations

import asyncio

import pytest

from fakes import ScriptedGenerator, user_text
from redline.attempt import Attempt
from redline.detectors.refusal import Compliance
from redline.probes import PromptProbe
from redline.probes.runner import AttemptRunner, waiting_bound


class Three(PromptProbe):
    name = "test.Three"
    goal = "three prompts"
    prompts = ("first", "second", "third")
    recommended_detectors = ("refusal.Compliance",)


async def test_the_next_request_leaves_before_the_previous_attempt_is_stored():
    second_sent = asyncio.Event()

    def reply(conversation) -> str:
        if user_text(conversation) == "second":
            second_sent.set()
        return "answer"

    stored: list[str] = []

    async def on_done(attempt: Attempt) -> None:
        # storing "first" waits until "second" has been sent: with one worker this only ends if
        # the worker did not wait for this store before sending its next request
        if attempt.seq == 0:
            await asyncio.wait_for(second_sent.wait(), timeout=5)
        stored.append(user_text(attempt.prompt))

    probe = Three()
    runner = AttemptRunner(ScriptedGenerator(reply), concurrency=1, on_done=on_done)
    await runner.start_detectors([probe])
    done = await runner.run_all([(probe, a) for a in probe.create_attempts()])
    assert [a.seq for a in done] == [0, 1, 2]  # kept in the order given
    assert all(a.notes["evaluation"] for a in done) and sorted(stored) == ["first", "second", "third"]


async def test_a_failure_while_finishing_stops_the_run_with_its_own_error():
    async def on_done(attempt: Attempt) -> None:
        raise OSError("disk full")

    probe = Three()
    runner = AttemptRunner(ScriptedGenerator("answer"), concurrency=2, on_done=on_done)
    await runner.start_detectors([probe])
    with pytest.raises(OSError, match="disk full"):
        await runner.run_all([(probe, a) for a in probe.create_attempts()])


async def test_attempts_are_scored_concurrency_at_a_time_and_a_bounded_backlog_waits_to_be_stored(monkeypatch):
    scoring = scoring_peak = waiting = waiting_peak = 0
    release = asyncio.Event()

    async def adetect(self, attempt: Attempt) -> list[float | None]:  # a judge: it awaits
        nonlocal scoring, scoring_peak
        scoring += 1
        scoring_peak = max(scoring_peak, scoring)
        await asyncio.sleep(0.001)
        scoring -= 1
        return [1.0] * len(attempt.outputs)

    async def on_done(attempt: Attempt) -> None:  # a store whose transaction has not come yet
        nonlocal waiting, waiting_peak
        waiting += 1
        waiting_peak = max(waiting_peak, waiting)
        await release.wait()
        waiting -= 1

    monkeypatch.setattr(Compliance, "adetect", adetect)
    backlog = waiting_bound(2)
    count = backlog + 40

    class Many(PromptProbe):
        name = "test.Many"
        goal = "many prompts"
        prompts = tuple(f"prompt {i}" for i in range(count))
        recommended_detectors = ("refusal.Compliance",)

    probe = Many()
    generator = ScriptedGenerator("answer")
    runner = AttemptRunner(generator, concurrency=2, on_done=on_done, keep=False)
    await runner.start_detectors([probe])
    async with asyncio.timeout(60):  # a hang guard only
        run = asyncio.create_task(runner.run_all([(probe, a) for a in probe.create_attempts()]))
        sent = -1
        while sent != len(generator.calls):  # until the workers stop sending
            sent = len(generator.calls)
            await asyncio.sleep(0.05)
        # the requests went on while attempts waited to be stored, up to the backlog (each
        # worker then holds the outputs of one more), and no further
        assert waiting == backlog and sent == backlog + 2
        release.set()
        assert await run == []
    assert waiting_peak == backlog and len(generator.calls) == count
    assert scoring_peak == 2  # scoring (a judge's requests) never beyond the concurrency


async def test_on_drained_is_called_once_when_every_request_is_answered():
    drained = asyncio.Event()
    calls: list[int] = []
    sent: list[str] = []

    def reply(conversation) -> str:
        sent.append(user_text(conversation))
        return "answer"

    async def on_done(attempt: Attempt) -> None:
        await drained.wait()  # a store holding its transaction until told nothing more is coming

    def on_drained() -> None:
        calls.append(len(sent))
        drained.set()

    probe = Three()
    runner = AttemptRunner(ScriptedGenerator(reply), concurrency=2, on_done=on_done, on_drained=on_drained, keep=False)
    await runner.start_detectors([probe])
    async with asyncio.timeout(20):  # a hang guard: without the call, on_done never returns
        await runner.run_all([(probe, a) for a in probe.create_attempts()])
    assert calls == [3]  # once, after the last of the three requests
