"""The Ray executor: a scan's attempts run on Ray actors; the store stays with the driver (this process).

:class:`RayExecutor` starts ``workers`` actors (:class:`ScanWorker`). Each builds, once, what the
in-process executor builds: the generator (a local model loads once per actor, on the GPUs it was
given), the probes of the run's :class:`~redline.engine.config.ScanConfig` and their detectors.
Without ``--ray-address`` Ray starts on this machine (127.0.0.1), which is how a scan uses its
cores: ``--executor ray --workers N``.

The driver cuts the attempts to run into work units of half the scan's concurrency and keeps two
units in flight per actor (so each actor has ``concurrency`` attempts in flight, and the cluster
``workers x concurrency``); an actor runs a unit's attempts concurrently (phases 2 and 3) and
streams each attempt back as soon as it is finished, and the driver hands it to the pipeline's
``on_done``, which commits it to the store, exactly as in process.

**Limits.** The endpoint's own limits (the generator options ``concurrency``, ``rpm`` and ``tpm``)
are divided among the actors (:func:`actor_config`), so that together they send no more than one
process would. A budget (``--budget-usd``, ``--max-requests``) stays with the driver: it admits
each attempt before the attempt goes into a unit, each actor counts what every attempt's requests
cost (:class:`~redline.engine.budget.AttemptCosts`) and sends it back with the attempt, and the
driver charges it. LVE checkers run on the actors with the driver's ``--checker-timeout`` and
``--checker-memory``.

**Losing an actor.** When an actor dies (its node lost, its process killed), the attempts of its
units that did not come back are put first in the queue and a new actor takes its place: no
attempt is lost, and none is stored twice (an attempt is stored only when it comes back, and
each comes back once). After ``3 x workers`` replacements the scan stops with an error, and the
run can be resumed.

**Cache.** Actors start with the store's cached answers (one copy in Ray's object store) and send
back what they add, which the driver stores: a re-run is answered from the store as in process.

**Files.** Each actor reads the files the configuration names (a local model, ``--dataset``,
``--lve``, a ``--judge`` model folder) at the same path: on a cluster, they must be there on
every node.

Ray is an optional extra (``pip install 'redline[ray]'``) and is imported only inside functions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from redline.attempt import Attempt
from redline.detectors import DetectorUnavailable
from redline.engine.budget import AttemptCosts, Budget, Estimate, RequestShape, is_pause, wait_out
from redline.engine.config import ScanConfig
from redline.engine.executors import Executor, ExecutorConfig, ExecutorUnavailable, OnDone, Work, scan_runner
from redline.generators import Generator, GeneratorUnavailable, get_generator
from redline.lve.limits import CheckerLimits, configure_shared_pool, shared_pool_limits
from redline.probes import Probe
from redline.probes.runner import AttemptRunner
from redline.store import BatchWriter

__all__ = ["RayExecutor", "ScanWorker", "actor_config", "import_ray"]

INSTALL_HINT = "--executor ray needs Ray: pip install 'redline[ray]'"

#: The generator options that limit what is sent to the endpoint: divided among the actors
#: (whole numbers for ``concurrency``).
SHARED_LIMITS = (("concurrency", True), ("rpm", False), ("tpm", False))


def import_ray() -> Any:
    """The ``ray`` module; :class:`ExecutorUnavailable` with the install command without it."""
    try:
        import ray  # optional extra: only a Ray scan imports it
    except ImportError:
        raise ExecutorUnavailable(INSTALL_HINT) from None
    return ray


def actor_config(config: ScanConfig, index: int, count: int) -> dict[str, Any]:
    """The configuration actor ``index`` of ``count`` runs with (as :meth:`ScanConfig.as_dict`):
    ``config`` with its share of the endpoint's limits (:data:`SHARED_LIMITS`; a whole limit is
    split as evenly as it goes, at least 1 each)."""
    options = dict(config.generator_options)
    for key, whole in SHARED_LIMITS:
        value = options.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            if whole:
                part, extra = divmod(int(value), count)
                options[key] = max(1, part + (1 if index < extra else 0))
            else:
                options[key] = value / count
    data = config.as_dict()
    data["generator_options"] = options
    return data


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
    :class:`RayExecutor`; plain here so that it can be read and tested without Ray.)

    ``config``: the run's configuration with this actor's share of the limits (:func:`actor_config`);
    ``cache``: the store's cached answers (``None``: no cache); ``build``: the scan's probes from
    its configuration, as the driver builds them; ``metered``: count what each attempt cost (the
    driver keeps a budget); ``checker_limits``: the LVE checkers' limits."""

    def __init__(
        self,
        config: dict[str, Any],
        cache: dict[str, list[Any]] | None,
        build: Callable[[ScanConfig], list[Probe]],
        metered: bool = False,
        checker_limits: dict[str, Any] | None = None,
    ) -> None:
        if checker_limits is not None:
            configure_shared_pool(CheckerLimits(**checker_limits))
        self.config = ScanConfig.from_dict(config)
        self.probes: dict[str, Probe] = {p.name: p for p in build(self.config)}
        self.cache = _SnapshotCache(dict(cache)) if cache is not None else None
        self.costs = AttemptCosts() if metered else None
        self.runner: AttemptRunner | None = None

    async def start(self, skipped: dict[str, str]) -> dict[str, Any]:
        """Start the generator and the detectors; ``skipped`` are probes already not measured
        (a detector that could not load on another actor, with ``--skip-unavailable``). Returns
        the process id, the probes not measured here (``skipped`` and those whose detector
        cannot load) and each measured probe's detector versions."""
        for name, reason in skipped.items():
            self.probes[name].skip_reason = reason
        generator = get_generator(self.config.model, **self.config.generator_options)
        generator.preflight()
        if not (self.cache is not None and generator.local):
            await generator.start()
        if self.costs is not None:
            self.costs.bind(RequestShape.of(generator, self.config.generations))
        self.runner = scan_runner(self.config, generator, cache=self.cache, budget=self.costs)
        measured = [p for p in self.probes.values() if not p.skip_reason]
        await self.runner.start_detectors(measured)
        runner = self.runner
        return {
            "pid": os.getpid(),
            "skipped": {p.name: p.skip_reason for p in self.probes.values() if p.skip_reason},
            "versions": {p.name: {d.name: str(d.version) for d in runner.detectors_of(p.name)} for p in measured},
        }

    async def run_unit(self, items: list[tuple[str, dict[str, Any]]]) -> Any:
        """Run the attempts ``(probe name, attempt dict)``; yields ``(probe, attempt dict, new
        cache entries, cost)`` for each, in the order they finish (``cost``: what its requests
        cost, as :meth:`Estimate.as_dict`; ``None`` unless metered)."""
        assert self.runner is not None, "start() first"
        runner, costs = self.runner, self.costs

        async def one(name: str, data: dict[str, Any]) -> tuple[str, Attempt, dict[str, int] | None]:
            if costs is None:
                return name, await runner.run_one(self.probes[name], Attempt.from_dict(data)), None
            with costs.counting() as cost:
                attempt = await runner.run_one(self.probes[name], Attempt.from_dict(data))
            return name, attempt, cost.as_dict()

        for done in asyncio.as_completed([one(name, data) for name, data in items]):
            name, attempt, cost = await done
            yield name, attempt.as_dict(), self.cache.take_new() if self.cache is not None else {}, cost


