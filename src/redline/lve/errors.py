"""Errors of the LVE format (kept apart so checkers and the LVE loader share them without cycles)."""

from __future__ import annotations

from redline.errors import RedlineError

__all__ = ["CheckerError", "CustomCodeRefused", "LVEFormatError", "where"]


class LVEFormatError(RedlineError, ValueError):
    """A malformed LVE file. The message is one line: ``FILE[:LINE]: problem``."""


class CheckerError(RedlineError, ValueError):
    """A checker cannot judge an instance because of how it is configured (e.g. a lambda whose
    parameters do not match the prompt parameters). Not a verdict: callers report it."""


class CustomCodeRefused(RedlineError, RuntimeError):
    """An LVE needs its own ``checker/checker.py`` to run, and ``--trust-code`` was not given."""


def where(path: object, line: int | None = None) -> str:
    """``path:line`` (or just ``path``) for error messages."""
    return f"{path}:{line}" if line else str(path)
