"""Client-side rate limits: the user's caps (``rpm``, ``tpm``) and a pace learned from the provider.

A :class:`RateLimiter` belongs to one generator and is shared by all its concurrent requests.
Before each try of a request the generator waits for ``limiter.acquire(estimated_tokens)``, which
returns the moment the try was let go; afterwards it reports what happened: ``settle`` with the
tokens the answer's ``usage`` reported, ``answered`` for an answer, ``refused`` for a 429, and
``observe`` with every answer's headers (OpenAI's ``x-ratelimit-*``).

The user's ``rpm`` and ``tpm`` are token buckets that cap the rate as given. Under them, the
limiter learns the provider's own limit (:class:`AdaptiveRate`, one for requests and one for
tokens, the tokens counted as the answers' ``usage`` reports them): requests go unpaced until the
provider refuses more than a few; then they are paced at the rate the provider let through, less
a margin; a later refusal lowers the pace again, and while the pace holds requests back it rises
slowly, so that it stays near the limit. A 429 slows tokens or requests as the latest
``x-ratelimit-*`` headers blame, both when there are none; when those headers say that what
remains of a limit runs low, the pace is set from them before any refusal. A 429's
``Retry-After`` delays the request that was refused; every request of the generator is held back
only when the provider has refused everything for a while. :meth:`RateLimiter.status` says what
the limiter does, for a progress line. Why it works this way, and how close it stays to a limit:
``bench/README.md`` (*Rate-limited providers*).

Each bucket holds at most ``burst_seconds`` worth of its rate (at least one request), so a limit of
600 requests per minute means about 10 per second, never 600 at once.

A timeout is a sign of a server that cannot keep up (a slow one generates for every request it
was sent, answered or abandoned), so it lowers the requests in flight: :class:`AdaptiveConcurrency`
(``limiter.slots``) lets any number go until a try times out, then halves the tries in flight at
that moment, and adds one back for as many answers as the cap allows in flight (additive increase,
multiplicative decrease). Tries that were sent before the cut and time out afterwards cut nothing:
a burst of timeouts halves the cap once. Why: ``docs/generators.md`` (*Output length and timeouts*).
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "AdaptiveConcurrency",
    "AdaptiveRate",
    "LimiterStatus",
    "Meter",
    "RateLimiter",
    "Silence",
    "TokenBucket",
    "estimate_tokens",
    "parse_duration",
]

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


def estimate_tokens(prompt_chars: int, max_tokens: int | None, n: int = 1) -> int:
    """A cheap upper-ish estimate of the tokens a request spends: about 4 characters per prompt
    token, plus ``max_tokens`` (256 when unset) per output."""
    return max(1, prompt_chars // 4) + n * (max_tokens if max_tokens else 256)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|h|m|s)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float | None:
    """Seconds in a duration as OpenAI writes its reset times (``"1s"``, ``"6m0s"``, ``"20ms"``,
    ``"1.5s"``) or a bare number of seconds; ``None`` when unreadable."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    total, at = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        at = match.end()
    return total if at and at == len(text) else None


class TokenBucket:
    """``rate`` units per second, at most ``capacity`` saved up. Waiters are served in order."""

    def __init__(
        self, rate: float, capacity: float, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        if rate <= 0:
            raise ValueError("a rate limit must be positive")
        self.rate = float(rate)
        self.capacity = max(1.0, float(capacity))
        self.tokens = self.capacity
        self._clock = clock
        self._sleep = sleep
        self._last = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._last) * self.rate)
        self._last = now

    def set_rate(self, rate: float, capacity: float) -> None:
        """Go on at ``rate`` units per second with at most ``capacity`` saved up."""
        self._refill()
        self.rate = max(1e-9, float(rate))
        self.capacity = max(1.0, float(capacity))
        self.tokens = min(self.tokens, self.capacity)

    async def take(self, amount: float) -> bool:
        """Wait until ``amount`` units are available and take them; True when it had to wait. An
        amount larger than the bucket waits for a full bucket and leaves a debt that later takers
        wait out."""
        amount = max(0.0, float(amount))
        waited = self._lock.locked()
        async with self._lock:
            while True:
                self._refill()
                now_part = min(amount, self.capacity)
                if self.tokens >= now_part - 1e-9:  # (a float's rounding is no reason to wait)
                    self.tokens -= amount
                    return waited
                waited = True
                await self._sleep((now_part - self.tokens) / self.rate)

    def debit(self, amount: float) -> None:
        """Take (or, when negative, give back) ``amount`` units without waiting."""
        self._refill()
        self.tokens = min(self.capacity, self.tokens - amount)


