"""The one base of every error redline raises on purpose: :class:`RedlineError`.

An error that derives from :class:`RedlineError` is *expected*: a mistake in how redline was
called or configured (an unknown name, a malformed file, a bad option), or a model, endpoint or
classifier that cannot be used. Its message is one line that names the problem and where, and the
command line prints it as ``error: …`` with exit status 1. Any other exception escaping a command
is a bug in redline and is reported as an internal error (exit status 70).

Each stage defines its own subclasses next to its code (``GeneratorError`` in
:mod:`redline.generators.base`, ``LVEFormatError`` in :mod:`redline.lve.errors`, …); they also
derive from the built-in exception they used to be (``ValueError``, ``LookupError``,
``RuntimeError``) so that existing ``except`` clauses keep working.
"""

from __future__ import annotations

__all__ = ["RedlineError", "UsageError"]


class RedlineError(Exception):
    """Base of every error redline raises on purpose; the message is one line for the user."""


class UsageError(RedlineError, ValueError):
    """A value given by the user (an option, an argument) that cannot be used."""
