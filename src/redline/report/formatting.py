"""How reports and the command line write rates and intervals: one set of formatters.

A rate is a fraction in [0, 1] written as a percentage with one decimal (``0.125`` → ``12.5%``);
an interval is written ``lo–hi%`` with an en dash (``[0.05, 0.2]`` → ``5.0–20.0%``). A value that
does not exist (``None``, an empty interval) is written ``missing``: an en dash ``–`` in the
exports and the HTML report (:data:`MISSING`), a hyphen ``-`` in the terminal tables.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MISSING", "pct", "pct_interval"]

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
