"""When and how long to wait before retrying a request: which HTTP statuses are transient, the
server's ``Retry-After``, and exponential backoff with full jitter."""

from __future__ import annotations

import email.utils
import random
import time
from typing import Any

__all__ = ["RETRY_STATUSES", "parse_retry_after", "retry_delay"]

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 524, 529})


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
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())
