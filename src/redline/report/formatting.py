"""How reports and the command line write rates, intervals and counts: one set of formatters.

A rate is a fraction in [0, 1] written as a percentage with one decimal (``0.125`` → ``12.5%``);
an interval is written ``lo–hi%`` with an en dash (``[0.05, 0.2]`` → ``5.0–20.0%``). A value that
does not exist (``None``, an empty interval) is written ``missing``: an en dash ``–`` in the
exports and the HTML report (:data:`MISSING`), a hyphen ``-`` in the terminal tables. A count
of things is written with its noun in the singular or the plural (``1 attempt``, ``2 attempts``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MISSING", "pct", "pct_interval", "plural"]

MISSING = "–"
"""What the exports and the HTML report show for a value that does not exist."""


def pct(value: float | None, digits: int = 1, missing: str = MISSING) -> str:
    """``value`` as a percentage with ``digits`` decimals (``0.5`` → ``50.0%``); ``missing`` for
    ``None``."""
    return missing if value is None else f"{value * 100:.{digits}f}%"


def pct_interval(ci: Sequence[float] | None, digits: int = 1, missing: str = MISSING) -> str:
    """The interval ``(lo, hi)`` as percentages, ``lo–hi%`` (``(0.05, 0.2)`` → ``5.0–20.0%``);
    ``missing`` for ``None`` or an empty interval."""
    if not ci:
        return missing
    return f"{ci[0] * 100:.{digits}f}–{ci[1] * 100:.{digits}f}%"


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless ``count`` is 1: ``plural(1,
    "attempt")`` → ``"1 attempt"``, ``plural(0, "attempt")`` → ``"0 attempts"``. The plural is
    ``noun + "s"`` unless ``plural_form`` is given (``plural(2, "family", "families")``)."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"
