"""A text stream that wakes threads waiting for a line to be written (progress tests)."""

from __future__ import annotations

import io
import threading


class SignallingStream(io.StringIO):
    """A stderr that tells waiting threads when something was written to it."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = threading.Condition()

    def write(self, text: str) -> int:
        with self._changed:
            written = super().write(text)
            self._changed.notify_all()
        return written

    def wait_for(self, text: str, timeout: float = 30) -> bool:
        """True once ``text`` has been written, False after ``timeout`` seconds without it."""
        with self._changed:
            return self._changed.wait_for(lambda: text in self.getvalue(), timeout)
