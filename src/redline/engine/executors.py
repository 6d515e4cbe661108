"""The execution seam of a scan: where phases 2 and 3 (generate, detect, evaluate) of its attempts run.

:func:`redline.engine.pipeline.scan` uses one :class:`Executor`, made by
:func:`redline.engine.pipeline.make_executor` from an :class:`ExecutorConfig`:
:class:`InProcessExecutor` (``local``, the default: an
:class:`~redline.probes.runner.AttemptRunner` on this process's event loop) or
:class:`~redline.engine.ray_executor.RayExecutor` (``ray``: actors of a Ray cluster, or of a
local Ray instance to use this machine's cores). The pipeline hands it the attempts to run and an
``on_done`` coroutine that stores each finished attempt; the store, phase 4 and the summary do not
know which executor ran.

An :class:`ExecutorConfig` says how a run executes, not what it measures: it is not part of the
:class:`~redline.engine.config.ScanConfig`, is never stored with the run, may differ when a run is
resumed, and leaves the run's summary unchanged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from redline.attempt import Attempt
from redline.engine.budget import Budget, MeteredGenerator, is_pause
from redline.engine.config import ScanConfig
from redline.errors import UsageError
from redline.generators import Generator
from redline.generators.cache import CacheBackend, CachedGenerator
from redline.probes import Probe
from redline.probes.runner import AttemptRunner
from redline.store import BatchWriter

__all__ = [
    "EXECUTORS",
    "MAX_GPUS_PER_WORKER",
    "MAX_WORKERS",
    "Executor",
    "ExecutorConfig",
    "ExecutorError",
    "ExecutorUnavailable",
    "InProcessExecutor",
    "OnDone",
    "Work",
    "check_gpus_per_worker",
    "check_workers",
    "scan_runner",
]

#: The executors ``--executor`` takes.
EXECUTORS = ("local", "ray")

MAX_WORKERS = 1024
"""The most Ray actors a scan asks for (``--workers``, ``workers:``)."""

MAX_GPUS_PER_WORKER = 64
"""The most GPUs one Ray actor asks for (an actor lives on one machine)."""

OnDone = Callable[[Attempt], Awaitable[None]]
"""Awaited in this process for every finished attempt (the pipeline stores it there)."""

Work = Iterable[tuple[Probe, Attempt]]
"""The ``(probe, attempt)`` pairs to run, pulled lazily; may hold budget pauses
(:func:`~redline.engine.budget.is_pause`), which wait and are never run."""


def check_workers(value: Any) -> int:
    """Ray actors: an integer from 1 to :data:`MAX_WORKERS`; ``ValueError`` (what it must be) if not."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"must be an integer from 1 to {MAX_WORKERS}")
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
    """Executor settings that do not fit together, or an option an executor cannot apply; the
    message names them."""


class ExecutorUnavailable(ExecutorError):
    """The executor asked for cannot run here (Ray is not installed, its cluster unreachable)."""


@dataclass(frozen=True)
class ExecutorConfig:
    """``kind``: ``"local"`` (this process) or ``"ray"``. With Ray: ``ray_address`` (an existing
    cluster, ``HOST:PORT`` or ``auto``; ``None`` starts a local Ray instance on 127.0.0.1, which
    uses this machine's cores), ``workers`` (the actors; default: the cluster's CPUs, at most 8),
    ``gpus_per_worker`` (GPUs each actor holds, for local models)."""

    kind: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    gpus_per_worker: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ExecutorError(f"unknown executor {self.kind!r} (choose {' or '.join(EXECUTORS)})")
        if self.kind == "local" and (self.ray_address or self.workers is not None or self.gpus_per_worker):
            raise ExecutorError("--ray-address, --workers and --gpus-per-worker need --executor ray")
        checks = (
            ("--workers", self.workers, check_workers),
            ("--gpus-per-worker", self.gpus_per_worker, check_gpus_per_worker),
        )
        for flag, value, check in checks:
            if value is not None:
                try:
                    check(value)
                except ValueError as exc:
                    raise ExecutorError(f"{flag} {exc}, not {value!r}") from None


