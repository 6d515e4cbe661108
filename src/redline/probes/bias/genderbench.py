"""GenderBench's probes run as redline probes (family ``genderbench``, the optional extra
``redline[genderbench]``).

Each probe here wraps one probe of the user's installed ``genderbench`` package
(``genderbench.DirectProbe`` wraps ``genderbench.probes.DirectProbe``): GenderBench builds the
items, prompts and metadata from its own data (redline ships none of it); redline sends the
prompts (store, resume, response cache, Ray, reports, the gate); GenderBench's own evaluator
reads each answer and its own metric calculator, bootstrap and mark definitions turn the answers
into metrics and marks. So a scan gives the numbers GenderBench's harness gives on the same
answers. Options are GenderBench's (``template``, ``num_reorderings``, ``random_seed``,
``bootstrap_cycles``, ``calculate_cis``…); ``--sample N`` is GenderBench's ``sample_k``.

A probe is reported "not measured", with the reason, when what it needs is not there: the
``genderbench`` package, nltk's punkt tokenizer data (the yes/no, pronoun and word-list
evaluators tokenize with it; redline never downloads it), or a dataset GenderBench reads from the
Hugging Face hub at run time (GEST). ``genderbench`` is imported only inside functions.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import json
import math
import os
import random
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from redline.attempt import Attempt
from redline.errors import RedlineError, UsageError
from redline.evaluation import UNDETECTED, Evaluator, Mark, Metric, MetricCalculator
from redline.evaluation.marks import DEFAULT_MEANINGS
from redline.probes.base import Probe, ProbeItem, Prompt

__all__ = [
    "GENDERBENCH_PROBES",
    "GenderBenchError",
    "GenderBenchProbe",
    "genderbench_probe",
]

#: The GenderBench release whose harness the adapter is tested against.
TESTED_VERSION = "0.5.0"
INSTALL = f"pip install --no-deps genderbench=={TESTED_VERSION} && pip install 'redline[genderbench]'"
MARKS = "ABCD"

_PROBE_OPTIONS = set(inspect.signature(Probe.__init__).parameters) - {"self"}


class GenderBenchError(UsageError):
    """A GenderBench probe cannot be built as asked (an option GenderBench does not take), or
    its stored prompts are not the ones the installed GenderBench builds."""


@contextlib.contextmanager
def _quiet_genderbench() -> Iterator[None]:
    """GenderBench's code without its side effects: no nltk downloads (its evaluators try one
    when built), no progress bar, and Python's global random state as it was (GenderBench seeds
    it to sample and to bootstrap)."""
    import genderbench.probing.probe as gb_probe_module
    import nltk

    state = random.getstate()
    download, bar = nltk.download, gb_probe_module.tqdm
    nltk.download = lambda *args, **kwargs: False
    gb_probe_module.tqdm = lambda iterable, *args, **kwargs: iterable
    try:
        yield
    finally:
        nltk.download, gb_probe_module.tqdm = download, bar
        random.setstate(state)


def genderbench_probe(class_name: str, **options: Any) -> Any:
    """GenderBench's probe ``class_name`` (``"DirectProbe"``) built with ``options``, with no
    log files and no downloads. Raises :class:`ImportError` when genderbench is not installed."""
    import genderbench.probes as gb_probes

    with _quiet_genderbench():
        return getattr(gb_probes, class_name)(log_strategy="no", **options)


def _plain(value: Any) -> Any:
    """``value`` as JSON data (tuples as lists, numpy numbers as numbers, anything else as text),
    what the store keeps of GenderBench's metadata and evaluations."""
    return json.loads(json.dumps(value, default=_number_or_text))


def _number_or_text(value: Any) -> Any:
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        with contextlib.suppress(Exception):
            return item()
    return str(value)


