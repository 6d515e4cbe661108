"""How a scan's attempts are executed: in this process (``local``, the default) or by the actors
of a Ray cluster (``ray``, :mod:`redline.engine.ray_executor`).

An :class:`ExecutorConfig` says how a run executes, not what it measures: it is not part of the
:class:`~redline.engine.config.ScanConfig`, is never stored with the run, may differ when a run is
resumed, and leaves the run's summary unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from redline.errors import UsageError

__all__ = ["EXECUTORS", "ExecutorConfig", "ExecutorError", "ExecutorUnavailable"]

#: The executors ``--executor`` takes.
EXECUTORS = ("local", "ray")


class ExecutorError(UsageError):
    """Executor settings that do not fit together; the message names them."""


class ExecutorUnavailable(ExecutorError):
    """The executor asked for cannot run here (Ray is not installed, its cluster unreachable)."""


@dataclass(frozen=True)
class ExecutorConfig:
    """``kind``: ``"local"`` or ``"ray"``. With Ray: ``ray_address`` (an existing cluster,
    ``HOST:PORT`` or ``auto``; ``None`` starts a local Ray instance on 127.0.0.1), ``workers`` (the
    actors; default: the cluster's CPUs, at most 8), ``gpus_per_worker`` (GPUs each actor holds,
    for local models)."""

    kind: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    gpus_per_worker: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ExecutorError(f"unknown executor {self.kind!r} (choose {' or '.join(EXECUTORS)})")
        if self.kind == "local" and (self.ray_address or self.workers is not None or self.gpus_per_worker):
            raise ExecutorError("--ray-address, --workers and --gpus-per-worker need --executor ray")
        if self.workers is not None and self.workers < 1:
            raise ExecutorError(f"--workers must be at least 1, not {self.workers}")
        if self.gpus_per_worker < 0:
            raise ExecutorError(f"--gpus-per-worker must not be negative, not {self.gpus_per_worker}")
        if self.gpus_per_worker > 1 and self.gpus_per_worker != int(self.gpus_per_worker):
            raise ExecutorError(f"--gpus-per-worker above 1 must be a whole number, not {self.gpus_per_worker}")
