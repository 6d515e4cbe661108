"""The event loop a long asynchronous command runs on: :func:`run_async`.

Used by the CLI's commands and by a scan's worker processes (:mod:`redline.engine.shard_worker`),
so that both run on the same loop with the same collector settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["loop_factory", "run_async"]


def run_async(coroutine: Any) -> Any:
    """Run ``coroutine`` to the end on a new event loop, as :func:`asyncio.run` does, and return
    its result. The loop is uvloop's when it is installed (a scan over HTTP spends much of its
    CPU in the event loop, and uvloop's costs less: ``bench/bench_throughput.py``), unless the
    environment sets ``REDLINE_EVENT_LOOP=asyncio``; otherwise the standard loop."""
    with collector_for_a_long_run(), asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coroutine)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of :func:`run_async`'s loops (``None``: the standard loop's). Importing uvloop
    takes about 10 ms: a process about to fork workers calls this first, so that they do not."""
    if os.environ.get("REDLINE_EVENT_LOOP", "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop  # optional: not on Windows
    except ImportError:
        return None
    return uvloop.new_event_loop


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