class Meter:
    """Amounts counted over the last ``span`` seconds, in slots of ``slot`` seconds."""

    def __init__(self, span: float = 60.0, slot: float = 0.1) -> None:
        self.slot = slot
        self._keep = max(1, math.ceil(span / slot))
        self._slots: deque[list[float]] = deque()  # [slot number, amount], oldest first
        self.first: float | None = None

    def add(self, now: float, amount: float = 1.0) -> None:
        if self.first is None:
            self.first = now
        number = now // self.slot
        slots = self._slots
        if slots and slots[-1][0] == number:
            slots[-1][1] += amount
            return
        slots.append([number, amount])
        while slots[0][0] <= number - self._keep:
            slots.popleft()

    def total(self, now: float, seconds: float) -> float:
        """The amount counted over the last ``seconds`` (in whole slots)."""
        oldest = (now - seconds) // self.slot
        slots = tuple(self._slots)  # (a progress display reads it from another thread)
        return sum(amount for number, amount in slots if number > oldest)

    def rate(self, now: float, seconds: float) -> float:
        """Amount per second over the last ``seconds`` (fewer when counting began later)."""
        if self.first is None:
            return 0.0
        oldest = (now - min(seconds, now - self.first)) // self.slot  # the slots after this one count
        covered = now - (oldest + 1) * self.slot
        if covered <= 0:
            return 0.0
        slots = tuple(self._slots)  # (a progress display reads it from another thread)
        return sum(amount for number, amount in slots if number > oldest) / covered


