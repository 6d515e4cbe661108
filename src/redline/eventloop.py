"""The event loop a long asynchronous command runs on: :func:`run_async`.

Used by the CLI's commands.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["run_async"]


def run_async(coroutine: Any) -> Any:
    """Run ``coroutine`` to the end on a new event loop (:func:`asyncio.run`) and return its
    result."""
    return asyncio.run(coroutine)
