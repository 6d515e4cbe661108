"""The scan: runs probes against a generator, scores outputs, and stores every attempt.

:func:`scan` is the whole pipeline for a run: resolve probes (phase 1 for each), start the
generator and detectors, then push every attempt through generation → detection → evaluation
(phases 2 and 3) through an :class:`~redline.engine.executors.Executor` (in this process, or on Ray
actors), storing each as it finishes. Phase 4 (metrics and marks) runs per probe over the stored
attempts.

Streaming: attempts are pulled from the probes one at a time as workers free up and are not kept
once stored, so memory stays flat however many attempts a run has (a probe may return any sized
iterable from ``create_attempts()`` to avoid building a list); phase 4 reads them back from the
store as it iterates.

Durability: finished attempts go through a :class:`~redline.store.BatchWriter` — attempts
finishing within :data:`COMMIT_INTERVAL` of each other share one transaction, and an attempt is
reported finished only once committed.

Cache: unless ``ScanConfig.cache`` is false, the generator is wrapped in a
:class:`~redline.generators.cache.CachedGenerator` backed by the store, so a request already
answered (same model, settings, messages, generation index and repetition) costs nothing.

A run stopped at any moment (Ctrl-C, kill -9) is continued by ``scan(..., resume=RUN_ID)``: the
attempts are rebuilt deterministically and those already stored are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, replace
from typing import Any, cast

from redline.attachments import prepare_scan
from redline.attacks.pool import close_model_pools
from redline.attacks.wiring import apply_scan_options
from redline.attempt import Attempt
from redline.detectors import check_detector_spec
from redline.engine.budget import Budget, RequestShape
from redline.engine.config import ScanConfig
from redline.engine.executors import Executor, ExecutorConfig, ExecutorError, InProcessExecutor
from redline.engine.ray_executor import RayExecutor
from redline.engine.trust import check_resume
from redline.errors import UsageError
from redline.evaluation.measures import COMPLIANCE_JUDGE, HARM_JUDGE
from redline.generators import Generator, get_generator
from redline.generators.transport.options import TRANSPORT_OPTION_SPECS
from redline.generators.transport.secrets import has_masked_userinfo, mask_url
from redline.probes import Probe, get_probe, probe_sources, resolve_probes
from redline.probes import probes as _probe_registry
from redline.probes.base import AttemptSource
from redline.probes.benchmark import BenchmarkProbe
from redline.store import RUN_COMPLETE, RUN_INTERRUPTED, RUN_RUNNING, BatchWriter, RunRecord, Store

__all__ = [
    "ScanConfig",
    "ScanError",
    "StoredAttempts",
    "attempts_to_run",
    "build_probes",
    "make_executor",
    "scan",
    "selected_probe_names",
]

ProgressCallback = Callable[[str, int, int], None]
"""``progress(event, done, total)``: ``"loading"`` (the generator is starting), ``"start"``
(``done`` of ``total`` attempts already stored) and ``"advance"`` (``done`` more finished)."""


#: Key of a run's stored config: true when the run records, in each probe's phase-4 result, the
#: version of every detector that scored it (``"detector_versions": {name: version}``).
RECORDS_DETECTOR_VERSIONS = "records_detector_versions"


class ScanError(UsageError):
    """A scan cannot start or continue (bad configuration, nothing to resume)."""


def get_probe_class(name: str) -> type[Probe]:
    """The class registered for probe ``name``."""
    cls: type[Probe] = _probe_registry.load(name)
    return cls


#: The detector ``--judge`` replaces.
REPLACED_BY_JUDGE = COMPLIANCE_JUDGE

#: The detector ``--harm-judge`` replaces.
REPLACED_BY_HARM_JUDGE = HARM_JUDGE

#: Seconds a scan's store waits after a transaction before the next one, so that the attempts
#: finishing meanwhile share it (a quiet scan's attempt, finishing later, is committed at once):
#: fewer, larger transactions; at most this much is added to the time an attempt waits.
COMMIT_INTERVAL = 0.005

#: A scan's new cache entries are written this many at a time, in key order (see
#: :class:`~redline.store.BatchWriter`): written a few with each transaction, their random keys
#: land on as many pages of the key's index. A kill loses at most this many entries, never an attempt.
CACHE_BATCH = 1024


def apply_judge(probes: list[Probe], judge: str, flag: str = "--judge", replaced: str = REPLACED_BY_JUDGE) -> str:
    """Put the detector spec ``judge`` in place of detector ``replaced`` (``refusal.Compliance``;
    ``--harm-judge``: ``harm.Substance``) in each probe's detectors, in its role (see
    :meth:`~redline.probes.Probe.replace_detector`); returns the spec normalised (the judge's
    name). Raises :class:`~redline.detectors.DetectorSpecError` or
    :class:`~redline.plugins.UnknownPluginError` for a spec that cannot be read, and
    :class:`ScanError` when no probe uses ``replaced`` (the option would do nothing)."""
    name = check_detector_spec(judge)
    used = [probe.replace_detector(replaced, name) for probe in probes]  # every probe, not the first
    if not any(used):
        raise ScanError(
            f"{flag} {judge}: it replaces the {replaced} detector, which none of the selected "
            "probes uses (the harmful, jailbreak, harmful benchmark and dataset probes do)"
        )
    return name


def selected_probe_names(config: ScanConfig) -> list[str] | None:
    """The names of the registered probes a configuration selects, in order: ``probes``, else
    ``dataset.Prompts`` for a dataset, else the default probes; ``None`` when only LVEs are
    scanned."""
    if config.probes is None and config.lve_paths and config.dataset is None:
        return None
    return resolve_probes("dataset.Prompts" if config.dataset is not None and config.probes is None else config.probes)


def build_probes(config: ScanConfig) -> list[Probe]:
    """Instantiate the probes a configuration selects, in order (LVE probes last)."""
    probes: list[Probe] = []
    names = selected_probe_names(config)
    if names is not None:
        for name in names:
            options = dict(config.probe_options.get(name, {}))
            if config.dataset is not None and get_probe_class(name).accepts_dataset:
                options.setdefault("dataset", config.dataset)
                options.setdefault("dataset_columns", dict(config.dataset_columns))
            if config.sample is not None:
                options.setdefault("sample", config.sample)
                options.setdefault("seed", config.seed)
            if config.num_repetitions is not None:
                options.setdefault("num_repetitions", config.num_repetitions)
            if config.skip_unavailable and issubclass(get_probe_class(name), BenchmarkProbe):
                options.setdefault("if_missing", "skip")  # its file is nowhere: 'not measured'
            try:
                probes.append(get_probe(name, **options))
            except TypeError as exc:
                unknown = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
                if unknown is None:
                    raise
                raise ScanError(f"probe_options for {name}: the probe has no option {unknown.group(1)!r}") from None
        if config.dataset is not None and not any(p.dataset for p in probes):
            raise ScanError(
                f"--dataset {config.dataset}: none of the selected probes takes a dataset "
                "(use --probes dataset.Prompts, or a jailbreak.* probe to wrap the dataset's prompts)"
            )
        if config.judge:  # normalised in place: the stored config names the same model from any folder
            config.judge = apply_judge(probes, config.judge)
        if config.harm_judge:
            config.harm_judge = apply_judge(probes, config.harm_judge, "--harm-judge", REPLACED_BY_HARM_JUDGE)
        probes = apply_scan_options(probes, config)  # converters, strategies
    elif config.converters or config.strategy:
        raise ScanError("--converters and --strategy apply to --probes, not to --lve")
    elif config.judge:
        raise ScanError("--judge applies to --probes (it replaces refusal.Compliance), not to --lve")
    elif config.harm_judge:
        raise ScanError("--harm-judge applies to --probes (it replaces harm.Substance), not to --lve")
    if config.lve_paths:
        lve_probes = probe_sources.load("lve")
        probes.extend(
            lve_probes(config.lve_paths, trust_code=config.trust_code, sample=config.sample, seed=config.seed)
        )
    return probes


class StoredAttempts(SequenceABC):
    """The non-errored stored attempts of one probe as a read-only sequence for phase 4.

    Iterating streams them from the store (memory stays flat); ``len()`` counts them in SQL;
    indexing (rarely needed by a metric) loads them all once.
    """

    def __init__(self, store: Store, run_id: str, probe: str) -> None:
        self.store, self.run_id, self.probe = store, run_id, probe
        self._loaded: list[Any] | None = None

    def _read(self) -> Iterator[Any]:
        return self.store.iter_attempts(self.run_id, self.probe, errored=False)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._loaded) if self._loaded is not None else self._read()

    def __len__(self) -> int:
        if self._loaded is not None:
            return len(self._loaded)
        return self.store.count_attempts(self.run_id, self.probe, errored=False)

    def __getitem__(self, index: Any) -> Any:
        if self._loaded is None:
            self._loaded = list(self._read())
        return self._loaded[index]


class StoredNotes(StoredAttempts):
    """The notes of the non-errored stored attempts of one probe, each as an
    :class:`AttemptNotes`: phase 4 for a probe whose metric calculators read nothing else
    (:attr:`~redline.evaluation.MetricCalculator.notes_only`)."""

    def _read(self) -> Iterator[Any]:
        return map(AttemptNotes, self.store.iter_attempt_notes(self.run_id, self.probe, errored=False))


@dataclass(frozen=True, slots=True)
class AttemptNotes:
    """A stored attempt's notes, read without the rest of the attempt."""

    notes: dict[str, Any]


