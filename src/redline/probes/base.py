"""Probe anatomy (seed 003): ``Probe`` → ``ProbeItem`` → ``Prompt`` → ``Attempt``.

A :class:`Probe` creates :class:`ProbeItem` objects, each grouping closely related
:class:`Prompt` objects (e.g. one question with its answer options in both orders). Every prompt
is run ``num_repetitions`` times, each run an :class:`~redline.attempt.Attempt` holding
``generations`` outputs. :meth:`Probe.run` goes through the four phases:

1. **ProbeItems creation** — :meth:`Probe.create_attempts` (from :meth:`_create_probe_items`).
2. **Answer generation** — the generator answers every attempt.
3. **Attempt evaluation** — detectors score outputs; the :class:`Evaluator` judges them.
4. **Metric calculation** — :class:`MetricCalculator` objects aggregate, :class:`MarkDefinition`
   objects assign marks.

A garak-style probe — a list of prompts and a recommended detector — is :class:`PromptProbe`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from redline.attempt import ATTEMPT_NEW, Attempt, Conversation, Message, Turn
from redline.errors import UsageError
from redline.evaluation import (
    ComplianceRateCalculator,
    DetectorEvaluator,
    Evaluator,
    FailureRateCalculator,
    HarmEvaluator,
    Mark,
    MarkDefinition,
    Metric,
    MetricCalculator,
)
from redline.evaluation.measures import COMPLIANCE_JUDGE, FAILURE, HARM, HARM_JUDGE
from redline.generators.base import Generator, GeneratorError
from redline.generators.output import needing
from redline.probes.runner import AttemptRunner

__all__ = [
    "HARM_DETECTORS",
    "HARM_FORMER_DEFAULTS",
    "AttemptSource",
    "AuxiliaryModels",
    "LazyAttempts",
    "OnePromptItems",
    "Probe",
    "ProbeItem",
    "ProbeResult",
    "Prompt",
    "PromptProbe",
]


#: The detectors of a harm probe: the harm judge (the headline) and the compliance judge (beside it).
HARM_DETECTORS = (HARM_JUDGE, COMPLIANCE_JUDGE)

#: :attr:`Probe.former_defaults` of a harm probe: a run begun before harm probes had a harm judge
#: (its attempts record no ``detectors``) goes on judged by the compliance judge alone.
HARM_FORMER_DEFAULTS: dict[str, Any] = {"detectors": [COMPLIANCE_JUDGE]}


class AttemptSource(Protocol):
    """What :meth:`Probe.create_attempts` returns: a sized iterable of attempts (a list, or a
    lazy view that builds each attempt as it is iterated)."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Attempt]: ...


class OnePromptItems(Protocol):
    """Probe items built one at a time from their position, one prompt each (a probe of many
    items need not hold them all: :class:`redline.probes.dataset.RequestProbe`)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> ProbeItem: ...

    def __iter__(self) -> Iterator[ProbeItem]: ...


class LazyAttempts:
    """The attempts of :meth:`Probe.create_attempts` as a sized, re-iterable view that builds each
    one when it is reached: items in order, prompts in order, repetitions innermost, ``seq``
    counting from 0. ``one_prompt_items``: the probe's items built as they are reached instead
    of :attr:`Probe.probe_items` (the same items)."""

    def __init__(self, probe: Probe, one_prompt_items: OnePromptItems | None = None) -> None:
        self.probe = probe
        self.items = one_prompt_items

    def __len__(self) -> int:
        if self.items is not None:
            return len(self.items) * self.probe.num_repetitions
        return sum(len(item.prompts) for item in self.probe.probe_items) * self.probe.num_repetitions

    def __iter__(self) -> Iterator[Attempt]:
        probe, seq = self.probe, 0
        for item_index, item in enumerate(self.items if self.items is not None else probe.probe_items):
            for prompt_index, prompt in enumerate(item.prompts):
                for repetition in range(probe.num_repetitions):
                    yield probe.make_attempt(seq, item_index, item, prompt_index, prompt, repetition)
                    seq += 1


class AuxiliaryModels(Protocol):
    """What a probe's :attr:`Probe.model_pool` offers (the attacker, judge and converter models
    of a scan; :class:`redline.attacks.pool.ModelPool` implements it)."""

    def spec(self, role: str) -> str | None: ...

    async def get(self, role: str, target: Generator | None) -> Generator: ...

    async def for_spec(self, spec: str | None, target: Generator | None, role: str = ...) -> Generator: ...

    async def aclose(self) -> None: ...


@dataclass
class Prompt:
    """One text (or conversation) sent to the model, with metadata for evaluators and metrics.

    ``targets`` are strings detectors look for in the outputs (copied to ``Attempt.targets``).
    """

    text: str | Conversation
    metadata: dict[str, Any] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)

    def conversation(self, lang: str | None = None) -> Conversation:
        if isinstance(self.text, Conversation):
            return self.text
        return Conversation(turns=[Turn("user", Message(text=self.text, lang=lang))])


@dataclass
class ProbeItem:
    """A group of closely related prompts, with metadata shared by all of them."""

    prompts: list[Prompt]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProbeResult:
    """Phase 4's output for one probe: metrics and marks, plus the attempts when run in memory."""

    probe: str
    metrics: dict[str, Metric]
    marks: dict[str, Mark]
    attempts: list[Attempt] = field(default_factory=list)
    errored: int = 0


