"""How long an output may be: the ``max_tokens`` every remote request carries, and what a probe needs.

A remote family sends ``max_tokens`` with every request: the ``max_tokens`` option when it is
given (``--max-tokens``), else :data:`DEFAULT_MAX_TOKENS`, raised to what the running probe
declares it needs (:attr:`redline.probes.base.Probe.output_tokens`, set for the attempt's requests
by :func:`needing`). ``redline scan --plan`` counts the same number per probe. Why this default:
``docs/generators.md`` (*Output length and timeouts*).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["DEFAULT_MAX_TOKENS", "cache_scope", "needing", "output_need", "output_tokens"]

DEFAULT_MAX_TOKENS = 256
"""Output tokens a remote request asks for when neither ``--max-tokens`` nor the probe says more."""

_NEED: ContextVar[int | None] = ContextVar("redline_output_need", default=None)


@contextmanager
def needing(tokens: int | None) -> Iterator[None]:
    """Within the block (and the tasks it starts), requests are for outputs of up to ``tokens``
    tokens when no ``max_tokens`` was given (``None``: the default)."""
    token = _NEED.set(tokens if tokens and tokens > 0 else None)
    try:
        yield
    finally:
        _NEED.reset(token)


def output_need() -> int | None:
    """The output tokens the running probe declared it needs (``None``: none declared)."""
    return _NEED.get()


def output_tokens(given: int | None, default: int = DEFAULT_MAX_TOKENS) -> int:
    """``max_tokens`` of a request now: ``given`` (the option, as set) when set, else the larger
    of ``default`` and :func:`output_need`."""
    if given:
        return int(given)
    return max(default, output_need() or 0)


def cache_scope(generator: Any) -> str:
    """What the response cache adds to its keys for a request of ``generator`` now: ``""``, or
    ``"|max_tokens=N"`` when the running probe's need raises the output length past what the
    generator's settings (its ``max_tokens``) say, so that those outputs are not taken for others."""
    if not getattr(generator, "follows_output_need", False):
        return ""
    tokens = generator.output_tokens()
    return f"|max_tokens={tokens}" if tokens != generator.max_tokens else ""