def stored_for_metrics(store: Store, run_id: str, probe: Probe) -> Sequence[Attempt]:
    """What phase 4 gives ``probe``'s metric calculators: its stored notes alone when every
    calculator reads only notes, else its stored attempts."""
    if all(calculator.notes_only for calculator in probe.metric_calculators):
        return cast("Sequence[Attempt]", StoredNotes(store, run_id, probe.name))  # read as Noted
    return StoredAttempts(store, run_id, probe.name)


Source = tuple[Probe, AttemptSource, set[int]]
"""A probe of a run, its attempts (phase 1) and the ``seq`` of those already stored."""


def attempt_sources(
    store: Store, run_id: str, probes: list[Probe], retry_errors: bool, built: list[AttemptSource] | None = None
) -> list[Source]:
    """Phase 1 of every probe (or ``built``: what it gave), with the attempts of run ``run_id``
    already stored (errored ones count as stored unless ``retry_errors``)."""
    phase1 = built if built is not None else [probe.attempt_source() for probe in probes]
    return [
        (probe, attempts, store.finished_seqs(run_id, probe.name, include_errors=not retry_errors))
        for probe, attempts in zip(probes, phase1, strict=True)
    ]


def resumed_probe_options(store: Store, run_id: str, config: ScanConfig) -> None:
    """Give ``config`` (run ``run_id``'s, resumed) the options its probes were asked with where a
    default changed since (:attr:`Probe.former_defaults`): the value its first stored attempt
    records, else the former default. Options the run was given are kept."""
    formers = {name: get_probe_class(name).former_defaults for name in selected_probe_names(config) or []}
    changed = {name: former for name, former in formers.items() if former}
    stored = store.attempt_counts(run_id) if changed else {}
    for name, former in changed.items():
        runs = [p for p in stored if p == name or p.startswith(name + "+")]  # wrapped: NAME+suffix
        seqs = store.finished_seqs(run_id, runs[0]) if runs else set()
        first = store.get_attempt(run_id, runs[0], min(seqs)) if seqs else None
        if first is None:
            continue  # nothing stored: the run goes on with today's defaults
        options = config.probe_options.setdefault(name, {})
        for key, value in former.items():
            options.setdefault(key, first.probe_params.get(key, value))


