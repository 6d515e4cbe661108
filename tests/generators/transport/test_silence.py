"""The breaker: an endpoint that has answered nothing, whose first requests all time out or lose
their connection, stops the run with one line instead of retrying every attempt."""

from __future__ import annotations

import asyncio

import pytest

from helpers.cli import CliRun, cli_runner
from helpers.mock_openai import HANG, MockOpenAI
from redline.generators import GeneratorError, GeneratorUnavailable
from redline.generators.transport.ratelimit import RateLimiter, Silence
from redline.generators.transport.retry import RetryPolicy, TransientFailure

NO_WAIT = RetryPolicy(max_retries=2, backoff_base=0.0, backoff_cap=0.0, max_retry_after=0.0)


def silent(tries: list[int]):
    async def attempt(index: int) -> str:
        tries.append(index)
        await asyncio.sleep(0)  # let the other requests in flight take their turn
        raise TransientFailure("no answer from http://127.0.0.1:9/v1 within 1 s", timed_out=True)

    return attempt


async def outcomes(limiter: RateLimiter, requests: int, attempt_of) -> list[BaseException | str]:
    return await asyncio.gather(
        *(NO_WAIT.call(attempt_of(i), limiter) for i in range(requests)), return_exceptions=True
    )


async def test_a_silent_endpoint_stops_once_as_many_requests_as_were_in_flight_failed_unanswered():
    limiter, tries = RateLimiter(), []
    results = await outcomes(limiter, 3, lambda i: silent(tries))
    assert [isinstance(r, GeneratorUnavailable) for r in results] == [False, False, True]
    assert all(isinstance(r, GeneratorError) for r in results[:2])  # recorded as errored attempts
    assert str(results[2]).startswith("the endpoint answers nothing: its first 3 requests all timed out")
    assert len(tries) == 3 * NO_WAIT.tries


async def test_with_many_requests_in_flight_the_breaker_trips_at_eight_and_stops_later_requests_before_a_try():
    limiter, tries = RateLimiter(), []
    results = await outcomes(limiter, 20, lambda i: silent(tries))
    unavailable = [r for r in results if isinstance(r, GeneratorUnavailable)]
    assert len(unavailable) == 20 - 7  # the eighth failure trips it
    assert limiter.silence.failed >= Silence.MAX_SILENT
    # a request that starts once the endpoint is known to answer nothing makes no try at all
    tries.clear()
    with pytest.raises(GeneratorUnavailable, match="the endpoint answers nothing"):
        await NO_WAIT.call(silent(tries), limiter)
    assert tries == []


async def test_an_endpoint_that_answered_once_is_never_taken_for_silent():
    limiter, tries = RateLimiter(), []

    async def answers(index: int) -> str:
        return "hello"

    assert await NO_WAIT.call(answers, limiter) == "hello"
    results = await outcomes(limiter, 10, lambda i: silent(tries))
    assert not any(isinstance(r, GeneratorUnavailable) for r in results)
    assert len(tries) == 10 * NO_WAIT.tries


async def test_server_errors_are_answers_and_do_not_trip_the_breaker():
    limiter = RateLimiter()

    def busy(i: int):
        async def attempt(index: int) -> str:
            raise TransientFailure("HTTP 503 from http://127.0.0.1:9/v1: busy")

        return attempt

    results = await outcomes(limiter, 10, busy)
    assert all(isinstance(r, GeneratorError) and not isinstance(r, GeneratorUnavailable) for r in results)


@pytest.fixture
def cli(monkeypatch, capsys) -> CliRun:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return cli_runner(monkeypatch, capsys)


def test_a_scan_of_an_endpoint_that_never_answers_stops_with_one_line_and_is_resumable(cli, tmp_path):
    with MockOpenAI(faults=lambda index, body: HANG, hang_seconds=3) as server:
        code, out, err = cli(
            "scan", "-m", "openai:m", "--base-url", server.base_url, "-p", "harmful.Requests", "--sample", "6",
            "-c", "2", "--timeout", "0.2", "--max-retries", "1", "--store", str(tmp_path / "s.db"),
        )  # fmt: skip
        sent = len(server.requests)
    assert code == 1 and out == ""
    assert any(line.startswith("error: the endpoint answers nothing: its first 2 requests") for line in err), err
    assert any("redline scan --resume" in line and "--trust-settings" in line for line in err), err
    assert sent < 6 * 2  # not every attempt of the run with all its tries