class Probe:
    """Base class of every probe.

    Class attributes declare what the probe is: :attr:`name` (``family.Name``), :attr:`goal`,
    :attr:`description`, :attr:`tags` (OWASP LLM Top 10 ``owasp:llm01``, MITRE ATLAS
    ``atlas:AML.T0051``…), :attr:`recommended_detectors`, :attr:`measure` and :attr:`lang`.

    Constructor arguments: ``evaluator``, ``metric_calculators`` and ``mark_definitions`` replace
    the class defaults; ``num_repetitions`` runs each prompt that many times; ``sample`` keeps a
    seeded random subset of ``sample`` probe items (the same subset for the same ``seed``);
    ``detectors`` replaces the recommended detectors.
    """

    name: ClassVar[str] = ""
    goal: ClassVar[str] = ""
    description: ClassVar[str] = ""
    tags: ClassVar[tuple[str, ...]] = ()
    recommended_detectors: ClassVar[tuple[str, ...]] = ()
    #: What the headline rate measures (:mod:`redline.evaluation.measures`): ``"failure"``, or
    #: ``"harm"`` for a harmful-request probe, judged by a :class:`HarmEvaluator` (recommended
    #: detectors :data:`HARM_DETECTORS`) with its compliance rate beside the harm rate.
    measure: ClassVar[str] = FAILURE
    lang: ClassVar[str] = "en"
    default_num_repetitions: ClassVar[int] = 1
    #: Probes with ``active = False`` are listed but left out of "all" and family selections.
    active: ClassVar[bool] = True
    #: Whether the probe holds its own multi-step exchange with the model (an agent loop with
    #: tools): a ``--strategy``, which re-asks each prompt on its own, cannot wrap it.
    runs_dialogue: ClassVar[bool] = False
    #: ``False`` leaves the probe out of the default scan (``redline scan`` with no ``--probes``)
    #: while its family is selected: the larger additions to the default families.
    default_scan: ClassVar[bool] = True
    #: Whether ``--dataset`` replaces this probe's prompts (see :mod:`redline.probes.dataset`).
    accepts_dataset: ClassVar[bool] = False
    #: Output tokens this probe needs per output when more than a remote model's default
    #: ``max_tokens`` (``None``: the default is enough); ``--max-tokens`` overrides it. Requests made
    #: in :meth:`generate` ask for it (:func:`redline.generators.output.needing`); a probe that
    #: overrides :meth:`generate` wraps its requests in ``needing`` itself.
    output_tokens: ClassVar[int | None] = None
    #: Options whose default changed, each with the value a run was asked with when its stored
    #: attempts' ``probe_params`` lack it: a resumed run is rebuilt with it (see
    #: :func:`redline.engine.pipeline.resumed_probe_options`), so it goes on as it began.
    former_defaults: ClassVar[dict[str, Any]] = {}

    #: The user's dataset this probe reads (``--dataset``), if any.
    dataset: str | None = None
    #: Why this probe is not measured in this run (its detector cannot load and the scan skips
    #: what is unavailable, or an LVE that cannot run); ``None`` when it is measured.
    skip_reason: str | None = None
    #: The scan's auxiliary models (set by :mod:`redline.attacks.wiring`); ``None`` outside a scan.
    model_pool: AuxiliaryModels | None = None

    def __init__(
        self,
        evaluator: Evaluator | None = None,
        metric_calculators: Sequence[MetricCalculator] | None = None,
        mark_definitions: Sequence[MarkDefinition] | None = None,
        num_repetitions: int | None = None,
        sample: int | None = None,
        seed: int = 0,
        detectors: Sequence[str] | None = None,
    ) -> None:
        self.evaluator = evaluator if evaluator is not None else self.default_evaluator()
        self.metric_calculators = list(
            metric_calculators if metric_calculators is not None else self.default_metric_calculators()
        )
        self.mark_definitions = list(
            mark_definitions if mark_definitions is not None else self.default_mark_definitions()
        )
        self.num_repetitions = int(num_repetitions or self.default_num_repetitions)
        if self.num_repetitions < 1:
            raise UsageError("num_repetitions must be at least 1")
        self.sample = sample
        self.seed = seed
        self.detectors = list(detectors) if detectors is not None else list(self.recommended_detectors)
        self._items: list[ProbeItem] | None = None

    # -- defaults subclasses override ------------------------------------------------------------
    def default_evaluator(self) -> Evaluator:
        return HarmEvaluator() if self.measure == HARM else DetectorEvaluator()

    def default_metric_calculators(self) -> list[MetricCalculator]:
        if self.measure == HARM:
            return [FailureRateCalculator(), ComplianceRateCalculator()]
        return [FailureRateCalculator()]

    def default_mark_definitions(self) -> list[MarkDefinition]:
        return []

    @property
    def params(self) -> dict:
        """Non-default parameters, recorded as ``Attempt.probe_params``."""
        params: dict[str, Any] = {}
        if self.num_repetitions != self.default_num_repetitions:
            params["num_repetitions"] = self.num_repetitions
        if self.sample is not None:
            params["sample"] = self.sample
            params["seed"] = self.seed
        # recorded either way when its default changed once (a resumed run reads it back)
        if self.detectors != list(self.recommended_detectors) or "detectors" in self.former_defaults:
            params["detectors"] = self.detectors
        return params

    # -- what the headline measures --------------------------------------------------------------
    def replace_detector(self, old: str, new: str) -> bool:
        """Put detector ``new`` in place of ``old``, in its role (a harm probe's compliance judge
        stays its compliance judge); False when the probe does not use ``old`` (a harm probe already
        judged by ``new``, as a resumed run is rebuilt from its stored detectors, keeps it)."""
        if old not in self.detectors and not (self.measure == HARM and new in self.detectors):
            return False
        self.detectors = list(dict.fromkeys(new if d == old else d for d in self.detectors))
        if isinstance(self.evaluator, HarmEvaluator):
            self.evaluator.rename(old, new)
        return True

    @property
    def judged_by(self) -> list[str]:
        """The detectors whose verdicts the headline rate counts: a harm probe's harm judges, else
        every detector."""
        if isinstance(self.evaluator, HarmEvaluator):
            harm = self.evaluator.harm_judges(self.detectors)
            if harm:
                return harm
        return list(self.detectors)

    @property
    def measured(self) -> str:
        """What the headline rate measures in this run: :attr:`measure`, except ``"failure"`` for a
        harm probe without a harm judge (a run begun when compliance alone judged it)."""
        if self.measure == HARM and isinstance(self.evaluator, HarmEvaluator):
            return HARM if self.evaluator.harm_judges(self.detectors) else FAILURE
        return FAILURE

    # -- phase 1 ---------------------------------------------------------------------------------
    def _create_probe_items(self) -> list[ProbeItem]:
        """Build every probe item with its prompts. Subclasses implement this."""
        raise NotImplementedError

    @property
    def probe_items(self) -> list[ProbeItem]:
        """The probe items (created once; a seeded subset when ``sample`` is set)."""
        if self._items is None:
            items = list(self._create_probe_items())
            keep = self._sampled(len(items))
            self._items = items if keep is None else [items[i] for i in keep]
        return self._items

    def _sampled(self, count: int) -> list[int] | None:
        """The positions of the items kept of ``count`` (the seeded subset of ``sample``), in
        order; ``None`` when every one is kept."""
        if self.sample is None or self.sample >= count:
            return None
        rng = random.Random(f"{self.name}:{self.seed}")
        return sorted(rng.sample(range(count), self.sample))

    def create_attempts(self) -> AttemptSource:
        """Phase 1: one attempt per prompt and repetition, numbered by ``seq`` (this base class
        returns a list; overrides may return any :class:`AttemptSource`).

        ``seq`` is deterministic (items in order, prompts in order, repetitions innermost), so a
        resumed run rebuilds the same attempts and skips the finished ones.
        """
        return list(LazyAttempts(self))

    def attempt_source(self) -> AttemptSource:
        """Phase 1 for a scan: what :meth:`create_attempts` gives, built one attempt at a time as
        it is iterated when a subclass has not overridden :meth:`create_attempts` (the same
        attempts, in the same order), so a scan of 100,000 prompts never holds 100,000 attempts."""
        if type(self).create_attempts is Probe.create_attempts:
            return LazyAttempts(self)
        return self.create_attempts()

    def make_attempt(
        self, seq: int, item_index: int, item: ProbeItem, prompt_index: int, prompt: Prompt, repetition: int
    ) -> Attempt:
        # a text prompt becomes the attempt's own message (an Attempt copies a conversation it is given)
        text = prompt.text
        return Attempt(
            status=ATTEMPT_NEW,
            prompt=text if isinstance(text, Conversation) else Message(text=text, lang=self.lang),
            probe_classname=self.name,
            probe_params=self.params,
            targets=list(prompt.targets),
            goal=self.goal,
            seq=seq,
            notes={
                "item_index": item_index,
                "prompt_index": prompt_index,
                "repetition": repetition,
                "item_metadata": dict(item.metadata),
                "prompt_metadata": dict(prompt.metadata),
            },
        )

    # -- phase 2 ---------------------------------------------------------------------------------
    async def generate(self, attempt: Attempt, generator: Generator, generations: int) -> Attempt:
        """Phase 2 for one attempt: fill ``attempt.outputs``. Multi-turn probes override this."""
        prompt = attempt.prompt_view()  # generators read the conversation, they do not change it
        assert prompt is not None
        with needing(self.output_tokens):
            outputs = await generator.generate(prompt, generations)
        if len(outputs) != generations:
            raise GeneratorError(f"{generator.name} returned {len(outputs)} outputs, expected {generations}")
        attempt.outputs = [o if o is not None else Message(text=None) for o in outputs]
        return attempt

    # -- phase 4 ---------------------------------------------------------------------------------
    def calculate_metrics(self, attempts: Sequence[Attempt]) -> dict[str, Metric]:
        metrics: dict[str, Metric] = {}
        for calculator in self.metric_calculators:
            metrics.update(calculator.calculate(attempts))
        return metrics

    def calculate_marks(self, metrics: dict[str, Metric]) -> dict[str, Mark]:
        marks = {}
        for definition in self.mark_definitions:
            metric = metrics.get(definition.metric)
            if metric is not None:
                marks[definition.metric] = definition.mark_for(metric)
        return marks

    # -- the four phases -------------------------------------------------------------------------
    async def run(self, generator: Generator, generations: int = 1, concurrency: int = 8) -> ProbeResult:
        """Run the four phases in memory against ``generator`` and return metrics and marks.

        For stored, resumable runs across many probes use :func:`redline.engine.scan`.
        """
        attempts = self.create_attempts()  # phase 1
        runner = AttemptRunner(generator, generations=generations, concurrency=concurrency)
        try:
            await runner.start_detectors([self])
            done = await runner.run_all([(self, a) for a in attempts])  # phases 2 and 3
        finally:
            await runner.close_detectors()
        errored = sum(1 for a in done if a.notes.get("error"))
        completed = [a for a in done if not a.notes.get("error")]
        metrics = self.calculate_metrics(completed)  # phase 4
        return ProbeResult(self.name, metrics, self.calculate_marks(metrics), done, errored)


class PromptProbe(Probe):
    """A garak-style probe: a list of prompt texts (each its own item) and recommended detectors.

    Subclasses set :attr:`prompts`; :attr:`targets` (the same for every prompt) are optional.
    """

    prompts: ClassVar[Sequence[str]] = ()
    targets: ClassVar[Sequence[str]] = ()

    def _create_probe_items(self) -> list[ProbeItem]:
        return [
            ProbeItem(prompts=[Prompt(text=text, targets=list(self.targets))], metadata={"index": i})
            for i, text in enumerate(self.prompts)
        ]