def attempts_to_run(sources: list[Source], budget: Budget | None = None) -> Iterator[tuple[Probe, Attempt]]:
    """The ``(probe, attempt)`` pairs left to run, lazily, in the run's order: not stored yet, of
    probes that are measured (no ``skip_reason``, read as the pairs are taken). With ``budget``,
    each attempt waits to be admitted (a pause is yielded meanwhile); a budget that stops the run
    ends the pairs."""
    for probe, attempts, done in sources:
        if probe.skip_reason:  # --skip-unavailable: not measured
            continue
        for attempt in attempts:
            if attempt.seq in done:
                continue
            while budget is not None and not budget.admit(probe, attempt):
                if not budget.busy:  # nothing in flight to wait for: the run stops here
                    budget.stop()
                    return
                yield budget.pause()  # waits until an attempt in flight is done
            yield probe, attempt


def make_executor(
    settings: ExecutorConfig,
    config: ScanConfig,
    generator: Generator,
    *,
    own_generator: bool = True,
    budget: Budget | None = None,
) -> Executor:
    """The :class:`~redline.engine.executors.Executor` ``settings`` name for a scan of ``config``
    with ``generator`` (not started; ``own_generator``: built from ``config``, not given by the
    caller) and ``budget``. Raises :class:`~redline.engine.executors.ExecutorError` for a
    generator object on Ray (each actor builds its own from the configuration) and
    :class:`~redline.engine.executors.ExecutorUnavailable` without Ray."""
    if settings.kind == "local":
        return InProcessExecutor(config, generator, budget=budget)
    if not own_generator:
        raise ExecutorError(
            "a generator object runs in this process only: with --executor ray each actor builds the model "
            "from the configuration (give its spec instead)"
        )
    return RayExecutor(settings, config, generator, build_probes, budget=budget)


