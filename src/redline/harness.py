"""The harness: runs probes against a generator, scores outputs, and stores every attempt.

:func:`scan` is the whole pipeline for a run: resolve probes (phase 1 for each), start the
generator and detectors, then push every attempt through generation → detection → evaluation
(phases 2 and 3) with at most ``concurrency`` attempts in flight, committing each finished attempt
to the store at once. Phase 4 (metrics and marks) runs per probe over the stored attempts.

A run stopped at any moment (Ctrl-C, kill -9) is continued by ``scan(..., resume=RUN_ID)``: the
attempts are rebuilt deterministically and those already stored are skipped.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Sequence

from redline.attempt import ATTEMPT_COMPLETE, ATTEMPT_STARTED, Attempt
from redline.checkers import Detector, DetectorUnavailable, get_detector
from redline.generators import Generator, GeneratorError, GeneratorUnavailable, get_generator
from redline.probes import Probe, get_probe, resolve_probes
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, RUN_RUNNING, Store

__all__ = ["ScanConfig", "AttemptRunner", "scan", "build_probes", "ScanError"]

ProgressCallback = Callable[[str, int, int], None]
"""``progress(event, done, total)``: ``"loading"`` (the generator is starting), ``"start"``
(``done`` of ``total`` attempts already stored) and ``"advance"`` (one more finished)."""


class ScanError(RuntimeError):
    """A scan cannot start or continue (bad configuration, nothing to resume)."""


@dataclass
class ScanConfig:
    """Everything that defines a run; stored with it so ``--resume`` rebuilds the same run."""

    model: str = "smollm2"
    probes: str | None = None
    generations: int = 1
    concurrency: int | None = None
    sample: int | None = None
    seed: int = 0
    generator_options: dict[str, Any] = field(default_factory=dict)
    probe_options: dict[str, Any] = field(default_factory=dict)
    lve_paths: list[str] = field(default_factory=list)
    trust_code: bool = False
    num_repetitions: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: dict) -> "ScanConfig":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in value.items() if k in known})


def build_probes(config: ScanConfig) -> list[Probe]:
    """Instantiate the probes a configuration selects, in order (LVE probes last)."""
    probes: list[Probe] = []
    if config.probes is not None or not config.lve_paths:
        for name in resolve_probes(config.probes):
            options = dict(config.probe_options.get(name, {}))
            if config.sample is not None:
                options.setdefault("sample", config.sample)
                options.setdefault("seed", config.seed)
            if config.num_repetitions is not None:
                options.setdefault("num_repetitions", config.num_repetitions)
            probes.append(get_probe(name, **options))
    if config.lve_paths:
        from redline.probes.lve import lve_probes  # issue 3: LVEs run as probes

        probes.extend(lve_probes(config.lve_paths, trust_code=config.trust_code, sample=config.sample, seed=config.seed))
    return probes


class AttemptRunner:
    """Phases 2 and 3 for many attempts, ``concurrency`` at a time.

    ``store`` and ``run_id`` (optional) persist every finished attempt; ``on_done(attempt)`` is
    called after each one (progress bars).
    """

    def __init__(
        self,
        generator: Generator,
        generations: int = 1,
        concurrency: int | None = None,
        store: Store | None = None,
        run_id: str | None = None,
        on_done: Callable[[Attempt], None] | None = None,
    ) -> None:
        if generations < 1:
            raise ScanError("--generations must be at least 1")
        self.generator = generator
        self.generations = generations
        if concurrency is None:
            concurrency = 64 if generator.local else 16
        if concurrency < 1:
            raise ScanError("--concurrency must be at least 1")
        self.concurrency = concurrency
        self.store = store
        self.run_id = run_id
        self.on_done = on_done
        self._detectors: dict[str, Detector] = {}
        self._probe_detectors: dict[str, list[Detector]] = {}

    async def start_detectors(self, probes: Sequence[Probe]) -> None:
        """Create and start every detector the probes use; an unknown or unloadable detector
        stops here, before any generation is spent."""
        for probe in probes:
            chosen = []
            for name in probe.detectors:
                if name not in self._detectors:
                    detector = get_detector(name)
                    await detector.start()
                    self._detectors[name] = detector
                chosen.append(self._detectors[name])
            self._probe_detectors[probe.name] = chosen

    def detect(self, probe: Probe, attempt: Attempt) -> None:
        for detector in self._probe_detectors.get(probe.name, []):
            scores = detector.detect(attempt)
            if len(scores) != len(attempt.outputs):
                raise DetectorUnavailable(
                    f"detector {detector.name} returned {len(scores)} scores for {len(attempt.outputs)} outputs"
                )
            attempt.detector_results[detector.name] = scores

    async def run_one(self, probe: Probe, attempt: Attempt) -> Attempt:
        """Generate, detect, evaluate and store one attempt. A failed request is recorded on the
        attempt (``notes["error"]``) and does not raise; :class:`GeneratorUnavailable` does."""
        attempt.notes.pop("error", None)
        try:
            await probe.generate(attempt, self.generator, self.generations)
            attempt.status = ATTEMPT_STARTED
            self.detect(probe, attempt)
            probe.evaluator.evaluate(attempt)
            attempt.status = ATTEMPT_COMPLETE
        except (GeneratorUnavailable, DetectorUnavailable):
            raise
        except GeneratorError as exc:
            attempt.notes["error"] = str(exc)
        except Exception as exc:  # a probe or detector bug must not lose the run
            attempt.notes["error"] = f"{type(exc).__name__}: {exc}"
        if self.store is not None and self.run_id is not None:
            self.store.save_attempt(self.run_id, attempt)
        if self.on_done is not None:
            self.on_done(attempt)
        return attempt

    async def run_all(self, work: Iterable[tuple[Probe, Attempt]]) -> list[Attempt]:
        """Run every (probe, attempt) pair; returns the attempts in the order given."""
        items = list(work)
        results: list[Attempt | None] = [None] * len(items)
        iterator = iter(enumerate(items))

        async def worker() -> None:
            for index, (probe, attempt) in iterator:
                results[index] = await self.run_one(probe, attempt)

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.concurrency, max(1, len(items)))):
                    group.create_task(worker())
        except BaseExceptionGroup as group_error:
            # Surface the first real cause (e.g. GeneratorUnavailable), not the group.
            first = group_error.exceptions[0]
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        return [r for r in results if r is not None]


async def scan(
    config: ScanConfig | None,
    store: Store,
    *,
    resume: str | None = None,
    retry_errors: bool = False,
    progress: ProgressCallback | None = None,
    generator: Generator | None = None,
    on_run: Callable[[str], None] | None = None,
) -> str:
    """Run (or, with ``resume=RUN_ID``, continue) a scan; returns the run id.

    Raises :class:`ScanError`, :class:`~redline.plugins.UnknownPluginError`,
    :class:`GeneratorUnavailable` or :class:`DetectorUnavailable` with a one-line message. On any
    exit before the end the run is marked ``interrupted`` and can be resumed.
    """
    if resume is not None:
        run = store.get_run(resume)
        stored = ScanConfig.from_dict(run["config"]["scan"])
        if config is not None and config.concurrency is not None:
            stored.concurrency = config.concurrency
        config = stored
    elif config is None:
        raise ScanError("scan needs a configuration or a run to resume")

    probes = build_probes(config)
    names = [p.name for p in probes]
    if len(set(names)) != len(names):
        raise ScanError("the same probe is selected twice")
    own_generator = generator is None
    if generator is None:
        generator = get_generator(config.model, **config.generator_options)
    try:
        if progress:
            progress("loading", 0, 0)
        await generator.start()
        if resume is None:
            run_id = store.create_run(
                generator.name,
                {"scan": config.as_dict(), "probe_names": names, "generator": generator.settings()},
            )
        else:
            run_id = resume
            store.set_run_status(run_id, RUN_RUNNING)
        if on_run is not None:
            on_run(run_id)

        status, message = RUN_INTERRUPTED, "stopped before the end"
        try:
            total = 0
            work: list[tuple[Probe, Attempt]] = []
            for probe in probes:
                attempts = probe.create_attempts()  # phase 1
                total += len(attempts)
                done = store.finished_seqs(run_id, probe.name, include_errors=not retry_errors)
                work.extend((probe, a) for a in attempts if a.seq not in done)
            if progress:
                progress("start", total - len(work), total)

            def on_done(_: Attempt) -> None:
                if progress:
                    progress("advance", 1, total)

            runner = AttemptRunner(generator, config.generations, config.concurrency, store, run_id, on_done)
            await runner.start_detectors(probes)
            await runner.run_all(work)  # phases 2 and 3

            for position, probe in enumerate(probes):  # phase 4
                attempts = list(store.iter_attempts(run_id, probe.name, errored=False))
                metrics = probe.calculate_metrics(attempts)
                marks = probe.calculate_marks(metrics)
                store.save_probe_result(
                    run_id,
                    probe.name,
                    position,
                    {
                        "metrics": {k: m.as_dict() for k, m in metrics.items()},
                        "marks": {k: m.as_dict() for k, m in marks.items()},
                        "goal": probe.goal,
                        "tags": list(probe.tags),
                        "detectors": list(probe.detectors),
                        "not_measured": getattr(probe, "skip_reason", None),
                    },
                )
            status, message = RUN_COMPLETE, None
        except BaseException as exc:
            if isinstance(exc, Exception):
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise
        finally:
            store.set_run_status(run_id, status, message)
        return run_id
    finally:
        if own_generator:
            await generator.aclose()