def scan_runner(
    config: ScanConfig,
    generator: Generator,
    *,
    cache: CacheBackend | None,
    budget: Budget | None,
    on_drained: Callable[[], None] | None = None,
) -> AttemptRunner:
    """The :class:`~redline.probes.runner.AttemptRunner` of a scan's attempts.

    Args:
        config: the scan (generations per attempt, concurrency, detector options).
        generator: the model under test.
        cache: answers identical requests and takes the new answers; ``None``: no cache.
        budget: counts what each request cost; ``None``: nothing is counted.
        on_drained: called once every request has been answered.
    """
    active: Generator = CachedGenerator(generator, cache) if cache is not None else generator
    if budget is not None:
        active = MeteredGenerator(active, budget, cached=cache is not None)
    return AttemptRunner(
        active,
        config.generations,
        config.concurrency,
        keep=False,
        detector_options=config.detector_options,
        skip_unavailable=config.skip_unavailable,
        on_drained=on_drained,
    )


class Executor(ABC):
    """Runs phases 2 and 3 of a scan's attempts.

    The pipeline calls, in order: :meth:`prepare` before the run is created (what can fail early),
    :meth:`start` once it is, :meth:`run`, and :meth:`close` (always, after a failure too; twice
    is harmless); :meth:`detector_versions` is read after :meth:`start`. What each attempt's
    requests to the model under test cost is counted in the scan's budget, if it has one.
    """

    async def prepare(self) -> None:  # noqa: B027 - optional: nothing to do by default
        """Do what can fail before the run is created (load the model, reach the cluster)."""

    @abstractmethod
    async def start(self, probes: Sequence[Probe], writer: BatchWriter) -> None:
        """Start the detectors of ``probes`` (and whatever runs the attempts). With the scan's
        ``skip_unavailable``, a probe whose detector cannot load gets ``skip_reason`` instead of
        stopping the scan. ``writer`` is the run's: its cache answers a request already answered,
        and takes the new answers."""

    @abstractmethod
    async def run(self, work: Work, on_done: OnDone) -> None:
        """Run every ``(probe, attempt)`` of ``work``, taken as there is room, and await
        ``on_done(attempt)`` in this process for each finished one (never for a budget pause)."""

    @abstractmethod
    def detector_versions(self, probe: str) -> dict[str, str]:
        """The name and version of every detector that scores probe ``probe`` (phase 4 records them)."""

    async def close(self) -> None:  # noqa: B027 - optional: nothing to do by default
        """Release what :meth:`prepare` and :meth:`start` took (detectors' models, actors)."""


class InProcessExecutor(Executor):
    """Phases 2 and 3 in this process: an :class:`~redline.probes.runner.AttemptRunner` with the
    scan's concurrency, the generator answering from the run's cache (unless ``config.cache`` is
    off) and metered by ``budget``."""

    def __init__(self, config: ScanConfig, generator: Generator, *, budget: Budget | None = None) -> None:
        self.config = config
        self.generator = generator
        self.budget = budget
        self._runner: AttemptRunner | None = None
        self._closed = False

    async def prepare(self) -> None:
        if not (self.config.cache and self.generator.local):
            # a local model loads on its first cache miss instead: a cached re-run loads nothing
            await self.generator.start()

    async def start(self, probes: Sequence[Probe], writer: BatchWriter) -> None:
        self._runner = scan_runner(
            self.config,
            self.generator,
            cache=writer if self.config.cache else None,
            budget=self.budget,
            on_drained=writer.hurry,  # the last attempts are not held for the commit interval
        )
        await self._runner.start_detectors(probes)

    async def run(self, work: Work, on_done: OnDone) -> None:
        runner = self._started()

        async def done(attempt: Attempt) -> None:
            if not is_pause(attempt):
                await on_done(attempt)

        runner.on_done = done
        await runner.run_all(work)

    def detector_versions(self, probe: str) -> dict[str, str]:
        return {d.name: str(d.version) for d in self._started().detectors_of(probe)}

    async def close(self) -> None:
        if self._runner is not None and not self._closed:
            self._closed = True
            await self._runner.close_detectors()  # an LLM judge's own model

    def _started(self) -> AttemptRunner:
        assert self._runner is not None, "start() first"
        return self._runner
