"""Client-side rate limits: requests per minute and tokens per minute, as token buckets.

A :class:`RateLimiter` belongs to one generator and is shared by all its concurrent requests.
Before each HTTP request the generator calls ``await limiter.acquire(estimated_tokens)``; after the
response it calls ``limiter.settle(estimated_tokens, actual_tokens)`` with the usage the server
reported, so the token budget follows what was really spent. When a server answers 429 with a
``Retry-After``, ``limiter.pause(seconds)`` holds back every request of the generator, not only the
one that was refused.

Each bucket holds at most ``burst_seconds`` worth of its rate (at least one request), so a limit of
600 requests per minute means about 10 per second, never 600 at once.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["RateLimiter", "TokenBucket", "estimate_tokens"]


def estimate_tokens(prompt_chars: int, max_tokens: int | None, n: int = 1) -> int:
    """A cheap upper-ish estimate of the tokens a request spends: about 4 characters per prompt
    token, plus ``max_tokens`` (256 when unset) per output."""
    return max(1, prompt_chars // 4) + n * (max_tokens if max_tokens else 256)


class TokenBucket:
    """``rate`` units per second, at most ``capacity`` saved up. Waiters are served in order."""

    def __init__(self, rate: float, capacity: float) -> None:
        if rate <= 0:
            raise ValueError("a rate limit must be positive")
        self.rate = float(rate)
        self.capacity = max(1.0, float(capacity))
        self.tokens = self.capacity
        self._last = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self._last) * self.rate)
        self._last = now

    async def take(self, amount: float) -> None:
        """Wait until ``amount`` units are available and take them. An amount larger than the
        bucket waits for a full bucket and leaves a debt that later takers wait out."""
        amount = max(0.0, float(amount))
        now_part = min(amount, self.capacity)
        async with self._lock:
            while True:
                self._refill()
                if self.tokens >= now_part:
                    self.tokens -= amount
                    return
                await asyncio.sleep((now_part - self.tokens) / self.rate)

    def debit(self, amount: float) -> None:
        """Take (or, when negative, give back) ``amount`` units without waiting."""
        self._refill()
        self.tokens = min(self.capacity, self.tokens - amount)


class RateLimiter:
    """Requests-per-minute (``rpm``) and tokens-per-minute (``tpm``) limits; either may be None."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None, burst_seconds: float = 1.0) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and float(value) <= 0:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        burst = max(1e-3, float(burst_seconds))
        self.rpm = float(rpm) if rpm else None
        self.tpm = float(tpm) if tpm else None
        self._requests = TokenBucket(self.rpm / 60.0, self.rpm / 60.0 * burst) if self.rpm else None
        self._tokens = TokenBucket(self.tpm / 60.0, self.tpm / 60.0 * burst) if self.tpm else None
        self._resume_at = 0.0

    @property
    def limits_tokens(self) -> bool:
        return self._tokens is not None

    async def acquire(self, tokens: int = 0) -> None:
        """Wait for the right to send one request estimated at ``tokens`` tokens."""
        while True:
            delay = self._resume_at - time.monotonic()
            if delay <= 0:
                break
            await asyncio.sleep(delay)
        if self._requests is not None:
            await self._requests.take(1)
        if self._tokens is not None and tokens:
            await self._tokens.take(tokens)

    def settle(self, estimated: int, actual: int | None) -> None:
        """Correct the token budget once the server reported the ``actual`` usage."""
        if self._tokens is not None and actual is not None:
            self._tokens.debit(actual - estimated)

    def pause(self, seconds: float) -> None:
        """Hold every request back for ``seconds`` (the server asked us to slow down)."""
        if seconds > 0:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)
