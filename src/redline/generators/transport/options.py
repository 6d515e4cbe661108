"""The sampling and transport options every remote generator shares, read and checked once."""

from __future__ import annotations

from typing import Any

from redline.generators.base import GeneratorUnavailable
from redline.generators.transport.ratelimit import RateLimiter

__all__ = ["TRANSPORT_OPTIONS", "number_option", "read_transport_options"]

#: The options :func:`read_transport_options` reads.
TRANSPORT_OPTIONS = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "timeout",
        "max_retries",
        "backoff_base",
        "backoff_cap",
        "max_retry_after",
        "concurrency",
        "rpm",
        "tpm",
    }
)


def number_option(
    options: dict, name: str, default: float | None, kind: type = float, minimum: float | None = None
) -> Any:
    value = options.get(name, default)
    if value is None:
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise GeneratorUnavailable(f"generator option {name} must be a number, not {value!r}") from None
    if minimum is not None and number < minimum:
        raise GeneratorUnavailable(f"generator option {name} must be at least {minimum}, not {value!r}")
    return number


def read_transport_options(target: Any, options: dict) -> None:
    """Set the sampling and transport options every remote generator shares on ``target``:
    ``max_tokens``, ``temperature``, ``top_p``, ``timeout``, ``max_retries``, ``backoff_base``,
    ``backoff_cap``, ``max_retry_after``, ``concurrency`` and a :class:`RateLimiter` from ``rpm`` /
    ``tpm``. A value of the wrong type or range raises :class:`GeneratorUnavailable`."""
    target.max_tokens = number_option(options, "max_tokens", None, int, 1)
    target.temperature = number_option(options, "temperature", None, float, 0)
    target.top_p = number_option(options, "top_p", None, float, 0)
    target.timeout = number_option(options, "timeout", 60.0, float, 0.001)
    target.max_retries = number_option(options, "max_retries", 4, int, 0)
    target.backoff_base = number_option(options, "backoff_base", 0.5, float, 0)
    target.backoff_cap = number_option(options, "backoff_cap", 30.0, float, 0)
    target.max_retry_after = number_option(options, "max_retry_after", 120.0, float, 0)
    target.concurrency = number_option(options, "concurrency", None, int, 1)
    target.limiter = RateLimiter(
        number_option(options, "rpm", None, float, 0.001), number_option(options, "tpm", None, float, 0.001)
    )
