"""The error every report module raises for a report that cannot be made."""

from __future__ import annotations

from redline.errors import RedlineError

__all__ = ["ReportError"]


class ReportError(RedlineError, RuntimeError):
    """A report or export cannot be produced (one-line message naming the run or file)."""
