"""Phases 2 and 3 of the probe anatomy for many attempts: :class:`AttemptRunner`.

For every (probe, attempt) pair the runner asks the generator (``probe.generate``), scores every
output with the probe's detectors and lets the probe's evaluator judge them, at most
``concurrency`` attempts at a time. What happens to a finished attempt is the caller's choice:
:meth:`~redline.probes.base.Probe.run` keeps them in memory, the engine's scan passes an
``on_done`` coroutine that commits each one to the store before it counts as finished.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from collections.abc import Sequence as SequenceABC
from typing import Any, Protocol

from redline.attempt import ATTEMPT_COMPLETE, ATTEMPT_STARTED, Attempt
from redline.detectors import Detector, DetectorUnavailable, get_detector
from redline.errors import RedlineError, UsageError
from redline.evaluation import Evaluator
from redline.generators import Generator, GeneratorUnavailable
from redline.generators.cache import CACHE_SCOPE, CACHED_NOTE

__all__ = ["AttemptRunner", "RunnableProbe", "waiting_bound"]


#: Attempts per unit of concurrency that may wait in ``on_done`` at a time (see :func:`waiting_bound`).
WAITING_PER_SLOT = 4

#: The fewest attempts that may wait in ``on_done`` at a time, whatever the concurrency.
MIN_WAITING = 256


def waiting_bound(concurrency: int) -> int:
    """How many scored attempts :meth:`AttemptRunner.run_all` lets wait in ``on_done`` at a time
    with ``concurrency`` attempts in flight: enough that a store committing a transaction every
    :data:`redline.engine.pipeline.COMMIT_INTERVAL` never holds back the next request, few enough that the attempts held stay a small, fixed amount of memory."""
    return max(MIN_WAITING, WAITING_PER_SLOT * concurrency)


class RunnableProbe(Protocol):
    """What the runner needs of a probe (every :class:`~redline.probes.base.Probe` has it)."""

    @property
    def name(self) -> str: ...

    detectors: list[str]
    evaluator: Evaluator
    skip_reason: str | None

    async def generate(self, attempt: Attempt, generator: Generator, generations: int) -> Attempt: ...


class AttemptRunner:
    """Phases 2 and 3 for many attempts, ``concurrency`` at a time.

    ``on_done(attempt)``, a coroutine, is awaited for every finished attempt (errored ones
    included): the engine stores the attempt there. In :meth:`run_all` phase 3 and ``on_done``
    run in a task of their own while the worker sends its next request, so detection and storage
    overlap the requests in flight: at most ``concurrency`` attempts are being scored at a time
    (a judge model's requests count against it), and at most :func:`waiting_bound` of
    ``concurrency`` wait in ``on_done`` (for the store's next transaction, which takes many).
    With ``keep=True`` (the default) :meth:`run_all` also returns the attempts, in the order
    given; with ``keep=False`` it keeps none of them in memory.

    ``detector_options`` are passed to each detector by name; with ``skip_unavailable`` a probe
    whose detector cannot load gets ``skip_reason`` instead of stopping the run.
    ``on_drained()`` is called once in :meth:`run_all` when every request has been answered and
    only the attempts being finished remain (a store holding its next transaction for more
    attempts need not wait).
    """

    def __init__(
        self,
        generator: Generator,
        generations: int = 1,
        concurrency: int | None = None,
        on_done: Callable[[Attempt], Awaitable[None]] | None = None,
        keep: bool = True,
        detector_options: dict[str, dict[str, Any]] | None = None,
        skip_unavailable: bool = False,
        on_drained: Callable[[], None] | None = None,
    ) -> None:
        if generations < 1:
            raise UsageError("--generations must be at least 1")
        self.generator = generator
        self.generations = generations
        if concurrency is None:
            concurrency = self.default_concurrency(generator)
        if concurrency < 1:
            raise UsageError("--concurrency must be at least 1")
        self.concurrency = concurrency
        self.on_done = on_done
        self.on_drained = on_drained
        self.keep = keep
        self._detectors: dict[str, Detector] = {}
        self._probe_detectors: dict[str, list[Detector]] = {}
        self.detector_options = dict(detector_options or {})
        self.skip_unavailable = skip_unavailable
        self._unavailable: dict[str, str] = {}

    @staticmethod
    def default_concurrency(generator: Generator) -> int:
        """Attempts in flight when none is given: 128 for a local model (its batch), else 16."""
        return 128 if generator.local else 16

    async def start_detectors(self, probes: Sequence[RunnableProbe]) -> None:
        """Create (with :attr:`detector_options`) and start every detector the probes use; an
        unknown or unloadable detector stops here, before any generation is spent — unless
        :attr:`skip_unavailable`, where a probe whose detector raises :class:`DetectorUnavailable`
        gets ``probe.skip_reason`` (reported "not measured") and no detectors."""
        for probe in probes:
            chosen = []
            try:
                for name in probe.detectors:
                    if name in self._unavailable:
                        raise DetectorUnavailable(self._unavailable[name])
                    if name not in self._detectors:
                        try:
                            detector = get_detector(
                                name,
                                options_by_name=self.detector_options,  # for an ensemble's members
                                **self.detector_options.get(name, {}),
                            )
                            detector.bind(self.generator, probe)  # model-backed detectors: the target model
                            await detector.start()
                        except DetectorUnavailable as exc:
                            self._unavailable[name] = str(exc)
                            raise
                        except TypeError as exc:  # an option the detector does not take
                            raise DetectorUnavailable(f"detector {name}: bad --detector-opt: {exc}") from None
                        self._detectors[name] = detector
                    chosen.append(self._detectors[name])
            except DetectorUnavailable as exc:
                if not self.skip_unavailable:
                    raise
                probe.skip_reason = str(exc)
                chosen = []
            self._probe_detectors[probe.name] = chosen

    async def close_detectors(self) -> None:
        """Close what the detectors opened themselves (an LLM judge's own model): every started
        detector's :meth:`~redline.detectors.Detector.aclose`. The detectors stay readable (name, version)."""
        for detector in self._detectors.values():
            await detector.aclose()

    def detectors_of(self, probe: str) -> list[Detector]:
        """The started detectors that score probe ``probe`` (``[]`` before
        :meth:`start_detectors`, or when the probe is not measured)."""
        return list(self._probe_detectors.get(probe, []))

    async def detect(self, probe: RunnableProbe, attempt: Attempt) -> None:
        for detector in self._probe_detectors.get(probe.name, []):
            scores = await detector.adetect(attempt)
            if len(scores) != len(attempt.outputs):
                raise DetectorUnavailable(
                    f"detector {detector.name} returned {len(scores)} scores for {len(attempt.outputs)} outputs"
                )
            attempt.detector_results[detector.name] = scores

    async def run_one(self, probe: RunnableProbe, attempt: Attempt) -> Attempt:
        """Generate, detect and evaluate one attempt, then await ``on_done``. A failed request (or
        any other :class:`RedlineError`, e.g. an LVE checker's worker that crashed) is recorded on
        the attempt (``notes["error"]``) and does not raise;
        :class:`GeneratorUnavailable` and :class:`DetectorUnavailable` do."""
        generated = await self._generate(probe, attempt)
        return await self._finish(probe, attempt, generated)

    async def _generate(self, probe: RunnableProbe, attempt: Attempt) -> bool:
        """Phase 2 of :meth:`run_one`: True when the attempt has its outputs, False when the
        failure is recorded in ``notes["error"]``."""
        attempt.notes.pop("error", None)
        attempt.notes.pop(CACHED_NOTE, None)
        scope = CACHE_SCOPE.set(str(attempt.notes.get("repetition", 0)))
        try:
            await probe.generate(attempt, self.generator, self.generations)
            attempt.status = ATTEMPT_STARTED
            cached = sum(1 for o in attempt.outputs if o.notes and o.notes.get(CACHED_NOTE))
            if cached:  # outputs answered from the response cache, counted by the run summary
                attempt.notes[CACHED_NOTE] = cached
            return True
        except (GeneratorUnavailable, DetectorUnavailable):
            raise
        except RedlineError as exc:  # a failed request: one line
            attempt.notes["error"] = str(exc)
        except Exception as exc:  # a probe bug must not lose the run
            attempt.notes["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            CACHE_SCOPE.reset(scope)
        return False

    async def _finish(self, probe: RunnableProbe, attempt: Attempt, generated: bool) -> Attempt:
        """Phase 3 of :meth:`run_one` (when phase 2 gave outputs), then ``on_done``."""
        await self._score(probe, attempt, generated)
        if self.on_done is not None:
            await self.on_done(attempt)
        return attempt

    async def _score(self, probe: RunnableProbe, attempt: Attempt, generated: bool) -> None:
        """Phase 3 (when phase 2 gave outputs): the detectors' scores and the evaluation, or the
        failure recorded in ``notes["error"]``."""
        if generated:
            scope = CACHE_SCOPE.set(str(attempt.notes.get("repetition", 0)))  # a judge may ask the model
            try:
                await self.detect(probe, attempt)
                probe.evaluator.evaluate(attempt)
                attempt.status = ATTEMPT_COMPLETE
            except (GeneratorUnavailable, DetectorUnavailable):
                raise
            except RedlineError as exc:  # an LVE checker's worker that crashed: one line
                attempt.notes["error"] = str(exc)
            except Exception as exc:  # a detector bug must not lose the run
                attempt.notes["error"] = f"{type(exc).__name__}: {exc}"
            finally:
                CACHE_SCOPE.reset(scope)

    async def run_all(self, work: Iterable[tuple[RunnableProbe, Attempt]]) -> list[Attempt]:
        """Run every (probe, attempt) pair, pulling them from ``work`` lazily (any iterable,
        a generator included). Returns the attempts in the order given with :attr:`keep`, else
        ``[]`` (nothing is kept: ``on_done`` has taken care of them)."""
        keep = self.keep
        results: dict[int, Attempt] = {}
        iterator: Iterator[tuple[int, tuple[RunnableProbe, Attempt]]] = iter(enumerate(work))
        try:
            first = next(iterator)
        except StopIteration:
            return []
        iterator = itertools.chain([first], iterator)
        workers = self.concurrency
        if isinstance(work, SequenceABC):
            workers = min(workers, max(1, len(work)))

        # Pipelined: a worker hands an attempt whose outputs came back to its own finishing task
        # (phase 3 and on_done) and sends its next request at once, so detection and storage
        # overlap the requests in flight instead of delaying them. At most ``workers`` attempts
        # are being scored at a time; more may wait in on_done for the store's next transaction.
        scoring = asyncio.Semaphore(workers)
        waiting = asyncio.Semaphore(waiting_bound(workers))
        on_done = self.on_done

        async def finish(index: int, probe: RunnableProbe, attempt: Attempt, generated: bool) -> None:
            try:
                try:
                    await self._score(probe, attempt, generated)
                finally:
                    scoring.release()
                if on_done is not None:
                    await on_done(attempt)
                if keep:
                    results[index] = attempt
            finally:
                waiting.release()

        sending = [workers]  # workers still sending requests

        async def worker(group: asyncio.TaskGroup) -> None:
            for index, (probe, attempt) in iterator:
                generated = await self._generate(probe, attempt)
                await waiting.acquire()
                await scoring.acquire()
                group.create_task(finish(index, probe, attempt, generated))
            sending[0] -= 1
            if not sending[0] and self.on_drained is not None:
                self.on_drained()

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(worker(group))
        except BaseExceptionGroup as group_error:
            # Surface the first real cause (e.g. GeneratorUnavailable), not the group.
            cause: BaseException = group_error.exceptions[0]
            while isinstance(cause, BaseExceptionGroup):
                cause = cause.exceptions[0]
            raise cause from None
        return [results[i] for i in sorted(results)]
