"""Client-side rate limits: requests and tokens per minute, and the 429 pause."""

from __future__ import annotations

import asyncio
import time

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Conversation, Message, Turn
from redline.generators import get_generator
from redline.generators.transport.ratelimit import RateLimiter, TokenBucket, estimate_tokens


async def test_requests_per_minute_spread_requests_over_time():
    limiter = RateLimiter(rpm=1200, burst_seconds=0.05)  # 20/s, one at a time
    started = time.monotonic()
    await asyncio.gather(*(limiter.acquire() for _ in range(11)))
    elapsed = time.monotonic() - started
    assert elapsed >= 0.45  # 10 waits of 50 ms after the first (an upper bound would time the machine)


async def test_tokens_per_minute_and_settling_on_real_usage():
    bucket = TokenBucket(rate=1000, capacity=100)
    await bucket.take(100)  # the full bucket
    started = time.monotonic()
    await bucket.take(50)  # 50 more need 50 ms
    assert time.monotonic() - started >= 0.045
    limiter = RateLimiter(tpm=60_000, burst_seconds=0.1)  # 1000 tokens/s, 100 saved up
    await limiter.acquire(100)
    limiter.settle(100, 300)  # the request really cost 300: 200 of debt
    started = time.monotonic()
    await limiter.acquire(10)
    assert time.monotonic() - started >= 0.19


async def test_a_request_larger_than_the_bucket_still_goes_and_leaves_a_debt():
    bucket = TokenBucket(rate=1000, capacity=10)
    await asyncio.wait_for(bucket.take(50), 1)  # waits for a full bucket at most
    assert bucket.tokens < 0


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