class AdaptiveRate:
    """A pace learned from a provider's refusals, in units per second (requests or tokens).

    :attr:`rate` is ``None`` (unpaced) until the provider refuses more than ``tolerated`` of the
    tries lately. Then a refusal of a try sent after the last cut, at least ``cooldown`` seconds
    after it, cuts the rate to ``backoff`` times what the provider let through: the current rate
    (the rate sent at, when unpaced) less the share refused (:attr:`estimate`). Unless the
    provider refuses at least ``noisy`` of the tries, a cut does not go below ``backoff`` times the
    most it answered over a whole :meth:`window` lately (:attr:`peak`, which fades while the pace
    tries it), so that refusals that do not come from the rate cannot wear the pace down. While
    the pace holds requests back, the rate rises by ``probe`` a second (compounded), or doubles a
    second while it is below ``recover`` times :attr:`estimate`. :meth:`cap` sets it from a
    provider's own figures.

    Args:
        backoff: the factor of a cut.
        probe: the rise per second while the pace holds requests back.
        window: the least number of seconds over which tries and answers are counted.
        cooldown: the least number of seconds between two cuts.
        tolerated: the share of tries refused lately that cuts nothing.
        fade: the seconds in which :attr:`peak` fades by a factor e.
        noisy: the share of tries refused lately from which a cut may go below :attr:`peak`.
        deepest: the least share of the rate a cut keeps.
    """

    def __init__(
        self,
        backoff: float = 0.9,
        probe: float = 0.05,
        window: float = 2.0,
        cooldown: float = 1.0,
        recover: float = 0.8,
        tolerated: float = 0.03,
        fade: float = 30.0,
        noisy: float = 0.15,
        deepest: float = 0.1,
    ) -> None:
        self.backoff, self.probe, self.recover, self.tolerated = backoff, probe, recover, tolerated
        self.noisy, self.deepest = noisy, deepest
        self.min_window, self.cooldown, self.fade = window, cooldown, fade
        self.rate: float | None = None
        self.estimate: float | None = None
        self.peak = 0.0
        self.sent = Meter()
        self.answered = Meter()
        self.cut_at = -math.inf
        self._peak_at = -math.inf
        self._grown_at = -math.inf
        self._latency: float | None = None

    def window(self) -> float:
        """Seconds over which tries and answers are counted: ``window``, or four typical latencies
        when longer."""
        latency = self._latency or 0.0
        return min(60.0, max(self.min_window, 4 * latency))

    def on_sent(self, now: float, amount: float = 1.0) -> None:
        self.sent.add(now, amount)

    def on_answered(self, now: float, amount: float = 1.0, sent_at: float | None = None) -> None:
        self.answered.add(now, amount)
        if sent_at is not None:
            took = max(0.0, now - sent_at)
            self._latency = took if self._latency is None else 0.9 * self._latency + 0.1 * took

    def answered_rate(self, now: float) -> float:
        return self.answered.rate(now, self.window())

    def refused(self, now: float, sent_at: float, share: float) -> bool:
        """A try sent at ``sent_at`` was refused, ``share`` of the tries being refused lately: cut
        the rate unless ``share`` is tolerated or the rate was cut since that try left or less
        than ``cooldown`` ago. True when it was cut."""
        window = self.window()
        answered = self.answered.rate(now, window)
        if self.answered.first is not None and now - self.answered.first >= window:  # a whole window
            below = self.rate is not None and self.rate < self.peak  # the peak was not tried meanwhile
            faded = self.peak if below else self.peak * math.exp(-(now - self._peak_at) / self.fade)
            self.peak, self._peak_at = max(faded, answered), now
        if share <= self.tolerated or sent_at < self.cut_at or now - self.cut_at < self.cooldown:
            return False
        current = self.rate if self.rate is not None else self.sent.rate(now, window)
        if current <= 0:
            return False
        allowed = current * (1.0 - min(1.0, share))
        level = max(allowed, self.peak if share < self.noisy else self.deepest * current)
        self.estimate = level
        self.rate = self.backoff * level
        self.cut_at = self._grown_at = now
        return True

    def grow(self, now: float, binding: bool) -> None:
        """Raise the rate for the time since the last call, when the pace held a request back."""
        previous, self._grown_at = self._grown_at, now
        if self.rate is None or not binding or previous == -math.inf:
            return
        elapsed = min(1.0, max(0.0, now - previous))
        fast = self.estimate is not None and self.rate < self.recover * self.estimate
        self.rate *= (2.0 if fast else 1.0 + self.probe) ** elapsed

    def cap(self, value: float) -> None:
        """The provider's own figures allow ``value`` per second: pace at it if faster or unpaced."""
        if value > 0 and (self.rate is None or self.rate > value):
            self.estimate = self.rate = value


