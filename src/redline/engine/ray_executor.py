"""Run a scan's attempts on Ray actors; the store stays with the driver (this process).

:class:`RayExecutor` starts ``workers`` actors (:class:`ScanWorker`). Each builds, once, what the
local scan builds: the generator (a local model loads once per actor, on the GPUs it was given),
the probes of the run's :class:`~redline.engine.config.ScanConfig` and their detectors. The
driver cuts the attempts to run into work units of half the scan's concurrency and keeps two
units in flight per actor (so each actor has ``concurrency`` attempts in flight, and the cluster
``workers x concurrency``: lower ``--concurrency`` for a rate-limited endpoint); an actor runs a unit's attempts concurrently (phases 2 and 3: generate,
detect, evaluate) and streams each attempt back as soon as it is finished, and the driver
commits it to the store at once, exactly as the local executor does. Phase 4 (metrics and
marks) runs in the driver from the store, so the summary is the same whichever executor ran.

**Losing an actor.** When an actor dies (its node lost, its process killed), the attempts of its
units that did not come back are put first in the queue and a new actor takes its place: no
attempt is lost, and none is stored twice (an attempt is stored only when it comes back, and
each comes back once). After ``3 x workers`` replacements the scan stops with an error, and the
run can be resumed.

**Cache.** Actors start with the store's cached answers (one copy in Ray's object store) and send
back what they add, which the driver stores: a re-run is answered from the store as locally.

Ray is an optional extra (``pip install 'redline[ray]'``) and is imported here only when this
executor runs.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from redline.attempt import Attempt
from redline.detectors import DetectorUnavailable
from redline.engine.config import ScanConfig
from redline.engine.executors import ExecutorConfig, ExecutorUnavailable
from redline.generators import GeneratorUnavailable, get_generator
from redline.generators.cache import CachedGenerator
from redline.probes import Probe
from redline.probes.runner import AttemptRunner

__all__ = ["RayExecutor", "ScanWorker", "import_ray"]

INSTALL_HINT = "--executor ray needs Ray: pip install 'redline[ray]'"


def import_ray() -> Any:
    """The ``ray`` module; :class:`ExecutorUnavailable` with the install command without it."""
    try:
        import ray  # optional extra: only a Ray scan imports it
    except ImportError:
        raise ExecutorUnavailable(INSTALL_HINT) from None
    return ray


class _SnapshotCache:
    """The cache of an actor: the store's entries when the scan started, plus what this actor
    added since, which :meth:`take_new` hands to the driver to store."""

    def __init__(self, snapshot: dict[str, list[Any]]) -> None:
        self._known = snapshot
        self._new: dict[str, list[Any]] = {}

    def cache_get(self, key: str) -> list[Any] | None:
        return self._new.get(key, self._known.get(key))

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        self._new[key] = outputs

    def take_new(self) -> dict[str, list[Any]]:
        new, self._new = self._new, {}
        self._known.update(new)
        return new


class ScanWorker:
    """One actor: the generator, probes and detectors of a run, built once; :meth:`run_unit`
    runs attempts and yields each as it finishes. (Wrapped with ``ray.remote`` by
    :class:`RayExecutor`; plain here so that it can be read and tested without Ray.)"""

    def __init__(
        self, config: dict[str, Any], cache: dict[str, list[Any]] | None, build: Callable[[ScanConfig], list[Probe]]
    ) -> None:
        self.config = ScanConfig.from_dict(config)
        self.probes: dict[str, Probe] = {p.name: p for p in build(self.config)}
        self.cache = _SnapshotCache(dict(cache)) if cache is not None else None
        self.runner: AttemptRunner | None = None

    async def start(self, skipped: dict[str, str]) -> int:
        """Start the generator and the detectors; ``skipped`` are the probes the driver left out
        (a detector it could not load, with ``--skip-unavailable``). Returns the process id."""
        for name, reason in skipped.items():
            self.probes[name].skip_reason = reason
        generator = get_generator(self.config.model, **self.config.generator_options)
        generator.preflight()
        if not (self.cache is not None and generator.local):
            await generator.start()
        active = CachedGenerator(generator, self.cache) if self.cache is not None else generator
        self.runner = AttemptRunner(
            active,
            self.config.generations,
            self.config.concurrency,
            keep=False,
            detector_options=self.config.detector_options,
            skip_unavailable=self.config.skip_unavailable,
        )
        await self.runner.start_detectors([p for p in self.probes.values() if not p.skip_reason])
        return os.getpid()

    async def run_unit(self, items: list[tuple[str, dict[str, Any]]]) -> Any:
        """Run the attempts ``(probe name, attempt dict)``; yields ``(probe, attempt dict, new
        cache entries)`` for each, in the order they finish."""
        assert self.runner is not None, "start() first"
        runner = self.runner

        async def one(name: str, data: dict[str, Any]) -> tuple[str, Attempt]:
            return name, await runner.run_one(self.probes[name], Attempt.from_dict(data))

        for done in asyncio.as_completed([one(name, data) for name, data in items]):
            name, attempt = await done
            yield name, attempt.as_dict(), self.cache.take_new() if self.cache is not None else {}


OnDone = Callable[[Attempt], Awaitable[None]]
OnCache = Callable[[str, list[Any]], None]


class RayExecutor:
    """Phases 2 and 3 of a scan on Ray actors (see the module docstring).

    ``run(work, on_done, on_cache, unit_size)`` runs every ``(probe, attempt)`` of ``work``, awaiting
    ``on_done(attempt)`` for each finished one (in the driver, in the order they finish) and
    calling ``on_cache(key, outputs)`` for every answer the actors cached.
    """

    def __init__(
        self,
        settings: ExecutorConfig,
        config: ScanConfig,
        build: Callable[[ScanConfig], list[Probe]],
        *,
        cache: dict[str, list[Any]] | None,
        skipped: dict[str, str],
    ) -> None:
        self.settings = settings
        self.config = config
        self.build = build  # the scan's probes from its config (pickled by name into each actor)
        self.cache = cache
        self.skipped = skipped
        self.ray = import_ray()
        self._started_ray = False
        self._cpus = 1  # CPUs each actor holds (its torch threads: Ray sets OMP_NUM_THREADS to it)
        self._actors: list[Any] = []
        self.pids: list[int] = []  # every actor's process id (tests kill one)
        self.replaced = 0  # actors replaced after dying

    # -- cluster -----------------------------------------------------------------------------------
    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return
        options: dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False}
        if self.settings.ray_address:
            options["address"] = self.settings.ray_address
        else:  # a local instance, on loopback only
            cores = os.cpu_count() or 1
            options.update(
                num_cpus=max(cores, self.settings.workers or 1), include_dashboard=False, _node_ip_address="127.0.0.1"
            )
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.settings.ray_address or "a local Ray instance"
            raise ExecutorUnavailable(f"cannot start Ray ({where}): {str(exc).splitlines()[0]}") from None
        self._started_ray = True

    def _worker_count(self) -> int:
        if self.settings.workers:
            return self.settings.workers
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        return max(1, min(cpus, 8))

    def _check_resources(self, count: int) -> None:
        """Refuse at once what the cluster cannot give (Ray would wait forever for it)."""
        total = self.ray.cluster_resources()
        if len(self.ray.nodes()) == 1:  # one machine: its cores shared out among the actors
            self._cpus = max(1, int(total.get("CPU", 1)) // count)
        wanted = {"CPU": float(count * self._cpus), "GPU": count * self.settings.gpus_per_worker}
        for name, amount in wanted.items():
            have = float(total.get(name, 0.0))
            if amount > have:
                raise ExecutorUnavailable(
                    f"{count} Ray workers need {amount:g} {name}s and the cluster has {have:g}: "
                    "lower --workers or --gpus-per-worker"
                )

    async def _new_actor(self, cache_ref: Any) -> Any:
        ray = self.ray
        remote = ray.remote(ScanWorker).options(
            num_cpus=self._cpus, num_gpus=self.settings.gpus_per_worker, max_restarts=0, max_concurrency=1000
        )
        actor = remote.remote(self.config.as_dict(), cache_ref, self.build)
        self._actors.append(actor)  # killed by _stop() even if its start fails or is interrupted
        try:
            pid = await actor.start.remote(self.skipped)
        except ray.exceptions.RayActorError as exc:
            raise ExecutorUnavailable(f"a Ray worker could not start: {_reason(exc)}") from None
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, Exception) else exc
            if isinstance(cause, (GeneratorUnavailable, DetectorUnavailable)):
                raise cause from None
            raise ExecutorUnavailable(f"a Ray worker could not start: {_reason(cause)}") from None
        self.pids.append(pid)
        return actor

    # -- the run -----------------------------------------------------------------------------------
    async def run(
        self, work: Iterable[tuple[Probe, Attempt]], on_done: OnDone, on_cache: OnCache, unit_size: int
    ) -> None:
        """Run every attempt of ``work`` on the actors, ``unit_size`` attempts per work unit (the
        scan's concurrency: an actor has up to two units in flight)."""
        self._connect()
        ray = self.ray
        try:
            cache_ref = ray.put(self.cache) if self.cache is not None else None
            count = self._worker_count()
            self._check_resources(count)
            actors = await asyncio.gather(*(self._new_actor(cache_ref) for _ in range(count)))
            units = _Units(work, max(1, -(-unit_size // 2)))  # two half units: `unit_size` per actor
            locks = [asyncio.Lock() for _ in range(count)]
            drivers = [
                asyncio.ensure_future(self._drive(slot, actors, locks[slot], units, on_done, on_cache, cache_ref))
                for slot in range(count)
                for _ in range(2)  # two units in flight per actor: one runs while the other streams back
            ]
            try:
                await asyncio.gather(*drivers)
            finally:  # one failed (or Ctrl-C): the others stop before the actors do, storing nothing more
                for task in drivers:
                    task.cancel()
                await asyncio.gather(*drivers, return_exceptions=True)
        finally:
            self._stop()

    async def _drive(
        self,
        slot: int,
        actors: list[Any],
        lock: asyncio.Lock,
        units: _Units,
        on_done: OnDone,
        on_cache: OnCache,
        cache_ref: Any,
    ) -> None:
        """Feed actor ``actors[slot]`` units until there are none; replace it when it dies."""
        ray = self.ray
        while (unit := units.take()) is not None:
            actor = actors[slot]
            back: set[tuple[str, int]] = set()
            try:
                stream = actor.run_unit.options(num_returns="streaming").remote(
                    [(probe.name, attempt.as_dict()) for probe, attempt in unit]
                )
                async for ref in stream:
                    name, data, cached = await ref
                    for key, outputs in cached.items():
                        on_cache(key, outputs)
                    attempt = Attempt.from_dict(data)
                    back.add((name, attempt.seq))
                    await on_done(attempt)
            except ray.exceptions.RayActorError as exc:
                units.put_back([(p, a) for p, a in unit if (p.name, a.seq) not in back])
                async with lock:
                    if actors[slot] is actor:  # the first to see it dead replaces it
                        if self.replaced >= 3 * len(actors):
                            raise ExecutorUnavailable(f"Ray workers keep dying (last: {_reason(exc)})") from None
                        self.replaced += 1
                        actors[slot] = await self._new_actor(cache_ref)

    def _stop(self) -> None:
        ray = self.ray
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:  # already gone
                pass
        self._actors.clear()
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False


class _Units:
    """Work units of up to ``size`` attempts, taken lazily from the work iterator; units put
    back (an actor died) are taken first."""

    def __init__(self, work: Iterable[tuple[Probe, Attempt]], size: int) -> None:
        self._work: Iterator[tuple[Probe, Attempt]] = iter(work)
        self._size = size
        self._back: deque[list[tuple[Probe, Attempt]]] = deque()

    def take(self) -> list[tuple[Probe, Attempt]] | None:
        if self._back:
            return self._back.popleft()
        unit = [item for _, item in zip(range(self._size), self._work)]
        return unit or None

    def put_back(self, unit: list[tuple[Probe, Attempt]]) -> None:
        if unit:
            self._back.append(unit)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
