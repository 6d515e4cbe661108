"""The retry policy every remote generator shares: which failures are transient, the server's
``Retry-After``, exponential backoff with full jitter, ``max_retries``, and the retry count.

A backend writes one try of a request as a coroutine function and hands it to
:meth:`RetryPolicy.call`. The try returns the answer, or raises :class:`TransientFailure` for a
failure worth another try (a status in :data:`RETRY_STATUSES`, a timeout, a dropped connection),
or raises anything else, which ends the request at once (:class:`GeneratorError` for a bad
request, :class:`GeneratorUnavailable` for a refused key). A successful answer that cannot be read
(:class:`MalformedResponse`: a truncated body, a proxy's HTML page, JSON without the expected
fields) is a transient failure too. How a backend's own failures map onto
these is the backend's business (HTTP statuses and aiohttp errors in
:mod:`redline.generators.transport.http`, LiteLLM's exception classes in
:mod:`redline.generators.litellm`); when and how long to wait, and what to say after the last try,
is decided here.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from redline.generators.base import GeneratorError, GeneratorUnavailable
from redline.generators.transport.ratelimit import RateLimiter, Silence

__all__ = [
    "RETRY_STATUSES",
    "TIMEOUT_GROWTH",
    "MalformedResponse",
    "RetryPolicy",
    "TransientFailure",
    "Unanswered",
    "is_transient_status",
    "parse_retry_after",
    "retry_delay",
]

T = TypeVar("T")

TIMEOUT_GROWTH = 2.0
"""How many times its first timeout a try gets after a timeout of the same request."""

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 524, 529})
"""HTTP statuses worth another try: timeouts, conflicts, rate limits and server-side failures."""


def is_transient_status(status: int | None) -> bool:
    """True when an answer with HTTP ``status`` is worth another try (:data:`RETRY_STATUSES`)."""
    return status in RETRY_STATUSES


class TransientFailure(GeneratorError):
    """Raised by one try of a request to ask for another. The message says what went wrong (it
    becomes the :class:`GeneratorError` raised after the last try). ``retry_after`` is the wait
    the server asked for, in seconds (``None``: back off as usual); ``throttled`` is True when the
    server refused for the rate (a 429): the generator's rate limiter then slows its pace;
    ``timed_out`` is True when no answer came in time: the limiter then lets fewer tries go at
    once, and the next try of the request waits longer (:meth:`RetryPolicy.timeout`);
    ``unanswered`` is True when no answer came at all (a timeout, a lost connection).

    It is a :class:`GeneratorError` so that, should one escape a retry loop, the request is
    recorded as failed like any other; :meth:`RetryPolicy.call` never lets one escape."""

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        throttled: bool = False,
        timed_out: bool = False,
        unanswered: bool = False,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.throttled = throttled
        self.timed_out = timed_out
        self.unanswered = unanswered or timed_out


class Unanswered(GeneratorError):
    """A request failed after its last try, and none of its tries was answered (each timed out or
    lost its connection)."""


class MalformedResponse(TransientFailure):
    """A successful answer (HTTP 2xx) that cannot be read: not JSON, or JSON without the fields the
    backend needs. A backend's parser raises it inside the try; being a :class:`TransientFailure`,
    the request is tried again with the same backoff and budget as a 5xx, and after the last try
    the attempt records the problem (``"malformed response from URL: ... (after N tries)"``). A
    server answering an error object is not malformed: that is a :class:`GeneratorError` at once."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a request.

    A request is tried at most ``max_retries + 1`` times. Before retry number ``k`` (0-based) it
    waits for the server's ``Retry-After`` capped at ``max_retry_after`` seconds, or else for
    ``uniform(0, min(backoff_cap, backoff_base · 2^k))`` seconds (full jitter). A try that follows
    a timeout of the same request gets :data:`TIMEOUT_GROWTH` times the timeout (:meth:`timeout`).
    """

    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    max_retry_after: float = 120.0

    @property
    def tries(self) -> int:
        """How many times a request is sent at most."""
        return self.max_retries + 1

    @staticmethod
    def timeout(base: float, timeouts: int) -> float:
        """The timeout of a try that follows ``timeouts`` timeouts of the same request: ``base``,
        or :data:`TIMEOUT_GROWTH` times ``base`` after one or more. A slow server is often still
        generating for the try it was abandoned by: the next try waits for that work as well."""
        return base * (TIMEOUT_GROWTH if timeouts else 1.0)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based), given the server's wait."""
        capped = None if retry_after is None else min(retry_after, self.max_retry_after)
        return retry_delay(retry, capped, self.backoff_base, self.backoff_cap)

    async def call(
        self,
        attempt: Callable[[int], Awaitable[T]],
        limiter: RateLimiter | None = None,
        estimated_tokens: int = 0,
        on_retry: Callable[[], None] | None = None,
    ) -> T:
        """Return ``await attempt(i)`` for the first try ``i`` (0-based) that does not raise
        :class:`TransientFailure`; any other exception propagates at once.

        Before each try the request waits for a place among the tries in flight of ``limiter``
        (if given; :attr:`RateLimiter.slots`) and for its pace with ``estimated_tokens``, and
        tells it afterwards whether the try was answered, refused for the rate (``throttled``,
        with the server's capped wait) or timed out (``timed_out``). The place is given back when
        the try is over, before any wait. After a transient failure it calls ``on_retry`` (to count
        retries) and sleeps :meth:`delay`. After the last try raises :class:`GeneratorError`:
        ``"<last failure> (after N tries)"``.

        The breaker (:attr:`RateLimiter.silence <redline.generators.transport.ratelimit.Silence>`):
        while the endpoint has answered nothing, requests whose every try went unanswered (timed
        out, lost the connection) are counted; once enough did, this request and any try still to
        come raise :class:`GeneratorUnavailable` (the run stops, resumable) instead of more tries.
        """
        silence: Silence | None = getattr(limiter, "silence", None)
        if silence is None:  # no limiter, or one without a breaker
            return await self._call(attempt, limiter, estimated_tokens, on_retry)
        silence.begin()
        try:
            return await self._call(attempt, limiter, estimated_tokens, on_retry)
        except Unanswered as error:
            silence.failed_unanswered()
            if silence.tripped:
                raise GeneratorUnavailable(self._silent(silence.failed, str(error))) from None
            raise
        finally:
            silence.end()

    @staticmethod
    def _silent(failed: int, last: str) -> str:
        """The one line of an endpoint that answered nothing to its first ``failed`` requests."""
        return (
            f"the endpoint answers nothing: its first {failed} requests all timed out or lost their connection "
            f"and none was answered (last: {last})"
        )

    async def _call(
        self,
        attempt: Callable[[int], Awaitable[T]],
        limiter: RateLimiter | None,
        estimated_tokens: int,
        on_retry: Callable[[], None] | None,
    ) -> T:
        """:meth:`call` without the breaker: the tries of one request."""
        last = "no response"
        sent = 0.0
        unanswered = True
        silence: Silence | None = getattr(limiter, "silence", None)
        for index in range(self.tries):
            if silence is not None and silence.tripped:  # another request found the endpoint silent
                raise GeneratorUnavailable(self._silent(silence.failed, last))
            if limiter is not None:
                await limiter.slots.enter()
            try:
                if limiter is not None:
                    sent = await limiter.acquire(estimated_tokens)
                answer = await attempt(index)
            except TransientFailure as failure:
                last = str(failure)
                unanswered = unanswered and failure.unanswered
                wait = failure.retry_after
                if wait is not None:
                    wait = min(wait, self.max_retry_after)
                if silence is not None and not failure.unanswered:
                    silence.answered()
                if limiter is not None:
                    if failure.throttled:
                        limiter.refused(sent, wait)
                    if failure.timed_out:
                        limiter.timed_out(sent)
            else:
                if silence is not None:
                    silence.answered()
                if limiter is not None:
                    limiter.answered(sent)
                return answer
            finally:
                if limiter is not None:
                    limiter.slots.leave()
            if index < self.max_retries:
                if on_retry is not None:
                    on_retry()
                await asyncio.sleep(self.delay(index, wait))
        raise (Unanswered if unanswered else GeneratorError)(f"{last} (after {self.tries} tries)")


def retry_delay(attempt: int, retry_after: float | str | None = None, base: float = 0.5, cap: float = 30.0) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): the server's ``Retry-After``
    when it gives one, else exponential backoff with full jitter, ``uniform(0, min(cap, base·2^n))``."""
    if retry_after is not None and retry_after != "":
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass
    return random.uniform(0, min(cap, base * (2**attempt)))


def parse_retry_after(headers: Any) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, ``retry-after`` in seconds or as an
    HTTP date; ``None`` when absent or unreadable."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    # an HTTP date is rare (most servers send seconds): its parser (the email package) is loaded then
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())