class AdaptiveConcurrency:
    """A cap on the tries in flight, learned from timeouts (see the module doc).

    :attr:`limit` is ``None`` (no cap) until a try times out; then :meth:`timed_out` sets it to
    half the tries in flight (at least one), unless the try was sent before the last cut; each
    answer adds ``1 / limit`` to it, so it rises by one for every ``limit`` answers.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.limit: int | None = None
        self.in_flight = 0
        #: Cuts made so far.
        self.cuts = 0
        self._clock = clock
        self._cut_at = -math.inf
        self._credit = 0.0
        self._freed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def enter(self) -> None:
        """Wait until one more try may be in flight, and count it."""
        while self.limit is not None and self.in_flight >= self.limit:
            loop = asyncio.get_running_loop()
            if self._freed is None or self._loop is not loop:  # (an event belongs to one loop)
                self._freed, self._loop = asyncio.Event(), loop
            await self._freed.wait()
        self.in_flight += 1

    def leave(self) -> None:
        """A try counted by :meth:`enter` is over (answered, refused or failed)."""
        self.in_flight = max(0, self.in_flight - 1)
        self._wake()

    def _wake(self) -> None:
        if self._freed is not None:
            self._freed.set()
            self._freed = None

    def timed_out(self, sent_at: float) -> bool:
        """The try let go at ``sent_at`` (the clock's time) timed out: halve the cap unless the
        try left before the last cut. True when it was cut."""
        if sent_at < self._cut_at:
            return False
        self.limit = max(1, min(self.limit or self.in_flight, self.in_flight) // 2)
        self._cut_at = self._clock()
        self._credit = 0.0
        self.cuts += 1
        return True

    def answered(self) -> None:
        """A try was answered: the cap rises by ``1 / limit``."""
        if self.limit is None:
            return
        self._credit += 1.0 / self.limit
        if self._credit >= 1.0:
            self._credit -= 1.0
            self.limit += 1
            self._wake()


class Silence:
    """Whether an endpoint has answered anything yet, and the requests that failed before it did
    with every try unanswered (timed out or lost its connection). Once as many such requests failed
    as were in flight at most (at least :data:`MIN_SILENT`, at most :data:`MAX_SILENT`) and nothing
    was ever answered, the endpoint answers nothing (:attr:`tripped`)."""

    #: The most requests that fail unanswered before the endpoint counts as answering nothing.
    MAX_SILENT = 8
    #: The fewest: one request alone failing unanswered may be a server still starting.
    MIN_SILENT = 2

    def __init__(self) -> None:
        #: True once any try got an answer (any HTTP status): :attr:`tripped` never becomes true.
        self.heard = False
        #: Requests that failed with every try unanswered while nothing was answered.
        self.failed = 0
        self.in_flight = 0
        self.peak = 0

    def begin(self) -> None:
        """A request starts."""
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)

    def end(self) -> None:
        """A request counted by :meth:`begin` is over."""
        self.in_flight = max(0, self.in_flight - 1)

    def answered(self) -> None:
        """A try got an answer."""
        self.heard = True

    def failed_unanswered(self) -> None:
        """A request failed after its last try, none of its tries answered."""
        if not self.heard:
            self.failed += 1

    @property
    def tripped(self) -> bool:
        """True when nothing was ever answered and enough requests failed unanswered."""
        return not self.heard and self.failed >= min(self.MAX_SILENT, max(self.MIN_SILENT, self.peak))


@dataclass(frozen=True)
class LimiterStatus:
    """What a :class:`RateLimiter` is doing now (for a progress line).

    Args:
        rate: requests per second the pace allows (the lower of ``rpm`` and the learned pace);
            ``None`` when unpaced.
        answered: requests answered per second lately.
        limited: True when the provider refused a request for the rate (429) lately, or its
            ``x-ratelimit-*`` headers said a limit was running low.
        refused: requests the provider refused so far.
    """

    rate: float | None
    answered: float
    limited: bool
    refused: int


class RateLimiter:
    """Requests-per-minute (``rpm``) and tokens-per-minute (``tpm``) caps, either may be None, and
    the pace learned from the provider under them (see the module).

    Args:
        rpm: requests per minute at most.
        tpm: tokens per minute at most.
        burst_seconds: the seconds' worth of ``rpm`` and ``tpm`` that may go at once.
        clock: the monotonic clock, in seconds.
        sleep: waits that many seconds of ``clock``.
    """

    #: Seconds of the learned pace that may go at once.
    pace_burst = 0.1
    #: Seconds after a refusal during which :meth:`status` says the provider is limiting.
    limited_for = 5.0
    #: Share of an ``x-ratelimit-*`` limit below which what remains counts as running low.
    low_share = 0.1

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        burst_seconds: float = 1.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and float(value) <= 0:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        burst = max(1e-3, float(burst_seconds))
        self.rpm = float(rpm) if rpm else None
        self.tpm = float(tpm) if tpm else None
        self._clock = clock
        self._sleep = sleep
        self._requests = TokenBucket(self.rpm / 60.0, self.rpm / 60.0 * burst, clock, sleep) if self.rpm else None
        self._tokens = TokenBucket(self.tpm / 60.0, self.tpm / 60.0 * burst, clock, sleep) if self.tpm else None
        #: The pace learned for requests and for tokens.
        self.request_pace = AdaptiveRate()
        self.token_pace = AdaptiveRate()
        #: The cap on tries in flight that timeouts lower.
        self.slots = AdaptiveConcurrency(clock)
        #: Whether the endpoint answered anything yet (the breaker of
        #: :meth:`~redline.generators.transport.retry.RetryPolicy.call`).
        self.silence = Silence()
        self._request_bucket: TokenBucket | None = None
        self._token_bucket: TokenBucket | None = None
        self._resume_at = 0.0
        self._refused = 0
        self._refusals = Meter()
        self._refused_at = -math.inf
        self._low_at = -math.inf  # when x-ratelimit-* headers last said a limit runs low
        self._refusing_since: float | None = None
        self._short: set[str] | None = None  # the limits the latest x-ratelimit-* headers say are low
        self._tokens_per_request: float | None = None  # tokens an answer reported, on average
        self._tokens_ratio: float | None = None  # reported tokens over estimated tokens, on average

    @property
    def limits_tokens(self) -> bool:
        """True when requests should carry an estimate of their tokens (``tpm``, or a tokens pace)."""
        return self._tokens is not None or self._token_bucket is not None

    def _charge(self, estimated: int) -> float:
        """The tokens a request estimated at ``estimated`` is expected to be reported at."""
        if estimated > 0 and self._tokens_ratio is not None:
            return estimated * self._tokens_ratio
        return self._tokens_per_request or float(estimated)

    async def acquire(self, tokens: int = 0) -> float:
        """Wait for the right to send one request estimated at ``tokens`` tokens; returns the
        clock's time it was let go (for :meth:`answered` and :meth:`refused`)."""
        clock = self._clock
        while True:
            delay = self._resume_at - clock()
            if delay <= 0:
                break
            await self._sleep(delay)
        if self._requests is not None:
            await self._requests.take(1)
        if self._tokens is not None and tokens:
            await self._tokens.take(tokens)
        charge = self._charge(tokens)
        waited = None
        if self._request_bucket is not None:
            waited = await self._request_bucket.take(1)
        if self._token_bucket is not None and charge:
            waited = await self._token_bucket.take(charge) or bool(waited)
        now = clock()
        if waited is not None:  # paced: both paces rise while either holds requests back
            self._grow(now, waited)
        self.request_pace.on_sent(now)
        if charge:
            self.token_pace.on_sent(now, charge)
        return now

    def _grow(self, now: float, waited: bool) -> None:
        for pace, bucket in ((self.request_pace, self._request_bucket), (self.token_pace, self._token_bucket)):
            if bucket is not None:
                pace.grow(now, waited)
                if pace.rate is not None and pace.rate != bucket.rate:
                    bucket.set_rate(pace.rate, pace.rate * self.pace_burst)

    def _follow(self, pace: AdaptiveRate, tokens: bool) -> None:
        """Make the bucket of ``pace`` follow its rate, creating it when the pace begins."""
        if pace.rate is None:
            return
        bucket = self._token_bucket if tokens else self._request_bucket
        if bucket is None:
            bucket = TokenBucket(pace.rate, pace.rate * self.pace_burst, self._clock, self._sleep)
            bucket.tokens = 0.0  # the pace begins now, with nothing saved up
            if tokens:
                self._token_bucket = bucket
            else:
                self._request_bucket = bucket
        elif bucket.rate != pace.rate:
            bucket.set_rate(pace.rate, pace.rate * self.pace_burst)

    def settle(self, estimated: int, actual: int | None) -> None:
        """Correct the token budgets once the server reported the ``actual`` usage of a request
        estimated at ``estimated`` tokens (``None``: not reported)."""
        charged = self._charge(estimated)
        if actual is None:
            if not charged:
                return
            amount = charged
        else:
            amount = float(actual)
            if self._tokens is not None:
                self._tokens.debit(actual - estimated)
            if estimated > 0:
                ratio = actual / estimated
                self._tokens_ratio = ratio if self._tokens_ratio is None else 0.9 * self._tokens_ratio + 0.1 * ratio
        if self._token_bucket is not None:
            self._token_bucket.debit(amount - charged)
        average = self._tokens_per_request
        self._tokens_per_request = amount if average is None else 0.9 * average + 0.1 * amount
        self.token_pace.on_answered(self._clock(), amount)

    def answered(self, sent_at: float) -> None:
        """The try let go at ``sent_at`` was answered."""
        self._refusing_since = None
        self.request_pace.on_answered(self._clock(), 1.0, sent_at)
        self.slots.answered()

    def timed_out(self, sent_at: float) -> None:
        """The try let go at ``sent_at`` got no answer in time: fewer tries go at once
        (:attr:`slots`)."""
        self.slots.timed_out(sent_at)

    def refused(self, sent_at: float, retry_after: float | None = None) -> None:
        """The try let go at ``sent_at`` was refused for the rate (HTTP 429), the server asking to
        wait ``retry_after`` seconds: the pace slows down (tokens, requests, or both, as the
        latest ``x-ratelimit-*`` headers tell, both when they tell nothing), and when the provider
        has refused everything for a while, every request waits ``retry_after``."""
        now = self._clock()
        self._refused += 1
        self._refused_at = now
        if self._refusing_since is None:
            self._refusing_since = now
        self._refusals.add(now)
        window = self.request_pace.window()
        sent = self.request_pace.sent.total(now, window)
        share = self._refusals.total(now, window) / sent if sent > 0 else 1.0
        short = self._short or {"requests", "tokens"}
        if "requests" in short and self.request_pace.refused(now, sent_at, share):
            self._follow(self.request_pace, tokens=False)
        counted = self.token_pace.answered.first is not None  # answers reported tokens
        if "tokens" in short and counted and self.token_pace.refused(now, sent_at, share):
            self._follow(self.token_pace, tokens=True)
        if retry_after and now - self._refusing_since >= self.request_pace.window():
            self.pause(retry_after)

    def observe(self, headers: Mapping[str, str]) -> None:
        """Read OpenAI's ``x-ratelimit-limit-*``, ``x-ratelimit-remaining-*`` and
        ``x-ratelimit-reset-*`` headers of an answer (``requests`` and ``tokens``): when what
        remains of a limit runs low, pace at the rate its reset time implies."""
        short: set[str] | None = None
        for kind, pace in (("requests", self.request_pace), ("tokens", self.token_pace)):
            remaining = headers.get(f"x-ratelimit-remaining-{kind}")
            if remaining is None:
                continue
            short = short if short is not None else set()
            try:
                left = float(remaining)
                limit = float(headers.get(f"x-ratelimit-limit-{kind}") or "nan")
            except ValueError:
                continue
            if not left < self.low_share * limit:  # plenty left (or no limit given)
                continue
            short.add(kind)
            reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}") or "")
            if reset and limit > left:
                pace.cap((limit - left) / reset)
                self._follow(pace, tokens=kind == "tokens")
        if short is not None:
            self._short = short
            if short:
                self._low_at = self._clock()

    def pause(self, seconds: float) -> None:
        """Hold every request back for ``seconds``."""
        if seconds > 0:
            self._resume_at = max(self._resume_at, self._clock() + seconds)

    def status(self) -> LimiterStatus:
        """What the limiter is doing now."""
        now = self._clock()
        rates = [rate for rate in (self.request_pace.rate, self.rpm / 60.0 if self.rpm else None) if rate]
        return LimiterStatus(
            rate=min(rates) if rates else None,
            answered=self.request_pace.answered_rate(now),
            limited=now - max(self._refused_at, self._low_at) < self.limited_for,
            refused=self._refused,
        )
