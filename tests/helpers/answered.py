"""An attempt that already has its outputs, for scoring with a detector."""

from __future__ import annotations

from redline.attempt import Attempt


def answered(*outputs: str | None, targets: list[str] | None = None, **prompt_metadata: object) -> Attempt:
    """An attempt with ``outputs``, ``targets`` and ``prompt_metadata`` (e.g. ``carrier``, ``regex``)."""
    attempt = Attempt(prompt="q", targets=targets or [], notes={"prompt_metadata": dict(prompt_metadata)})
    attempt.outputs = list(outputs)
    return attempt