#: The generator options a resumed run may take from the process that resumes it: how requests
#: travel, not what is asked (timeout, retries and backoff, the endpoint's concurrency cap, rate limits).
RESUME_GENERATOR_OPTIONS: tuple[str, ...] = tuple(spec.name for spec in TRANSPORT_OPTION_SPECS)


def _restore_userinfo(stored: ScanConfig, config: ScanConfig | None, run_id: str) -> ScanConfig | None:
    """Give back to ``stored`` (a resumed run's configuration) the passwords the store does not
    keep: a ``base_url`` (or ``url``) given as ``https://user:PASSWORD@host`` is stored as
    ``user:***@`` (:meth:`Store.create_run`), so the process that resumes must give the same URL
    with its password (``--base-url``). Returns ``config`` without the URLs used so (they change
    nothing else in the run); any other URL is left in it, for :func:`_per_process` to refuse as a
    change. Raises :class:`ScanError` when a masked URL is not given again (missing, or different
    once masked)."""
    given = dict(config.generator_options) if config is not None else {}
    for key, value in stored.generator_options.items():
        if not (isinstance(value, str) and has_masked_userinfo(value)):
            continue
        candidates = [k for k in (key, "base_url", "url") if isinstance(given.get(k), str)]
        match = next((k for k in candidates if mask_url(given[k]) == value), None)
        if match is None:
            raise ScanError(
                f"run {run_id} was started with a password in its {key} ({value}), which the store does not "
                "keep: resume with --base-url giving that URL with its password"
            )
        stored.generator_options[key] = given.pop(match)
    if config is None or given == config.generator_options:
        return config
    return replace(config, generator_options=given)


def _per_process(config: ScanConfig | None, run_id: str) -> tuple[int | None, dict[str, Any]]:
    """What ``config`` may change in run ``run_id`` when it resumes it: the attempts in flight and
    :data:`RESUME_GENERATOR_OPTIONS`. Anything else set in ``config`` would change the run (its
    model, probes, sampling...) and raises :class:`ScanError` naming it."""
    if config is None:
        return None, {}
    defaults = ScanConfig().as_dict()
    changed = [
        key
        for key, value in config.as_dict().items()
        if key not in ("concurrency", "generator_options") and value != defaults[key]
    ]
    changed += [f"generator_options.{k}" for k in config.generator_options if k not in RESUME_GENERATOR_OPTIONS]
    if changed:
        raise ScanError(
            f"resuming run {run_id} keeps its own settings; these would change it: {', '.join(changed)} "
            f"(a resumed run may only change concurrency and {', '.join(RESUME_GENERATOR_OPTIONS)})"
        )
    return config.concurrency, dict(config.generator_options)


