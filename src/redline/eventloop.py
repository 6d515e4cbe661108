"""The event loop a long asynchronous command runs on: :func:`run_async`.

Used by the CLI's commands and by a scan's worker processes (:mod:`redline.engine.shard_worker`),
so that both run on the same loop with the same collector settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["run_async"]


def run_async(coroutine: Any) -> Any:
    """Run ``coroutine`` to the end on a new event loop, as :func:`asyncio.run` does, and return
    its result. The loop is uvloop's when it is installed (a scan over HTTP spends much of its
    CPU in the event loop, and uvloop's costs less: ``bench/bench_throughput.py``), unless the
    environment sets ``REDLINE_EVENT_LOOP=asyncio``; otherwise the standard loop."""
    factory = None
    if os.environ.get("REDLINE_EVENT_LOOP", "").strip().lower() != "asyncio":
        try:
            import uvloop  # optional: not on Windows
        except ImportError:
            pass
        else:
            factory = uvloop.new_event_loop
    with collector_for_a_long_run(), asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coroutine)


@contextlib.contextmanager
def collector_for_a_long_run() -> Iterator[None]:
    """Python's cycle collector tuned for a scan, then put back: what was loaded before (modules,
    options) is frozen out of its passes, and it runs every 10,000 new objects instead of every 700
    (with the defaults it took about an eighth of a scan's CPU over HTTP; the memory a scan holds
    does not change, its cycles are few and short-lived)."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
