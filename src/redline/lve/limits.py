"""The bounds of the processes LVE checkers run in (:class:`CheckerLimits`), and the ones this
process's shared pool of them is to use (:func:`configure_shared_pool`).

Kept apart from :mod:`redline.lve.isolation`, which runs the checkers, so that the command line
and a scan's Ray actors set the limits (``--checker-timeout``, ``--checker-memory``)
without loading the LVE format, the checkers and the pool when no LVE is scanned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from redline.lve.errors import CheckerError

__all__ = [
    "MEMORY_HELP",
    "TIMEOUT_HELP",
    "CheckerLimits",
    "checker_limits",
    "configure_shared_pool",
    "shared_pool_limits",
]

TIMEOUT_HELP = "Wall-clock seconds a checker may take on one instance (it is stopped after; CPU time is limited alike)."
MEMORY_HELP = "Memory (MiB) a checker's worker process may use beyond what it starts with."


@dataclass(frozen=True)
class CheckerLimits:
    """Bounds for every checker call made in a worker.

    *timeout*: wall-clock seconds per call (the worker is killed after it). *cpu_seconds*: CPU
    time per call. *memory_mb*: address space a worker may add to what it starts with.
    *workers*: worker processes alive at once (each serves one LVE). *max_reply*: bytes of one
    reply (a checker's recorded response included). *strikes*: after this many crashes,
    timeouts or limits on one LVE, its remaining calls fail at once with the last reason
    instead of costing a timeout each.
    """

    timeout: float = 30.0
    cpu_seconds: int = 30
    memory_mb: int = 2048
    workers: int = max(1, min(os.cpu_count() or 1, 4))
    max_reply: int = 64 * 1024 * 1024
    strikes: int = 3

    def __post_init__(self) -> None:
        if not (
            self.timeout > 0 and self.cpu_seconds > 0 and self.memory_mb > 0 and self.workers > 0 and self.strikes > 0
        ):
            raise CheckerError("checker limits must be positive")


def checker_limits(timeout: float, memory_mb: int) -> CheckerLimits:
    """The checker limits of ``--checker-timeout`` (CPU time alike) and ``--checker-memory``."""
    return CheckerLimits(timeout=timeout, cpu_seconds=max(1, round(timeout)), memory_mb=memory_mb)


_configured: CheckerLimits | None = None


def configure_shared_pool(limits: CheckerLimits) -> None:
    """Use ``limits`` for this process's shared pool of checker workers
    (:func:`redline.lve.isolation.shared_pool`): a pool started with other limits is closed
    and started again with these when next used."""
    global _configured
    _configured = limits


def shared_pool_limits() -> CheckerLimits | None:
    """The limits :func:`configure_shared_pool` set (``None``: the defaults)."""
    return _configured