class RayExecutor(Executor):
    """Phases 2 and 3 of a scan on Ray actors (see the module docstring). ``settings``: the
    cluster and the actors; ``generator``: the driver's, never started (it names the run and
    gives the default concurrency); ``build``: the scan's probes from its configuration (pickled
    by name into each actor)."""

    def __init__(
        self,
        settings: ExecutorConfig,
        config: ScanConfig,
        generator: Generator,
        build: Callable[[ScanConfig], list[Probe]],
        *,
        budget: Budget | None = None,
    ) -> None:
        self.settings = settings
        self.config = config
        self.build = build
        self.budget = budget
        self.concurrency = config.concurrency or AttemptRunner.default_concurrency(generator)
        self.ray = import_ray()
        self._started_ray = False
        self._count = 0
        self._cpus = 1  # CPUs each actor holds (its torch threads: Ray sets OMP_NUM_THREADS to it)
        self._actors: list[Any] = []  # every actor started, to kill at the end
        self._slots: list[Any] = []  # the actor of each slot
        self._cache_ref: Any = None
        self._writer: BatchWriter | None = None
        self._skipped: dict[str, str] = {}
        self._versions: dict[str, dict[str, str]] = {}
        self.pids: list[int] = []  # every actor's process id (tests kill one)
        self.replaced = 0  # actors replaced after dying

    # -- cluster -----------------------------------------------------------------------------------
    async def prepare(self) -> None:
        """Reach the cluster (or start Ray here) and check it can hold the actors."""
        self._connect()
        self._count = self._worker_count()
        self._check_resources(self._count)

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
            raise ExecutorUnavailable(f"cannot start Ray ({where}): {_reason(exc)}") from None
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

    # -- actors ------------------------------------------------------------------------------------
    async def start(self, probes: Sequence[Probe], writer: BatchWriter) -> None:
        """Start the actors; a probe not measured on any of them is not measured (``skip_reason``)."""
        self._writer = writer
        self._cache_ref = self.ray.put(dict(writer.store.cache_items())) if self.config.cache else None
        started = await asyncio.gather(*(self._new_actor(slot) for slot in range(self._count)))
        self._slots = [actor for actor, _ in started]
        for _, info in started:
            for name, reason in info["skipped"].items():
                self._skipped.setdefault(name, reason)
        for probe in probes:
            if probe.name in self._skipped:
                probe.skip_reason = self._skipped[probe.name]
        self._versions = started[0][1]["versions"] if started else {}

    async def _new_actor(self, slot: int) -> tuple[Any, dict[str, Any]]:
        """A started actor for ``slot`` (its share of the limits) and what its start returned."""
        ray = self.ray
        remote = ray.remote(ScanWorker).options(
            num_cpus=self._cpus, num_gpus=self.settings.gpus_per_worker, max_restarts=0, max_concurrency=1000
        )
        limits = shared_pool_limits()
        actor = remote.remote(
            actor_config(self.config, slot, self._count),
            self._cache_ref,
            self.build,
            self.budget is not None,
            dataclasses.asdict(limits) if limits is not None else None,
        )
        self._actors.append(actor)  # killed by close() even if its start fails or is interrupted
        try:
            info = await actor.start.remote(dict(self._skipped))
        except ray.exceptions.RayActorError as exc:
            raise ExecutorUnavailable(f"a Ray worker could not start: {_reason(exc)}") from None
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, Exception) else exc
            if isinstance(cause, (GeneratorUnavailable, DetectorUnavailable)):
                raise cause from None
            raise ExecutorUnavailable(f"a Ray worker could not start: {_reason(cause)}") from None
        self.pids.append(info["pid"])
        return actor, info

    def detector_versions(self, probe: str) -> dict[str, str]:
        return dict(self._versions.get(probe, {}))

    # -- the run -----------------------------------------------------------------------------------
    async def run(self, work: Work, on_done: OnDone) -> None:
        """Run every attempt of ``work`` on the actors, in units of half the scan's concurrency
        (an actor has up to two units in flight)."""
        units = _Units(work, max(1, -(-self.concurrency // 2)))
        locks = [asyncio.Lock() for _ in self._slots]
        drivers = [
            asyncio.ensure_future(self._drive(slot, locks[slot], units, on_done))
            for slot in range(len(self._slots))
            for _ in range(2)  # two units in flight per actor: one runs while the other streams back
        ]
        try:
            await asyncio.gather(*drivers)
        finally:  # one failed (or Ctrl-C): the others stop before the actors do, storing nothing more
            for task in drivers:
                task.cancel()
            await asyncio.gather(*drivers, return_exceptions=True)

    async def _drive(self, slot: int, lock: asyncio.Lock, units: _Units, on_done: OnDone) -> None:
        """Feed the actor of ``slot`` units until there are none; replace it when it dies."""
        ray, writer, budget = self.ray, self._writer, self.budget
        assert writer is not None, "start() first"
        while (unit := await units.take()) is not None:
            actor = self._slots[slot]
            back: set[tuple[str, int]] = set()
            try:
                stream = actor.run_unit.options(num_returns="streaming").remote(
                    [(probe.name, attempt.as_dict()) for probe, attempt in unit]
                )
                async for ref in stream:
                    name, data, cached, cost = await ref
                    for key, outputs in cached.items():
                        writer.cache_put(key, outputs)
                    attempt = Attempt.from_dict(data)
                    back.add((name, attempt.seq))
                    if budget is not None and cost is not None:
                        budget.charge(Estimate(**cost))
                    await on_done(attempt)
            except ray.exceptions.RayTaskError as exc:  # the error itself, not Ray's traceback of it
                raise (exc.cause if isinstance(exc.cause, Exception) else ExecutorUnavailable(_reason(exc))) from None
            except ray.exceptions.RayActorError as exc:
                units.put_back([(p, a) for p, a in unit if (p.name, a.seq) not in back])
                async with lock:
                    if self._slots[slot] is actor:  # the first to see it dead replaces it
                        if self.replaced >= 3 * len(self._slots):
                            raise ExecutorUnavailable(f"Ray workers keep dying (last: {_reason(exc)})") from None
                        self.replaced += 1
                        self._slots[slot], _ = await self._new_actor(slot)

    async def close(self) -> None:
        """Kill the actors, and stop Ray if this executor started it."""
        ray = self.ray
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:  # already gone
                pass
        self._actors.clear()
        self._slots = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False


class _Units:
    """Work units of up to ``size`` attempts, taken lazily from the work iterator; units put
    back (an actor died) are taken first. A budget pause in the work ends the unit being made,
    or, when it is empty, is waited out (the budget admits more once an attempt in flight is
    done) before the work is read again."""

    def __init__(self, work: Work, size: int) -> None:
        self._work: Iterator[tuple[Probe, Attempt]] = iter(work)
        self._size = size
        self._back: deque[list[tuple[Probe, Attempt]]] = deque()

    async def take(self) -> list[tuple[Probe, Attempt]] | None:
        while True:
            if self._back:
                return self._back.popleft()
            unit: list[tuple[Probe, Attempt]] = []
            pause: tuple[Probe, Attempt] | None = None
            for probe, attempt in self._work:
                if is_pause(attempt):
                    pause = (probe, attempt)
                    break
                unit.append((probe, attempt))
                if len(unit) >= self._size:
                    break
            if unit or pause is None:
                return unit or None
            await wait_out(pause)

    def put_back(self, unit: list[tuple[Probe, Attempt]]) -> None:
        if unit:
            self._back.append(unit)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