def _number(value: Any) -> float | None:
    """A metric value as a float; ``None`` for NaN or what is no number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _tokenizer_missing() -> str | None:
    """Why GenderBench's tokenizing evaluators cannot run here (nltk's punkt data missing), or
    ``None`` when they can."""
    import nltk

    major, minor = (int(p) for p in nltk.__version__.split(".")[:2])
    data, resource = (
        ("punkt_tab", "tokenizers/punkt_tab/english/") if (major, minor) >= (3, 9) else ("punkt", "tokenizers/punkt")
    )
    try:
        nltk.data.find(resource)
    except LookupError:
        return (
            f"nltk's {data} tokenizer data is not installed (GenderBench's evaluator tokenizes answers with it; "
            f"redline downloads nothing: python -m nltk.downloader {data})"
        )
    return None


class GenderBenchEvaluator(Evaluator):
    """GenderBench's own evaluator applied to each output; its *undetected* value becomes
    :data:`UNDETECTED` (what is stored is for display: phase 4 evaluates the answers again)."""

    def __init__(self, probe: GenderBenchProbe) -> None:
        self.probe = probe

    def calculate_evaluation(self, attempt: Attempt) -> list[Any]:
        prompt = self.probe.genderbench_prompt(attempt)
        repetition = int(attempt.notes.get("repetition", 0))
        results = []
        for output in attempt.outputs:
            gb_attempt = self.probe.evaluated(prompt, output.text, repetition)
            results.append(UNDETECTED if gb_attempt.evaluation_undetected else _plain(gb_attempt.evaluation))
        return results


class GenderBenchMetrics(MetricCalculator):
    """Phase 4 by GenderBench's own code: its metric calculator, bootstrap and marks."""

    def __init__(self, probe: GenderBenchProbe) -> None:
        self.probe = probe

    def calculate(self, attempts: Sequence[Attempt]) -> dict[str, Metric]:
        return self.probe.genderbench_metrics(attempts)


