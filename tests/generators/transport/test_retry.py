"""The retry policy shared by the HTTP generators and LiteLLM: transient failures are tried
again up to max_retries, Retry-After is honoured (capped), the rate limiter hears of every answer
and every refusal for the rate, other errors end the request at once, and retries are counted."""

from __future__ import annotations

import sys
import types

import pytest

from redline.attempt import Conversation, Message, Turn
from redline.generators import GeneratorError, GeneratorUnavailable, get_generator
from redline.generators.transport.ratelimit import AdaptiveConcurrency
from redline.generators.transport.retry import RetryPolicy, TransientFailure, is_transient_status

NO_WAIT = RetryPolicy(max_retries=3, backoff_base=0.0, backoff_cap=0.0, max_retry_after=0.0)


class Limiter:
    """Records what the policy asks of a rate limiter."""

    def __init__(self) -> None:
        self.acquired: list[int] = []
        self.answers: list[float] = []
        self.refusals: list[tuple[float, float | None]] = []
        self.timeouts: list[float] = []
        self.slots = AdaptiveConcurrency(clock=lambda: float(len(self.acquired)))

    async def acquire(self, tokens: int = 0) -> float:
        self.acquired.append(tokens)
        return float(len(self.acquired))  # the "time" each try left

    def answered(self, sent_at: float) -> None:
        self.answers.append(sent_at)

    def refused(self, sent_at: float, retry_after: float | None = None) -> None:
        self.refusals.append((sent_at, retry_after))

    def timed_out(self, sent_at: float) -> None:
        self.timeouts.append(sent_at)
        self.slots.timed_out(sent_at)


def script(*steps):
    """A try function that raises or returns ``steps[i]`` on try ``i``; records the tries."""
    tries: list[int] = []

    async def attempt(retry: int):
        tries.append(retry)
        step = steps[retry]
        if isinstance(step, BaseException):
            raise step
        return step

    return attempt, tries


async def test_transient_failures_are_tried_again_until_an_answer():
    attempt, tries = script(TransientFailure("HTTP 503"), TransientFailure("timeout"), "answer")
    limiter, retries = Limiter(), []
    assert await NO_WAIT.call(attempt, limiter, 42, lambda: retries.append(1)) == "answer"
    assert tries == [0, 1, 2] and len(retries) == 2 and limiter.acquired == [42, 42, 42]


async def test_after_the_last_try_the_last_failure_is_the_error():
    attempt, tries = script(*(TransientFailure(f"HTTP 50{i}") for i in range(4)))
    retries = []
    with pytest.raises(GeneratorError, match=r"^HTTP 503 \(after 4 tries\)$"):
        await NO_WAIT.call(attempt, on_retry=lambda: retries.append(1))
    assert tries == [0, 1, 2, 3] and len(retries) == 3  # no retry after the last try


async def test_other_errors_end_the_request_at_once():
    for error in (GeneratorError("HTTP 400"), GeneratorUnavailable("refused the key")):
        attempt, tries = script(error, "never")
        with pytest.raises(type(error)):
            await NO_WAIT.call(attempt)
        assert tries == [0]


async def test_the_limiter_hears_of_each_refusal_for_the_rate_with_the_capped_wait_and_of_the_answer():
    policy = RetryPolicy(max_retries=3, backoff_base=0.0, backoff_cap=0.0, max_retry_after=0.0)
    attempt, _ = script(
        TransientFailure("429", retry_after=3600, throttled=True),
        TransientFailure("503", 5),
        TransientFailure("429", throttled=True),
        "ok",
    )
    limiter = Limiter()
    assert await policy.call(attempt, limiter) == "ok"
    # each with the time its try left; capped by max_retry_after; a 503 is no refusal for the rate
    assert limiter.refusals == [(1.0, 0.0), (3.0, None)]
    assert limiter.answers == [4.0]


def test_delays_honour_retry_after_up_to_the_cap_and_back_off_with_jitter():
    policy = RetryPolicy(max_retries=5, backoff_base=0.5, backoff_cap=4.0, max_retry_after=2.0)
    assert policy.tries == 6
    assert policy.delay(0, 1.5) == 1.5 and policy.delay(0, 300) == 2.0
    for retry in range(6):
        delays = [policy.delay(retry) for _ in range(100)]
        assert all(0 <= d <= min(4.0, 0.5 * 2**retry) for d in delays)
    assert is_transient_status(429) and is_transient_status(503) and not is_transient_status(400)
    assert not is_transient_status(None)


# -- LiteLLM goes through the same policy -------------------------------------------------------------
def conv() -> Conversation:
    return Conversation([Turn("user", Message("hi"))])


class RateLimitError(Exception):
    status_code = 429

    def __init__(self, message: str, headers: dict) -> None:
        super().__init__(message)
        self.response = types.SimpleNamespace(headers=headers)


async def test_litellm_counts_retries_and_tells_the_limiter_of_its_rate_limit(monkeypatch):
    calls = []

    async def acompletion(**kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise RateLimitError("slow down", {"retry-after": "3600"})
        return {"choices": [{"message": {"content": "fine"}}]}

    monkeypatch.setitem(sys.modules, "litellm", types.SimpleNamespace(acompletion=acompletion))
    gen = get_generator("litellm:p/m", max_retries=2, max_retry_after=0.01, backoff_base=0)
    refused = []
    monkeypatch.setattr(gen.limiter, "refused", lambda sent_at, wait: refused.append(wait))
    (out,) = await gen.generate(conv(), 1)
    assert out.text == "fine" and len(calls) == 3 and gen.retries == 2
    assert refused == [0.01, 0.01]  # the server's hour, capped by max_retry_after
    assert gen.retry_policy == RetryPolicy(2, 0.0, 30.0, 0.01)