async def scan(
    config: ScanConfig | None,
    store: Store,
    *,
    resume: str | None = None,
    retry_errors: bool = False,
    progress: ProgressCallback | None = None,
    generator: Generator | None = None,
    on_run: Callable[[str], None] | None = None,
    executor: ExecutorConfig | None = None,
    budget: Budget | None = None,
    on_generator: Callable[[Generator], None] | None = None,
    trust_settings: bool = False,
    trust_code: bool = False,
) -> str:
    """Run (or, with ``resume=RUN_ID``, continue) a scan; returns the run id.

    ``on_generator`` is called with the model under test once it is built (before it starts), so
    that a progress display can read its state, such as its rate limiter's
    (:meth:`~redline.generators.transport.ratelimit.RateLimiter.status`).

    ``budget`` (:class:`~redline.engine.budget.Budget`: ``--max-requests``, ``--budget-usd``)
    stops the run cleanly when the next attempt could take it past a limit: finished attempts are
    stored, no phase 4, and the run is marked interrupted with the message ``stopped: budget
    reached (…)`` (``budget.stopped``), to be continued with ``resume``.

    ``executor`` says where phases 2 and 3 run (:func:`make_executor`):
    in this process (the default) or on Ray actors; the store, phase 4 and the summary are the
    same either way, and so is the budget.

    With ``resume``, ``config`` is ``None`` or gives only what a resumed run may change: its
    ``concurrency`` and :data:`RESUME_GENERATOR_OPTIONS` in ``generator_options``. A stored run that
    reaches outside this process resumes only with ``trust_settings`` (its endpoints, headers and
    environment variables confirmed), one that runs LVE checker code only with ``trust_code``
    (:func:`~redline.engine.trust.check_resume`); otherwise :class:`~redline.engine.trust.UntrustedRun`.

    The store is checked first (:meth:`Store.check_integrity`: a damaged store is never written
    to), and the scan holds the run's lock until it has recorded how the run ended: a second scan
    of the same run raises :class:`~redline.store.RunLocked`, naming the process.

    Raises :class:`ScanError`, :class:`~redline.plugins.UnknownPluginError`,
    :class:`GeneratorUnavailable` or :class:`DetectorUnavailable` with a one-line message. On any
    exit before the end the run is marked ``interrupted`` and can be resumed.
    """
    store.check_integrity()
    run = store.get_run(resume) if resume is not None else None  # an unknown run: RunNotFound first
    held: list[str] = []
    if run is not None:
        store.claim_run(run.run_id)
        held.append(run.run_id)

    def started(run_id: str) -> None:
        if run_id not in held:
            held.append(run_id)
        if on_run is not None:
            on_run(run_id)

    try:
        return await _scan(
            config,
            store,
            run=run,
            retry_errors=retry_errors,
            progress=progress,
            generator=generator,
            on_run=started,
            settings=executor or ExecutorConfig(),
            budget=budget if budget is not None and budget.limited else None,
            on_generator=on_generator,
            trust=(trust_settings, trust_code),
        )
    finally:
        for run_id in held:
            store.release_run(run_id)