class GenderBenchProbe(Probe):
    """One GenderBench probe (see the module doc). Subclasses name the wrapped class
    (:attr:`genderbench_class`) and what it needs (:attr:`tokenizes`, :attr:`hub_dataset`).

    Args:
        random_seed: GenderBench's seed for building and sampling items and for its bootstrap
            (GenderBench's default, so ``--sample N`` takes the items its ``sample_k=N`` takes).
        **options: GenderBench's options for the probe (``template``, ``num_reorderings``,
            ``bootstrap_cycles``, ``calculate_cis``…) and redline's (``sample``,
            ``num_repetitions``…).
    """

    genderbench_class: ClassVar[str] = ""
    #: Whether GenderBench's evaluator for this probe tokenizes with nltk (needs punkt data).
    tokenizes: ClassVar[bool] = False
    #: The Hugging Face dataset GenderBench reads at run time for this probe, if any.
    hub_dataset: ClassVar[str | None] = None
    tags: ClassVar[tuple[str, ...]] = ("bias", "atlas:AML.T0048.002", "nist:harmful-bias")
    #: Never part of ``all``: it needs the ``genderbench`` package (``--probes genderbench`` selects them).
    active = False

    def __init__(self, random_seed: int = 123, **options: Any) -> None:
        ours = {k: v for k, v in options.items() if k in _PROBE_OPTIONS}
        self.genderbench_options = {k: v for k, v in options.items() if k not in _PROBE_OPTIONS}
        self.random_seed = random_seed
        super().__init__(**ours)
        self.version: str | None = None
        self._gb: Any = None
        try:
            self._gb = self._build()
        except _NotMeasured as reason:
            self.skip_reason = str(reason)

    # -- GenderBench's probe -------------------------------------------------------------------------
    def _build(self) -> Any:
        """A GenderBench probe with its items created (the seeded sample of ``sample`` items)."""
        try:
            import genderbench.probes  # noqa: F401
        except ImportError as exc:
            missing = getattr(exc, "name", None)
            if missing is None or missing.partition(".")[0] == "genderbench":
                raise _NotMeasured(f"genderbench is not installed ({INSTALL})") from None
            raise _NotMeasured(f"genderbench cannot be imported: {exc} ({INSTALL})") from None
        self.version = importlib.metadata.version("genderbench")
        if self.tokenizes and (reason := _tokenizer_missing()):
            raise _NotMeasured(reason)
        if self.hub_dataset and os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
            raise _NotMeasured(
                f"GenderBench reads the Hugging Face dataset {self.hub_dataset} at run time, and HF_HUB_OFFLINE is set"
            )
        options = dict(self.genderbench_options)
        if self.sample is not None:
            options["sample_k"] = None  # sampled below, as GenderBench samples, when fewer than all
        try:
            probe = genderbench_probe(
                self.genderbench_class, num_repetitions=self.num_repetitions, random_seed=self.random_seed, **options
            )
        except TypeError as exc:
            raise GenderBenchError(f"{self.name}: {exc}") from None
        with _quiet_genderbench():
            try:
                probe.create_probe_items()
            except Exception as exc:
                if not self.hub_dataset:
                    raise
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise _NotMeasured(
                    f"GenderBench reads the Hugging Face dataset {self.hub_dataset} at run time and could not: {first}"
                ) from None
            if self.sample is not None and self.sample < len(probe.probe_items):
                probe.probe_items = probe.sample(k=self.sample)
        return probe

    def _fresh(self) -> Any:
        """A new GenderBench probe with the same items (its metric calculator caches per item)."""
        return self._build()

    def genderbench_prompt(self, attempt: Attempt) -> Any:
        """GenderBench's prompt object behind ``attempt``."""
        item = self._gb.probe_items[int(attempt.notes.get("item_index", 0))]
        return item.prompts[int(attempt.notes.get("prompt_index", 0))]

    def evaluated(self, prompt: Any, answer: str | None, repetition: int, probe: Any = None) -> Any:
        """A GenderBench attempt for ``answer`` to ``prompt``, evaluated by GenderBench's evaluator."""
        from genderbench.probing.attempt import Attempt as GBAttempt

        gb_attempt = GBAttempt(prompt, repetition)
        gb_attempt.answer = answer or ""
        gb_attempt.evaluate((probe or self._gb).evaluator)
        return gb_attempt

    # -- redline's phases ----------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        params = super().params
        params.update(_plain(self.genderbench_options))
        if self.random_seed != 123:
            params["random_seed"] = self.random_seed
        if self.version is not None:
            params["genderbench"] = self.version
        return params

    def _sampled(self, count: int) -> list[int] | None:
        return None  # GenderBench samples its own items (see _build)

    def _create_probe_items(self) -> list[ProbeItem]:
        if self._gb is None:
            return []
        return [
            ProbeItem(
                [Prompt(p.text, metadata=_plain(p.metadata or {})) for p in item.prompts],
                metadata=_plain(item.metadata or {}),
            )
            for item in self._gb.probe_items
        ]

    def default_evaluator(self) -> Evaluator:
        return GenderBenchEvaluator(self)

    def default_metric_calculators(self) -> list[MetricCalculator]:
        return [GenderBenchMetrics(self)]

    def genderbench_metrics(self, attempts: Sequence[Attempt]) -> dict[str, Metric]:
        """GenderBench's metrics and marks for the answers in ``attempts``: its items with these
        answers, evaluated, measured and marked by its own code (an errored attempt is left out of
        its item; an item left with no answer is left out)."""
        if self._gb is None:
            return {}
        from genderbench.probing.probe import status

        try:
            probe = self._fresh()
        except _NotMeasured as reason:  # what phase 1 had is gone (the hub unreachable since)
            raise GenderBenchError(f"{self.name}: cannot rebuild GenderBench's items to measure: {reason}") from None
        answers: dict[tuple[int, int, int], Attempt] = {}
        for attempt in attempts:
            notes = attempt.notes
            answers[(int(notes["item_index"]), int(notes["prompt_index"]), int(notes["repetition"]))] = attempt
        judged = undetected = 0
        for i, item in enumerate(probe.probe_items):
            item.attempts = []
            for j, prompt in enumerate(item.prompts):
                for repetition in range(probe.num_repetitions):
                    answered = answers.get((i, j, repetition))
                    if answered is None:
                        continue
                    sent = answered.prompt_view()
                    if sent is not None and sent.last_message("user").text != prompt.text:
                        raise GenderBenchError(
                            f"{self.name}: the stored prompt of item {i} is not the one genderbench {self.version} "
                            "builds (was genderbench changed since the run started?)"
                        )
                    outputs = answered.outputs or []
                    for k, output in enumerate(outputs):
                        gb_attempt = self.evaluated(prompt, output.text, repetition * len(outputs) + k, probe)
                        item.attempts.append(gb_attempt)
                        undetected += bool(gb_attempt.evaluation_undetected)
                        judged += not gb_attempt.evaluation_undetected
        probe.probe_items = [item for item in probe.probe_items if item.attempts]
        if not probe.probe_items:
            return {}
        probe.status = status.EVALUATED
        with _quiet_genderbench():
            probe.calculate_metrics()  # GenderBench's bootstrap and marks
            values = probe.metric_calculator(probe.probe_items)  # its point values
        marks = probe.marks
        metrics = {}
        for name, raw in values.items():
            reported = probe.metrics.get(name)
            interval = None
            if isinstance(reported, tuple) and len(reported) == 2:
                lo, hi = _number(reported[0]), _number(reported[1])
                interval = (lo, hi) if lo is not None and hi is not None else None
            details: dict[str, Any] = {"genderbench": {"reported": _plain(reported), "version": self.version}}
            if name in marks:
                output = marks[name]
                mark = output["mark_value"]
                details["genderbench"].update(
                    mark=None if _number(mark) is None else MARKS[int(mark)],
                    description=output["description"],
                    harm_types=list(output["harm_types"]),
                    mark_ranges=_plain(output["mark_ranges"]),
                )
            metrics[name] = Metric(_number(raw), interval, n=judged, undetected=undetected, details=details)
        return metrics

    def calculate_marks(self, metrics: dict[str, Metric]) -> dict[str, Mark]:
        """GenderBench's marks, as its mark definitions gave them in phase 4."""
        marks = {}
        for name, metric in metrics.items():
            theirs = metric.details.get("genderbench", {})
            if "mark" not in theirs:
                continue
            mark = theirs["mark"]
            meaning = (
                f"{DEFAULT_MEANINGS[mark]} (GenderBench's mark)"
                if mark
                else "not measured: GenderBench gives no mark (the metric is undefined on these answers)"
            )
            marks[name] = Mark(name, mark, meaning, metric.value, metric.ci95)
        return marks


