"""How a scan's attempts are executed: on this machine (``local``, the default: in this process,
or for a remote model in worker processes, :mod:`redline.engine.shards`) or by the actors of a Ray
cluster (``ray``, :mod:`redline.engine.ray_executor`).

An :class:`ExecutorConfig` says how a run executes, not what it measures: it is not part of the
:class:`~redline.engine.config.ScanConfig`, is never stored with the run, may differ when a run is
resumed, and leaves the run's summary unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redline.errors import UsageError

__all__ = [
    "EXECUTORS",
    "MAX_GPUS_PER_WORKER",
    "MAX_PROCESSES",
    "MAX_WORKERS",
    "ExecutorConfig",
    "ExecutorError",
    "ExecutorUnavailable",
    "check_gpus_per_worker",
    "check_processes",
    "check_workers",
]

#: The executors ``--executor`` takes.
EXECUTORS = ("local", "ray")

MAX_WORKERS = 1024
"""The most Ray actors a scan asks for (``--workers``, ``workers:``)."""

MAX_GPUS_PER_WORKER = 64
"""The most GPUs one Ray actor asks for (an actor lives on one machine)."""


def check_workers(value: Any) -> int:
    """Ray actors: an integer from 1 to :data:`MAX_WORKERS`; ``ValueError`` (what it must be) if not."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"must be an integer from 1 to {MAX_WORKERS}")
    return value


MAX_PROCESSES = 64
"""The most worker processes a local scan runs (``--processes``, ``processes:``)."""


def check_processes(value: Any) -> int:
    """Local worker processes: an integer from 1 to :data:`MAX_PROCESSES`; ``ValueError`` (what
    it must be) if not."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PROCESSES:
        raise ValueError(f"must be an integer from 1 to {MAX_PROCESSES}")
    return value


def check_gpus_per_worker(value: Any) -> float:
    """GPUs per Ray actor: a number from 0 to :data:`MAX_GPUS_PER_WORKER`, whole above 1 (Ray
    shares a GPU, never splits several); ``ValueError`` (what it must be) if not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_GPUS_PER_WORKER:
        raise ValueError(f"must be a number from 0 to {MAX_GPUS_PER_WORKER}")
    if value > 1 and value != int(value):
        raise ValueError("must be a whole number above 1 (fractions share one GPU)")
    return float(value)


class ExecutorError(UsageError):
    """Executor settings that do not fit together; the message names them."""


class ExecutorUnavailable(ExecutorError):
    """The executor asked for cannot run here (Ray is not installed, its cluster unreachable)."""


@dataclass(frozen=True)
class ExecutorConfig:
    """``kind``: ``"local"`` or ``"ray"``. Local: ``processes``, the worker processes that run the
    attempts of a scan of a remote model (``1``: all in this process; ``None``: chosen by
    :func:`redline.engine.shards.choose_processes`, from the cores and the scan). With Ray:
    ``ray_address`` (an existing cluster, ``HOST:PORT`` or ``auto``; ``None`` starts a local Ray instance on 127.0.0.1), ``workers`` (the
    actors; default: the cluster's CPUs, at most 8), ``gpus_per_worker`` (GPUs each actor holds,
    for local models)."""

    kind: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    gpus_per_worker: float = 0.0
    processes: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ExecutorError(f"unknown executor {self.kind!r} (choose {' or '.join(EXECUTORS)})")
        if self.kind == "ray" and self.processes is not None:
            raise ExecutorError("--processes applies to the local executor; with --executor ray use --workers")
        if self.kind == "local" and (self.ray_address or self.workers is not None or self.gpus_per_worker):
            raise ExecutorError("--ray-address, --workers and --gpus-per-worker need --executor ray")
        checks = (
            ("--processes", self.processes, check_processes),
            ("--workers", self.workers, check_workers),
            ("--gpus-per-worker", self.gpus_per_worker, check_gpus_per_worker),
        )
        for flag, value, check in checks:
            if value is not None:
                try:
                    check(value)
                except ValueError as exc:
                    raise ExecutorError(f"{flag} {exc}, not {value!r}") from None
