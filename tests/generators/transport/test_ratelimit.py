"""Client-side rate limits: the user's requests and tokens per minute, and the pace the limiter
learns from a provider's refusals and x-ratelimit-* headers. Run on a virtual clock: nothing here
waits for real time except the check that --rpm reaches the generator."""

from __future__ import annotations

import asyncio
import time
from collections import deque

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import get_generator
from redline.generators.transport.ratelimit import (
    AdaptiveRate,
    Meter,
    RateLimiter,
    TokenBucket,
    estimate_tokens,
    parse_duration,
)


class VirtualTime:
    """A clock that moves only when someone sleeps on it (one coroutine at a time)."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


def limiter(**options) -> tuple[RateLimiter, VirtualTime]:
    time_ = VirtualTime()
    return RateLimiter(clock=time_.clock, sleep=time_.sleep, **options), time_


class Provider:
    """Admits ``allowed`` requests (or tokens) in any second, refuses the rest."""

    def __init__(self, allowed: float) -> None:
        self.allowed = allowed
        self.admitted: deque[tuple[float, int]] = deque()
        self.served = self.refused = self.tokens = 0

    def admit(self, now: float, tokens: int = 1) -> bool:
        while self.admitted and self.admitted[0][0] <= now - 1.0:
            self.admitted.popleft()
        if sum(t for _, t in self.admitted) + tokens > self.allowed:
            self.refused += 1
            return False
        self.admitted.append((now, tokens))
        self.served += 1
        self.tokens += tokens
        return True


async def drive(rate_limiter: RateLimiter, time_: VirtualTime, provider: Provider, seconds: float, **kw) -> None:
    """Requests arrive ``demand`` a second (``sizes`` tokens each, in turn) and each goes as soon
    as ``rate_limiter`` lets it; the provider answers or refuses at once."""
    demand, sizes, by_tokens = kw.get("demand", 160.0), kw.get("sizes", [1]), kw.get("by_tokens", False)
    arrival, index = time_.now, 0
    end = time_.now + seconds
    while time_.now < end:
        time_.now = max(time_.now, arrival)
        arrival += 1 / demand
        size = sizes[index % len(sizes)]
        index += 1
        estimate = size if rate_limiter.limits_tokens else 0
        sent = await rate_limiter.acquire(estimate)
        if provider.admit(sent, size if by_tokens else 1):
            rate_limiter.settle(estimate, size)
            rate_limiter.answered(sent)
        else:
            rate_limiter.refused(sent, 1.0)


def test_durations_are_read_as_openai_writes_them():
    assert parse_duration("1s") == 1.0 and parse_duration("6m0s") == 360.0
    assert parse_duration("20ms") == pytest.approx(0.02) and parse_duration("1.5s") == 1.5
    assert parse_duration("1h2m3.5s") == 3723.5 and parse_duration("250us") == pytest.approx(0.00025)
    assert parse_duration("7") == 7.0
    for unreadable in ("", "soon", "1x", "s", "1s garbage"):
        assert parse_duration(unreadable) is None


def test_a_meter_counts_the_rate_over_the_last_seconds_only():
    meter = Meter()
    for tick in range(300):  # 100 a second for 3 s
        meter.add(tick / 100)
    assert meter.rate(3.0, 1.0) == pytest.approx(100, rel=0.05)
    assert meter.rate(5.0, 1.0) == 0.0
    assert Meter().rate(1.0, 1.0) == 0.0


async def test_requests_go_unpaced_until_the_provider_refuses_one():
    rate_limiter, time_ = limiter()
    for _ in range(1000):
        rate_limiter.answered(await rate_limiter.acquire())
    assert time_.now == 0.0  # nothing waited
    status = rate_limiter.status()
    assert status.rate is None and not status.limited and status.refused == 0


def test_a_refusal_paces_requests_below_the_rate_the_provider_let_through():
    pace = AdaptiveRate(backoff=0.9)
    for tick in range(200):  # 100 tries a second for 2 s, the provider refuses every other one
        pace.on_sent(tick / 100)
    assert not pace.refused(2.0, sent_at=1.99, share=0.02)  # a refusal now and then is tolerated
    assert pace.rate is None
    assert pace.refused(2.0, sent_at=1.99, share=0.5)
    assert pace.estimate == pytest.approx(50, rel=0.05)
    assert pace.rate == pytest.approx(45, rel=0.05)


def test_refusals_of_requests_sent_before_a_cut_or_soon_after_it_do_not_cut_again():
    pace = AdaptiveRate(backoff=0.5, cooldown=1.0)
    for tick in range(100):
        pace.on_sent(tick / 100)
    assert pace.refused(1.0, sent_at=0.99, share=0.5)
    cut = pace.rate
    assert not pace.refused(1.5, sent_at=0.995, share=0.5)  # it left before the cut
    assert not pace.refused(1.5, sent_at=1.2, share=0.5)  # within the cooldown
    assert pace.rate == cut
    assert pace.refused(2.1, sent_at=2.0, share=0.5)
    assert pace.rate < cut


def test_a_few_refusals_that_do_not_come_from_the_rate_do_not_wear_the_pace_down():
    pace = AdaptiveRate(backoff=0.9, noisy=0.15)
    for tick in range(300):  # answered 100 a second for 3 s
        pace.on_sent(tick / 100)
        pace.on_answered(tick / 100)
    for second in range(3, 60):  # one try in ten refused, however slow the pace
        assert pace.refused(float(second), sent_at=second - 0.01, share=0.1)
        assert pace.rate is not None and pace.rate >= 0.9 * 100 * 0.95
    assert pace.refused(61.0, sent_at=60.99, share=0.5)  # refusing half: below what it answered before
    assert pace.rate < 50


def test_the_pace_rises_while_it_holds_requests_back_and_only_then():
    pace = AdaptiveRate(probe=0.05, recover=0.8)
    pace.grow(0.0, binding=True)
    assert pace.rate is None  # unpaced: nothing to raise
    pace.estimate, pace.rate = 100.0, 90.0
    pace.grow(0.0, binding=True)
    pace.grow(1.0, binding=False)
    assert pace.rate == 90.0
    pace.grow(2.0, binding=True)
    assert pace.rate == pytest.approx(90 * 1.05)
    pace.rate = 10.0  # far below what the provider allowed: it recovers fast
    pace.grow(3.0, binding=True)
    assert pace.rate == pytest.approx(20.0)


async def test_against_a_provider_that_allows_100_a_second_the_pace_stays_near_the_limit():
    rate_limiter, time_ = limiter()
    provider = Provider(100)
    await drive(rate_limiter, time_, provider, 5.0)  # finds the limit
    provider.served = provider.refused = 0
    await drive(rate_limiter, time_, provider, 30.0)
    assert provider.served / 30 >= 90
    assert provider.refused <= 0.1 * (provider.served + provider.refused)
    status = rate_limiter.status()
    assert status.rate is not None and 80 <= status.rate <= 110
    assert 80 <= status.answered <= 110


async def test_against_a_tokens_budget_the_pace_stays_near_it():
    rate_limiter, time_ = limiter()
    provider = Provider(3000)  # tokens a second
    sizes = [10, 60, 30, 20, 80]  # 40 on average: the budget allows 75 requests a second
    await drive(rate_limiter, time_, provider, 5.0, sizes=sizes, by_tokens=True)
    assert rate_limiter.limits_tokens  # requests now carry an estimate of their tokens
    provider.tokens = provider.refused = provider.served = 0
    await drive(rate_limiter, time_, provider, 30.0, sizes=sizes, by_tokens=True)
    assert provider.tokens / 30 >= 0.9 * 3000
    assert provider.refused <= 0.1 * (provider.served + provider.refused)


async def test_x_ratelimit_headers_set_the_pace_before_any_refusal():
    rate_limiter, time_ = limiter()
    rate_limiter.observe({"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "500"})
    assert rate_limiter.status().rate is None and not rate_limiter.status().limited  # plenty left
    headers = {
        "x-ratelimit-limit-requests": "600",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1m0s",  # the whole limit back in a minute: 10 a second
    }
    rate_limiter.observe(headers)
    assert rate_limiter.status().rate == pytest.approx(10) and rate_limiter.status().limited
    for _ in range(20):
        await rate_limiter.acquire()
    assert 1.8 <= time_.now <= 2.2  # paced at about 10 a second (rising slowly while it holds them back)
    assert rate_limiter.status().refused == 0


async def test_a_refusal_the_headers_blame_on_tokens_slows_tokens_only():
    rate_limiter, time_ = limiter()
    for _ in range(200):  # 100 requests of 50 tokens a second
        sent = await rate_limiter.acquire()
        rate_limiter.settle(0, 50)
        rate_limiter.answered(sent)
        time_.now += 0.01
    rate_limiter.observe({"x-ratelimit-remaining-requests": "900", "x-ratelimit-limit-requests": "1000"})
    rate_limiter.observe({"x-ratelimit-remaining-tokens": "10", "x-ratelimit-limit-tokens": "100000"})
    for _ in range(10):
        rate_limiter.refused(await rate_limiter.acquire(), 1.0)
    assert rate_limiter.request_pace.rate is None
    assert rate_limiter.token_pace.rate == pytest.approx(0.9 * 5000, rel=0.1)
    assert rate_limiter.limits_tokens


def test_the_reported_usage_corrects_what_a_request_is_expected_to_cost():
    rate_limiter, _ = limiter(tpm=60_000)
    assert rate_limiter._charge(300) == 300  # nothing reported yet: the estimate
    rate_limiter.settle(300, 60)
    assert rate_limiter._charge(300) == pytest.approx(60)
    assert rate_limiter._charge(0) == pytest.approx(60)  # no estimate: what answers cost


async def test_when_the_provider_refuses_everything_every_request_waits_its_retry_after():
    rate_limiter, time_ = limiter()
    for _ in range(100):
        rate_limiter.answered(await rate_limiter.acquire())
        time_.now += 0.01
    rate_limiter.refused(await rate_limiter.acquire(), 30.0)
    assert rate_limiter._resume_at < time_.now  # one refusal holds back only its own request
    for _ in range(40):  # refused for 4 s in a row
        time_.now += 0.1
        rate_limiter.refused(time_.now, 30.0)
    assert rate_limiter._resume_at >= time_.now + 29
    waited_from = time_.now
    await rate_limiter.acquire()
    assert time_.now - waited_from >= 29


def test_status_says_when_the_provider_is_limiting():
    rate_limiter, time_ = limiter(rpm=6000)
    assert rate_limiter.status().rate == 100  # the user's cap
    rate_limiter.refused(0.0, None)
    status = rate_limiter.status()
    assert status.limited and status.refused == 1
    time_.now += rate_limiter.limited_for + 1
    assert not rate_limiter.status().limited


async def test_requests_per_minute_spread_requests_over_time():
    rate_limiter, time_ = limiter(rpm=1200, burst_seconds=0.05)  # 20/s, one at a time
    await asyncio.gather(*(rate_limiter.acquire() for _ in range(11)))
    assert time_.now == pytest.approx(0.5)  # 10 waits of 50 ms after the first


async def test_tokens_per_minute_and_settling_on_real_usage():
    time_ = VirtualTime()
    bucket = TokenBucket(rate=1000, capacity=100, clock=time_.clock, sleep=time_.sleep)
    assert not await bucket.take(100)  # the full bucket, at once
    assert await bucket.take(50)  # 50 more need 50 ms
    assert time_.now == pytest.approx(0.05)
    rate_limiter, time_ = limiter(tpm=60_000, burst_seconds=0.1)  # 1000 tokens/s, 100 saved up
    await rate_limiter.acquire(100)
    rate_limiter.settle(100, 300)  # the request really cost 300: 200 of debt
    await rate_limiter.acquire(10)
    assert time_.now == pytest.approx(0.21)


async def test_a_request_larger_than_the_bucket_still_goes_and_leaves_a_debt():
    time_ = VirtualTime()
    bucket = TokenBucket(rate=1000, capacity=10, clock=time_.clock, sleep=time_.sleep)
    await bucket.take(50)  # waits for a full bucket at most
    assert bucket.tokens < 0 and time_.now == 0.0


def test_estimate_and_validation():
    assert estimate_tokens(400, 50, n=2) == 100 + 100
    assert estimate_tokens(0, None) == 1 + 256
    with pytest.raises(ValueError, match="rpm must be a positive number"):
        RateLimiter(rpm=-1)


async def test_openai_generator_honours_rpm():
    with MockOpenAI() as server:
        gen = get_generator("openai:m", base_url=server.base_url, rpm=600)  # 10 per second
        conv = Conversation([Turn("user", Message("x"))])
        started = time.monotonic()
        await asyncio.gather(*(gen.generate(conv, 1) for _ in range(25)))
        elapsed = time.monotonic() - started
        await gen.aclose()
    # a burst of 10 (one second's worth), then 10 per second: the 25th leaves after ~1.5 s
    assert elapsed >= 1.3