class _NotMeasured(RedlineError):
    """What a probe needs is missing: the message is its ``skip_reason``."""


class BbqProbe(GenderBenchProbe):
    """GenderBench's BbqProbe: BBQ's gender-identity questions with ambiguous contexts."""

    name = "genderbench.BbqProbe"
    genderbench_class = "BbqProbe"
    goal = "BBQ's gender-identity questions with ambiguous contexts"
    description = "GenderBench: BBQ's gender-identity questions with ambiguous contexts"


class BusinessVocabularyProbe(GenderBenchProbe):
    """GenderBench's BusinessVocabularyProbe: gendered words in business communication."""

    name = "genderbench.BusinessVocabularyProbe"
    genderbench_class = "BusinessVocabularyProbe"
    goal = "gendered words in business communication"
    description = "GenderBench: gendered words in business communication"
    tokenizes = True


class DirectProbe(GenderBenchProbe):
    """GenderBench's DirectProbe: agreement with stereotypical statements (SBIC, GEST)."""

    name = "genderbench.DirectProbe"
    genderbench_class = "DirectProbe"
    goal = "agreement with stereotypical statements (SBIC, GEST)"
    description = "GenderBench: agreement with stereotypical statements (SBIC, GEST)"
    tokenizes = True


class DiscriminationTamkinProbe(GenderBenchProbe):
    """GenderBench's DiscriminationTamkinProbe: yes/no decisions about people of different genders."""

    name = "genderbench.DiscriminationTamkinProbe"
    genderbench_class = "DiscriminationTamkinProbe"
    goal = "yes/no decisions about people of different genders"
    description = "GenderBench: yes/no decisions about people of different genders"
    tokenizes = True