async def _scan(
    config: ScanConfig | None,
    store: Store,
    *,
    run: RunRecord | None,
    retry_errors: bool,
    progress: ProgressCallback | None,
    generator: Generator | None,
    on_run: Callable[[str], None],
    settings: ExecutorConfig,
    budget: Budget | None = None,
    on_generator: Callable[[Generator], None] | None = None,
    trust: tuple[bool, bool] = (False, False),
) -> str:
    """:func:`scan`, once the store is checked and the lock of ``run`` (a resumed run) is held."""
    records_versions = True
    if run is not None:
        # a run started by a redline that did not record detector versions: its first attempts were
        # scored by detectors of unknown version, so the resumed run does not claim any
        records_versions = bool(run.config.get(RECORDS_DETECTOR_VERSIONS))
        stored = ScanConfig.from_dict(run.config["scan"])
        resumed_probe_options(store, run.run_id, stored)  # a default changed since: as it began
        config = _restore_userinfo(stored, config, run.run_id)  # a base_url's password, not stored
        concurrency, transport = _per_process(config, run.run_id)
        check_resume(run.run_id, stored, trust_settings=trust[0], trust_code=trust[1], own_model=generator is not None)
        if concurrency is not None:
            stored.concurrency = concurrency
        stored.generator_options.update(transport)
        config = stored
    elif config is None:
        raise ScanError("scan needs a configuration or a run to resume")

    own_generator = generator is None
    if generator is None:  # (on Ray it only names the run: each actor builds its own)
        generator = get_generator(config.model, **config.generator_options)
    if on_generator is not None:
        on_generator(generator)
    executor = make_executor(settings, config, generator, own_generator=own_generator, budget=budget)
    if budget is not None:
        budget.bind(RequestShape.of(generator, config.generations))
    probes: list[Probe] = []
    try:
        generator.preflight()  # a missing file or package: stop before a run is created
        probes = build_probes(config)
        prepare_scan(generator, probes, store, skip=config.skip_unavailable)  # images a model cannot take: one line
        names = [p.name for p in probes]
        if len(set(names)) != len(names):
            raise ScanError("the same probe is selected twice")
        phase1 = [probe.attempt_source() for probe in probes]
        sources = attempt_sources(store, run.run_id, probes, retry_errors, phase1) if run is not None else []
        if progress:
            progress("loading", 0, 0)
        await executor.prepare()
        if run is None:
            run_id = store.create_run(
                generator.name,
                {
                    "scan": config.as_dict(),
                    "probe_names": names,
                    "generator": generator.settings(),
                    RECORDS_DETECTOR_VERSIONS: True,
                },
            )
        else:
            run_id = run.run_id
            store.set_run_status(run_id, RUN_RUNNING)
        on_run(run_id)

        status = RUN_INTERRUPTED
        message: str | None = "stopped before the end"
        try:
            sources = sources or attempt_sources(store, run_id, probes, retry_errors, phase1)
            del phase1
            total = sum(len(attempts) for _, attempts, _ in sources)
            already = sum(min(len(done), len(attempts)) for _, attempts, done in sources)
            if progress:
                progress("start", already, total)

            async with BatchWriter(store, interval=COMMIT_INTERVAL, cache_batch=CACHE_BATCH) as writer:

                async def on_done(attempt: Attempt) -> None:
                    if budget is not None:
                        budget.release(attempt)
                    await writer.save_attempt(run_id, attempt)  # returns once committed
                    if progress:
                        progress("advance", 1, total)

                try:
                    await executor.start(probes, writer)
                    skipped = [(len(a), len(d)) for p, a, d in sources if p.skip_reason]
                    if skipped:  # keep the progress total honest
                        total -= sum(count for count, _ in skipped)
                        already -= sum(min(count, done) for count, done in skipped)
                        if progress:
                            progress("start", already, total)
                    await executor.run(attempts_to_run(sources, budget), on_done)  # phases 2 and 3, streamed
                finally:
                    await executor.close()  # an LLM judge's own model, the actors
            sources.clear()
            if budget is not None and budget.stopped:
                message = budget.stopped  # interrupted: resumable, no phase 4
                return run_id

            store.checkpoint_behind()  # the attempts written, copied into the file while phase 4 reads them
            for position, probe in enumerate(probes):  # phase 4
                metrics = probe.calculate_metrics(stored_for_metrics(store, run_id, probe))
                marks = probe.calculate_marks(metrics)
                result: dict[str, Any] = {
                    "metrics": {k: m.as_dict() for k, m in metrics.items()},
                    "marks": {k: m.as_dict() for k, m in marks.items()},
                    "goal": probe.goal,
                    "tags": list(probe.tags),
                    "detectors": list(probe.detectors),
                    "not_measured": probe.skip_reason,
                    "measure": probe.measured,  # what the headline rate counts (report.summary)
                    "judged_by": probe.judged_by,
                }
                if records_versions:  # which validation may correct the rate (report.summary)
                    result["detector_versions"] = executor.detector_versions(probe.name)
                store.save_probe_result(run_id, probe.name, position, result)
            status, message = RUN_COMPLETE, None
        except BaseException as exc:
            if isinstance(exc, Exception):
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise
        finally:
            store.set_run_status(run_id, status, message)
        return run_id
    finally:
        await executor.close()
        await close_model_pools(probes)  # attacker, judge and converter models
        if own_generator:
            await generator.aclose()
