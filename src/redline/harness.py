"""The harness: runs probes against a generator, scores outputs, and stores every attempt.

:func:`scan` is the whole pipeline for a run: resolve probes (phase 1 for each), start the
generator and detectors, then push every attempt through generation → detection → evaluation
(phases 2 and 3) with at most ``concurrency`` attempts in flight. Phase 4 (metrics and marks) runs
per probe over the stored attempts.

Streaming: attempts are pulled from the probes one at a time as workers free up and are not kept
once stored, so memory stays flat however many attempts a run has (a probe may return any sized
iterable from ``create_attempts()`` to avoid building a list); phase 4 reads them back from the
store as it iterates.

Durability: finished attempts go through a :class:`~redline.store.sqlite.BatchWriter` — attempts
finishing together share one transaction, and an attempt is reported finished only once committed.

Cache: unless ``ScanConfig.cache`` is false, the generator is wrapped in a
:class:`~redline.generators.cache.CachedGenerator` backed by the store, so a request already
answered (same model, settings, messages, generation index and repetition) costs nothing.

A run stopped at any moment (Ctrl-C, kill -9) is continued by ``scan(..., resume=RUN_ID)``: the
attempts are rebuilt deterministically and those already stored are skipped.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence as SequenceABC
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from redline.attempt import ATTEMPT_COMPLETE, ATTEMPT_STARTED, Attempt
from redline.checkers import Detector, DetectorUnavailable, get_detector
from redline.generators import Generator, GeneratorError, GeneratorUnavailable, get_generator
from redline.generators.cache import CACHE_SCOPE, CachedGenerator
from redline.probes import Probe, get_probe, resolve_probes
from redline.probes import probes as _probe_registry
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, RUN_RUNNING, Store
from redline.store.sqlite import BatchWriter

__all__ = ["ScanConfig", "AttemptRunner", "StoredAttempts", "scan", "build_probes", "ScanError"]

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
    #: Answer identical requests from the store's cache (``--no-cache`` sets it to False).
    cache: bool = True
    #: Converters applied to every prompt, comma-separated, in order (``--converters``).
    converters: str | None = None
    #: Attacker strategy (``--strategy escalation|refine``) and the auxiliary models; a model
    #: left unset is the model under test (see :mod:`redline.strategies`).
    strategy: str | None = None
    attacker_model: str | None = None
    judge_model: str | None = None
    converter_model: str | None = None
    max_turns: int | None = None
    #: Options per detector (``--detector-opt NAME.KEY=VALUE``), e.g.
    #: ``{"toxicity.Classifier": {"model": "/models/tox"}}``.
    detector_options: dict[str, Any] = field(default_factory=dict)
    #: Report the probes whose detector cannot load as "not measured" instead of stopping
    #: (``--skip-unavailable``).
    skip_unavailable: bool = False
    #: Prompts from the user's dataset (``--dataset``) for ``dataset.Prompts`` and the probes that
    #: accept one (jailbreak templates), with the column mapping (``--dataset-column``).
    dataset: str | None = None
    dataset_columns: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: dict) -> "ScanConfig":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in value.items() if k in known})


def get_probe_class(name: str) -> type:
    """The class registered for probe ``name``."""
    return _probe_registry.load(name)


def build_probes(config: ScanConfig) -> list[Probe]:
    """Instantiate the probes a configuration selects, in order (LVE probes last)."""
    probes: list[Probe] = []
    if config.probes is not None or not config.lve_paths or config.dataset is not None:
        selection = "dataset.Prompts" if config.dataset is not None and config.probes is None else config.probes
        for name in resolve_probes(selection):
            options = dict(config.probe_options.get(name, {}))
            if config.dataset is not None and getattr(get_probe_class(name), "accepts_dataset", False):
                options.setdefault("dataset", config.dataset)
                options.setdefault("dataset_columns", dict(config.dataset_columns))
            if config.sample is not None:
                options.setdefault("sample", config.sample)
                options.setdefault("seed", config.seed)
            if config.num_repetitions is not None:
                options.setdefault("num_repetitions", config.num_repetitions)
            probes.append(get_probe(name, **options))
        if config.dataset is not None and not any(getattr(p, "dataset", None) for p in probes):
            raise ScanError(
                f"--dataset {config.dataset}: none of the selected probes takes a dataset "
                "(use --probes dataset.Prompts, or a jailbreak.* probe to wrap the dataset's prompts)"
            )
        from redline.strategies.wiring import apply_scan_options  # converters, strategies

        probes = apply_scan_options(probes, config)
    elif config.converters or config.strategy:
        raise ScanError("--converters and --strategy apply to --probes, not to --lve")
    if config.lve_paths:
        from redline.probes.lve import lve_probes  # issue 3: LVEs run as probes

        probes.extend(lve_probes(config.lve_paths, trust_code=config.trust_code, sample=config.sample, seed=config.seed))
    return probes


class AttemptRunner:
    """Phases 2 and 3 for many attempts, ``concurrency`` at a time.

    ``store`` and ``run_id`` (optional) persist every finished attempt — through ``writer`` (a
    :class:`BatchWriter` of that store: group commits) when given; ``on_done(attempt)`` is called
    after each one is stored (progress bars). Without a store, :meth:`run_all` returns the
    attempts; with one it keeps none of them in memory.
    """

    def __init__(
        self,
        generator: Generator,
        generations: int = 1,
        concurrency: int | None = None,
        store: Store | None = None,
        run_id: str | None = None,
        on_done: Callable[[Attempt], None] | None = None,
        writer: BatchWriter | None = None,
        detector_options: dict[str, dict[str, Any]] | None = None,
        skip_unavailable: bool = False,
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
        self.writer = writer
        self._detectors: dict[str, Detector] = {}
        self._probe_detectors: dict[str, list[Detector]] = {}
        self.detector_options = dict(detector_options or {})
        self.skip_unavailable = skip_unavailable
        self._unavailable: dict[str, str] = {}

    async def start_detectors(self, probes: Sequence[Probe]) -> None:
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
                            detector = get_detector(name, **self.detector_options.get(name, {}))
                            bind = getattr(detector, "bind", None)
                            if callable(bind):  # model-backed detectors (judge.Rubric): the target model
                                bind(self.generator, probe)
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
                probe.skip_reason = str(exc)  # type: ignore[attr-defined]
                chosen = []
            self._probe_detectors[probe.name] = chosen

    async def detect(self, probe: Probe, attempt: Attempt) -> None:
        for detector in self._probe_detectors.get(probe.name, []):
            scores = await detector.adetect(attempt)
            if len(scores) != len(attempt.outputs):
                raise DetectorUnavailable(
                    f"detector {detector.name} returned {len(scores)} scores for {len(attempt.outputs)} outputs"
                )
            attempt.detector_results[detector.name] = scores

    async def run_one(self, probe: Probe, attempt: Attempt) -> Attempt:
        """Generate, detect, evaluate and store one attempt. A failed request is recorded on the
        attempt (``notes["error"]``) and does not raise; :class:`GeneratorUnavailable` does."""
        attempt.notes.pop("error", None)
        scope = CACHE_SCOPE.set(str(attempt.notes.get("repetition", 0)))
        try:
            await probe.generate(attempt, self.generator, self.generations)
            attempt.status = ATTEMPT_STARTED
            await self.detect(probe, attempt)
            probe.evaluator.evaluate(attempt)
            attempt.status = ATTEMPT_COMPLETE
        except (GeneratorUnavailable, DetectorUnavailable):
            raise
        except GeneratorError as exc:
            attempt.notes["error"] = str(exc)
        except Exception as exc:  # a probe or detector bug must not lose the run
            attempt.notes["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            CACHE_SCOPE.reset(scope)
        if self.store is not None and self.run_id is not None:
            if self.writer is not None:
                await self.writer.save_attempt(self.run_id, attempt)
            else:
                self.store.save_attempt(self.run_id, attempt)
        if self.on_done is not None:
            self.on_done(attempt)
        return attempt

    async def run_all(self, work: Iterable[tuple[Probe, Attempt]]) -> list[Attempt]:
        """Run every (probe, attempt) pair, pulling them from ``work`` lazily (any iterable,
        a generator included). Without a store, returns the attempts in the order given; with a
        store, returns ``[]`` and keeps nothing (the attempts are in the store)."""
        keep = self.store is None or self.run_id is None
        results: dict[int, Attempt] = {}
        iterator = iter(enumerate(work))
        try:
            first = next(iterator)
        except StopIteration:
            return []
        iterator = itertools.chain([first], iterator)
        workers = self.concurrency
        if isinstance(work, SequenceABC):
            workers = min(workers, max(1, len(work)))

        async def worker() -> None:
            for index, (probe, attempt) in iterator:
                done = await self.run_one(probe, attempt)
                if keep:
                    results[index] = done

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(worker())
        except BaseExceptionGroup as group_error:
            # Surface the first real cause (e.g. GeneratorUnavailable), not the group.
            first = group_error.exceptions[0]
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        return [results[i] for i in sorted(results)]


class StoredAttempts(SequenceABC):
    """The non-errored stored attempts of one probe as a read-only sequence for phase 4.

    Iterating streams them from the store (memory stays flat); ``len()`` counts them in SQL;
    indexing (rarely needed by a metric) loads them all once.
    """

    def __init__(self, store: Store, run_id: str, probe: str) -> None:
        self.store, self.run_id, self.probe = store, run_id, probe
        self._loaded: list[Attempt] | None = None

    def __iter__(self) -> Iterator[Attempt]:
        if self._loaded is not None:
            return iter(self._loaded)
        return self.store.iter_attempts(self.run_id, self.probe, errored=False)

    def __len__(self) -> int:
        if self._loaded is not None:
            return len(self._loaded)
        return self.store.count_attempts(self.run_id, self.probe, errored=False)

    def __getitem__(self, index: Any) -> Any:
        if self._loaded is None:
            self._loaded = list(self.store.iter_attempts(self.run_id, self.probe, errored=False))
        return self._loaded[index]


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
        generator.preflight()  # a missing file or package: stop before a run is created
        if progress:
            progress("loading", 0, 0)
        if not (config.cache and generator.local):
            # A local model loads on its first cache miss instead: a cached re-run loads nothing.
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
            total = already = 0
            sources: list[tuple[Probe, Iterable[Attempt], set[int]]] = []
            for probe in probes:
                attempts = probe.create_attempts()  # phase 1: a list, or a lazy sized iterable
                count = len(attempts)  # type: ignore[arg-type]
                done = store.finished_seqs(run_id, probe.name, include_errors=not retry_errors)
                total += count
                already += min(len(done), count)
                sources.append((probe, attempts, done))
            if progress:
                progress("start", already, total)

            def work() -> Iterator[tuple[Probe, Attempt]]:
                for probe, attempts, done in sources:
                    if getattr(probe, "skip_reason", None):  # --skip-unavailable: not measured
                        continue
                    for attempt in attempts:
                        if attempt.seq not in done:
                            yield probe, attempt

            def on_done(_: Attempt) -> None:
                if progress:
                    progress("advance", 1, total)

            async with BatchWriter(store) as writer:
                active = CachedGenerator(generator, writer) if config.cache else generator
                runner = AttemptRunner(
                    active, config.generations, config.concurrency, store, run_id, on_done, writer=writer,
                    detector_options=config.detector_options, skip_unavailable=config.skip_unavailable,
                )
                await runner.start_detectors(probes)
                skipped = [(len(a), len(d)) for p, a, d in sources if getattr(p, "skip_reason", None)]  # type: ignore[arg-type]
                if skipped:  # keep the progress total honest
                    total -= sum(count for count, _ in skipped)
                    already -= sum(min(count, done) for count, done in skipped)
                    if progress:
                        progress("start", already, total)
                await runner.run_all(work())  # phases 2 and 3, streamed
            sources.clear()

            for position, probe in enumerate(probes):  # phase 4
                attempts = StoredAttempts(store, run_id, probe.name)
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
        from redline.strategies.pool import close_model_pools

        await close_model_pools(probes)  # attacker, judge and converter models
        if own_generator:
            await generator.aclose()