class DiversityMedQaProbe(GenderBenchProbe):
    """GenderBench's DiversityMedQaProbe: medical questions answered by the patient's gender."""

    name = "genderbench.DiversityMedQaProbe"
    genderbench_class = "DiversityMedQaProbe"
    goal = "medical questions answered by the patient's gender"
    description = "GenderBench: medical questions answered by the patient's gender"


class DreadditProbe(GenderBenchProbe):
    """GenderBench's DreadditProbe: stress attributed to writers by gender."""

    name = "genderbench.DreadditProbe"
    genderbench_class = "DreadditProbe"
    goal = "stress attributed to writers by gender"
    description = "GenderBench: stress attributed to writers by gender"
    tokenizes = True


class GestProbe(GenderBenchProbe):
    """GenderBench's GestProbe: who said a stereotypical quote."""

    name = "genderbench.GestProbe"
    genderbench_class = "GestProbe"
    goal = "who said a stereotypical quote"
    description = "GenderBench: who said a stereotypical quote"
    hub_dataset = "kinit/gest"


class GestCreativeProbe(GenderBenchProbe):
    """GenderBench's GestCreativeProbe: gender of characters built on stereotypical quotes."""

    name = "genderbench.GestCreativeProbe"
    genderbench_class = "GestCreativeProbe"
    goal = "gender of characters built on stereotypical quotes"
    description = "GenderBench: gender of characters built on stereotypical quotes"
    tokenizes = True
    hub_dataset = "kinit/gest"


class HiringAnProbe(GenderBenchProbe):
    """GenderBench's HiringAnProbe: hiring decisions by the candidate's gender."""

    name = "genderbench.HiringAnProbe"
    genderbench_class = "HiringAnProbe"
    goal = "hiring decisions by the candidate's gender"
    description = "GenderBench: hiring decisions by the candidate's gender"


class HiringBloombergProbe(GenderBenchProbe):
    """GenderBench's HiringBloombergProbe: CV ranking by name."""

    name = "genderbench.HiringBloombergProbe"
    genderbench_class = "HiringBloombergProbe"
    goal = "CV ranking by name"
    description = "GenderBench: CV ranking by name"


class InventoriesProbe(GenderBenchProbe):
    """GenderBench's InventoriesProbe: gender of characters with gendered traits."""

    name = "genderbench.InventoriesProbe"
    genderbench_class = "InventoriesProbe"
    goal = "gender of characters with gendered traits"
    description = "GenderBench: gender of characters with gendered traits"
    tokenizes = True


class IsearProbe(GenderBenchProbe):
    """GenderBench's IsearProbe: emotions attributed by gender."""

    name = "genderbench.IsearProbe"
    genderbench_class = "IsearProbe"
    goal = "emotions attributed by gender"
    description = "GenderBench: emotions attributed by gender"
    tokenizes = True


class JobsLumProbe(GenderBenchProbe):
    """GenderBench's JobsLumProbe: gender of characters by occupation."""

    name = "genderbench.JobsLumProbe"
    genderbench_class = "JobsLumProbe"
    goal = "gender of characters by occupation"
    description = "GenderBench: gender of characters by occupation"
    tokenizes = True


class RelationshipLevyProbe(GenderBenchProbe):
    """GenderBench's RelationshipLevyProbe: relationship advice by gender."""

    name = "genderbench.RelationshipLevyProbe"
    genderbench_class = "RelationshipLevyProbe"
    goal = "relationship advice by gender"
    description = "GenderBench: relationship advice by gender"


#: The wrapped probes, by GenderBench class name.
GENDERBENCH_PROBES: dict[str, type[GenderBenchProbe]] = {
    cls.genderbench_class: cls
    for cls in (
        BbqProbe,
        BusinessVocabularyProbe,
        DirectProbe,
        DiscriminationTamkinProbe,
        DiversityMedQaProbe,
        DreadditProbe,
        GestProbe,
        GestCreativeProbe,
        HiringAnProbe,
        HiringBloombergProbe,
        InventoriesProbe,
        IsearProbe,
        JobsLumProbe,
        RelationshipLevyProbe,
    )
}
