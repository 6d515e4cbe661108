"""The errors the store raises: :class:`StoreError` and :class:`RunNotFound`."""

from __future__ import annotations

from redline.errors import RedlineError

__all__ = ["RunNotFound", "StoreError"]


class StoreError(RedlineError, RuntimeError):
    """The store file cannot be opened, written or is not a redline store, or a setting passed to
    it looks like a secret. The message is one line naming the file or the setting."""


class RunNotFound(StoreError):
    """No run with that id in the store."""
