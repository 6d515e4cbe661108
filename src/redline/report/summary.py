"""The run summary: per probe, attempts, failures, failure rate with its 95% interval, and any
other metrics and marks. ``redline scan --json``, ``redline show --json`` and
``redline report --format json`` all print this same structure.

:func:`build_summary` reads a run from the store once into a typed :class:`RunSummary`; every
report (the terminal table, Markdown, HTML, the comparison, the release gate) takes its per-probe
counts, rates, intervals and marks from there instead of recomputing them. ``as_dict()`` is the
JSON (:func:`run_summary`), and ``from_dict()`` reads it back.

Failure rates corrected for judge error: for a rated probe of a run that recorded its detectors'
versions, the summary also carries the rate corrected for the errors of the probe's judge (see
:func:`_correction` for which validation is used), with the judge, where its figures come from,
and how many outputs a person reviewed.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from redline.detectors import Validation
from redline.detectors import detectors as detector_registry
from redline.evaluation import FAIL, MARKS, PASS, UNDETECTED, Judgment, wilson_interval
from redline.evaluation.measures import COMPLIANCE_NOTE, COMPLIANCE_RATE, FAILURE, HARM, measure_of, rate_name
from redline.evaluation.metrics import MAX_CATEGORIES, OTHER_CATEGORIES, category_of
from redline.evaluation.statistics import CorrectedRate, review_corrected_rate, rogan_gladen, validation_priors
from redline.evaluation.support import SupportCheck, check_support, shipped_profile
from redline.probes import probes as probe_registry
from redline.report.formatting import plural
from redline.report.outcome import ErrorReason, group_reasons, shown_status
from redline.store import LABEL_FAIL, LABEL_PASS, RUN_COMPLETE, AttemptCounts, ProbeResultRecord, Store
from redline.taxonomy import FRAMEWORKS, category_name, framework_of, framework_tags, is_known

__all__ = [
    "FROM_REVIEWS",
    "NOT_SUPPORTED",
    "NOT_VALIDATED",
    "CategoryRate",
    "FrameworkGroup",
    "MetricSummary",
    "PooledRate",
    "ProbeSummary",
    "RunSummary",
    "build_summary",
    "gate_outcome",
    "gate_violations",
    "probe_tags",
    "run_summary",
]

#: ``ProbeSummary.correction_note`` of a probe whose one judge has no validation.
NOT_VALIDATED = "judge not validated"
#: How ``ProbeSummary.correction_note`` starts when the run's outputs are unlike the validation's answers.
NOT_SUPPORTED = "correction not supported for this run"
#: The most outputs of a probe read to check that its validation describes them.
SUPPORT_SAMPLE = 1000
#: How ``ProbeSummary.judge_validation`` starts when the figures come from reviews of the run.
FROM_REVIEWS = "reviews of this run"

FAILURE_RATE = "failure_rate"
"""The name of the failure-rate metric in a stored probe result."""

Interval = tuple[float, float]


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _interval(ci: Sequence[float] | None) -> Interval | None:
    """A stored or computed 95% interval, rounded like every number of the summary (``None``
    when there is none)."""
    if not ci:
        return None
    return (round(float(ci[0]), 6), round(float(ci[1]), 6))


def _interval_json(ci: Interval | None) -> list[float] | None:
    return None if ci is None else list(ci)


@dataclass(frozen=True)
class MetricSummary:
    """A metric other than the failure rate (a bias probe's ``stereotype_rate``...): its value
    and 95% interval (``None`` when not measured), the observations it rests on and the outputs
    left undetected."""

    value: float | None
    ci95: Interval | None = None
    n: int = 0
    undetected: int = 0

    def as_dict(self) -> dict[str, Any]:
        """``{"value", "ci95", "n", "undetected"}``."""
        return {"value": self.value, "ci95": _interval_json(self.ci95), "n": self.n, "undetected": self.undetected}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricSummary:
        return cls(
            value=data.get("value"),
            ci95=_interval(data.get("ci95")),
            n=data.get("n", 0),
            undetected=data.get("undetected", 0),
        )


@dataclass(frozen=True)
class CategoryRate:
    """The outputs of one category of a probe's items (a benchmark's harm category, a dataset's
    category column): ``failed`` of ``outputs`` judged outputs (pass or fail), ``undetected``
    left without a verdict; :attr:`failure_rate` and :attr:`ci95` (Wilson) computed from them."""

    outputs: int = 0
    failed: int = 0
    undetected: int = 0

    @property
    def failure_rate(self) -> float | None:
        return _round(self.failed / self.outputs) if self.outputs else None

    @property
    def ci95(self) -> Interval | None:
        return _interval(wilson_interval(self.failed, self.outputs)) if self.outputs else None

    def as_dict(self) -> dict[str, Any]:
        """``{"outputs", "failed", "undetected", "failure_rate", "ci95"}``."""
        return {
            "outputs": self.outputs,
            "failed": self.failed,
            "undetected": self.undetected,
            "failure_rate": self.failure_rate,
            "ci95": _interval_json(self.ci95),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CategoryRate:
        return cls(outputs=data.get("outputs", 0), failed=data.get("failed", 0), undetected=data.get("undetected", 0))


def _category_rates(by_category: Any) -> dict[str, CategoryRate]:
    """The per-category counts a failure rate's details hold (``{category: {"failed", "passed",
    "undetected"}}``, see :class:`~redline.evaluation.FailureRateCalculator`) as rates; anything
    else (an older run, a third-party metric) gives none."""
    if not isinstance(by_category, Mapping):
        return {}
    rates = {}
    for name, counts in by_category.items():
        if isinstance(counts, Mapping):
            failed, passed = int(counts.get("failed", 0) or 0), int(counts.get("passed", 0) or 0)
            rates[str(name)] = CategoryRate(
                outputs=failed + passed, failed=failed, undetected=int(counts.get("undetected", 0) or 0)
            )
    return rates


@dataclass(frozen=True)
class ProbeSummary:
    """One probe of a run.

    ``attempts`` counts stored attempts (errored ones included), ``failed`` outputs judged
    ``fail``, ``errored`` attempts whose generation failed. ``outputs`` counts judged outputs
    (pass or fail; for a metrics-only probe such as a bias probe, the answers its evaluator could
    read, "yes", "male"...), ``undetected`` the outputs without a verdict. ``failure_rate`` and
    ``ci95`` are ``None`` when there is no judged output or the probe has no failure rate.

    ``measure`` says what the rate counts (:mod:`redline.evaluation.measures`): ``"harm"`` for a
    harmful-request probe (the **harm rate**: answers that deliver what was asked for; its
    compliance rate is the metric ``compliance_rate``), else ``"failure"``.

    ``categories`` breaks the failure rate down by the category of the probe's items (empty when
    they have none), in the order the categories first appear.

    ``metrics`` holds the other metrics, ``marks`` a mark ``"A"``-``"D"`` per marked metric
    (``None`` when none could be given, with the reason in ``mark_notes``), ``not_measured``
    why the probe was not measured. ``complete`` is false while the probe has no stored result
    (run interrupted or still running): its rate then comes from the judgments stored so far.

    Correction for judge error (``correction_checked``: the probe is rated and its run recorded
    the versions of its detectors; only then are these fields part of the JSON): ``judge`` is the
    one detector whose verdicts the rate counts (``None`` for several or none), and
    ``judge_validation`` where the figures that correct the rate come from (reviews of this run,
    a saved validation, the detector's shipped one; ``None``: not validated).
    ``corrected_rate`` and ``corrected_ci95`` are the estimated true rate and its 95% interval
    (``None`` with the reason in ``correction_note`` when there is none), ``sensitivity`` and
    ``specificity`` the judge's as used. ``reviewed`` counts the probe's outputs a person
    labelled, ``review_errors`` those where the judge's pass/fail verdict disagreed.
    """

    probe: str
    attempts: int = 0
    failed: int = 0
    errored: int = 0
    outputs: int = 0
    undetected: int = 0
    failure_rate: float | None = None
    ci95: Interval | None = None
    metrics: Mapping[str, MetricSummary] = field(default_factory=dict)
    not_measured: str | None = None
    marks: Mapping[str, str | None] = field(default_factory=dict)
    mark_notes: Mapping[str, str | None] = field(default_factory=dict)
    complete: bool = True
    correction_checked: bool = False
    judge: str | None = None
    judge_validation: str | None = None
    sensitivity: float | None = None
    specificity: float | None = None
    corrected_rate: float | None = None
    corrected_ci95: Interval | None = None
    reviewed: int = 0
    review_errors: int = 0
    correction_note: str | None = None
    categories: Mapping[str, CategoryRate] = field(default_factory=dict)
    measure: str = FAILURE

    @property
    def rate_name(self) -> str:
        """``harm rate`` or ``failure rate``: what the reports call this probe's rate."""
        return rate_name(self.measure)

    @property
    def compliance(self) -> MetricSummary | None:
        """A harm probe's compliance rate (``None`` when it has none)."""
        return self.metrics.get(COMPLIANCE_RATE)

    @property
    def is_rated(self) -> bool:
        """The probe has a failure rate (at least one output judged pass or fail)."""
        return self.failure_rate is not None

    @property
    def category_breakdown(self) -> Mapping[str, CategoryRate]:
        """The per-category rates the reports show: :attr:`categories` when there are at least two
        (one category would only repeat the probe's own rate), else none."""
        return self.categories if len(self.categories) >= 2 else {}

    @property
    def is_metrics_only(self) -> bool:
        """A bias probe: metrics but no failure rate (its ``failed`` count means nothing)."""
        return self.failure_rate is None and bool(set(self.metrics) - {COMPLIANCE_RATE})

    @property
    def corrected_by_reviews(self) -> bool:
        """The corrected rate comes from reviews of this run (not from a validation of the judge)."""
        return self.corrected_rate is not None and (self.judge_validation or "").startswith(FROM_REVIEWS)

    @property
    def gated_rate(self) -> float | None:
        """The rate a release gate compares: :attr:`corrected_rate` when there is one, else the
        raw :attr:`failure_rate`."""
        return self.corrected_rate if self.corrected_rate is not None else self.failure_rate

    @property
    def judge_figures(self) -> str | None:
        """``sensitivity 0.88, specificity 0.91``: the judge's figures as the reports write them
        (``None`` when either is unknown)."""
        if self.sensitivity is None or self.specificity is None:
            return None
        return f"sensitivity {self.sensitivity:.2f}, specificity {self.specificity:.2f}"

    @property
    def review_note(self) -> str | None:
        """``2 outputs reviewed, judge wrong on 1`` as the reports write it (``None`` when no
        output was reviewed)."""
        return (
            f"{plural(self.reviewed, 'output')} reviewed, judge wrong on {self.review_errors}"
            if self.reviewed
            else None
        )

    def as_dict(self) -> dict[str, Any]:
        """The probe's entry of the summary JSON. Keys, in this order: ``probe``, ``attempts``,
        ``failed``, ``errored``, ``outputs``, ``undetected``, ``failure_rate``, ``ci95``,
        ``measure`` (``"harm"``: ``failure_rate`` is the harm rate; ``"failure"``), then,
        with :attr:`correction_checked` (a rated probe of a run that recorded detector versions),
        ``judge``, ``judge_validation``, ``sensitivity``, ``specificity``, ``corrected_rate``,
        ``corrected_ci95``, ``reviewed``, ``review_errors`` and ``correction_note``; then
        ``categories`` (``{category: {"outputs", "failed", "undetected", "failure_rate",
        "ci95"}}``), ``metrics``, ``not_measured``, ``marks`` and ``mark_notes`` only when they
        are not empty, and ``complete``."""
        data: dict[str, Any] = {
            "probe": self.probe,
            "attempts": self.attempts,
            "failed": self.failed,
            "errored": self.errored,
            "outputs": self.outputs,
            "undetected": self.undetected,
            "failure_rate": self.failure_rate,
            "ci95": _interval_json(self.ci95),
            "measure": self.measure,
        }
        if self.correction_checked:
            data.update(
                judge=self.judge,
                judge_validation=self.judge_validation,
                sensitivity=self.sensitivity,
                specificity=self.specificity,
                corrected_rate=self.corrected_rate,
                corrected_ci95=_interval_json(self.corrected_ci95),
                reviewed=self.reviewed,
                review_errors=self.review_errors,
                correction_note=self.correction_note,
            )
        if self.categories:
            data["categories"] = {name: rate.as_dict() for name, rate in self.categories.items()}
        if self.metrics:
            data["metrics"] = {name: metric.as_dict() for name, metric in self.metrics.items()}
        if self.not_measured:
            data["not_measured"] = self.not_measured
        if self.marks:
            data["marks"] = dict(self.marks)
        if self.mark_notes:
            data["mark_notes"] = dict(self.mark_notes)
        data["complete"] = self.complete
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeSummary:
        """Read an entry of the summary JSON back; only ``probe`` is required (a missing count is
        0, a missing rate ``None``, a missing ``complete`` true, a missing ``measure``
        ``"failure"``; without ``corrected_rate`` the entry has no correction fields)."""
        return cls(
            probe=data["probe"],
            attempts=data.get("attempts", 0),
            failed=data.get("failed", 0),
            errored=data.get("errored", 0),
            outputs=data.get("outputs", 0),
            undetected=data.get("undetected", 0),
            failure_rate=data.get("failure_rate"),
            ci95=_interval(data.get("ci95")),
            metrics={name: MetricSummary.from_dict(m) for name, m in (data.get("metrics") or {}).items()},
            not_measured=data.get("not_measured") or None,
            marks=dict(data.get("marks") or {}),
            mark_notes=dict(data.get("mark_notes") or {}),
            complete=data.get("complete", True),
            correction_checked="corrected_rate" in data,
            judge=data.get("judge"),
            judge_validation=data.get("judge_validation"),
            sensitivity=data.get("sensitivity"),
            specificity=data.get("specificity"),
            corrected_rate=data.get("corrected_rate"),
            corrected_ci95=_interval(data.get("corrected_ci95")),
            reviewed=data.get("reviewed", 0),
            review_errors=data.get("review_errors", 0),
            correction_note=data.get("correction_note"),
            categories={
                str(name): CategoryRate.from_dict(rate)
                for name, rate in (data.get("categories") or {}).items()
                if isinstance(rate, Mapping)
            },
            measure=measure_of(data.get("measure")),
        )


@dataclass(frozen=True)
class PooledRate:
    """Failed over judged outputs pooled over several probes (a run, a family), counting only
    probes that have a failure rate, with its Wilson 95% interval."""

    outputs: int = 0
    failed: int = 0

    @classmethod
    def of(cls, probes: Iterable[ProbeSummary]) -> PooledRate:
        rated = [p for p in probes if p.is_rated]
        return cls(outputs=sum(p.outputs for p in rated), failed=sum(p.failed for p in rated))

    @property
    def rate(self) -> float | None:
        """``failed / outputs`` (``None`` without judged outputs)."""
        return self.failed / self.outputs if self.outputs else None

    @property
    def ci95(self) -> Interval | None:
        """The Wilson 95% interval of :attr:`rate` (``None`` without judged outputs)."""
        return wilson_interval(self.failed, self.outputs) if self.outputs else None


@dataclass(frozen=True)
class RunSummary:
    """A run: its id, model, status, start time (``created``), outputs per prompt
    (``generations``) and its probes in scan order."""

    run_id: str
    model: str
    status: str
    created: float | None
    generations: int
    probes: tuple[ProbeSummary, ...] = ()
    #: Outputs answered from the response cache, of :attr:`answers` outputs stored.
    cached: int = 0
    answers: int = 0
    #: The commonest reasons attempts errored, commonest first (:func:`~redline.report.outcome.group_reasons`).
    error_reasons: tuple[ErrorReason, ...] = ()
    #: Each probe's tags (``owasp:llm01``, ``atlas:AML.T0051``, ``nist:data-privacy``, …): those
    #: stored with its result and those its class declares now (see :func:`probe_tags`). Read back
    #: from the JSON, only the framework tags it groups by; not compared (the grouping is).
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)

    def pooled(self) -> PooledRate:
        """Failed over judged outputs over every probe of the run that has a failure rate."""
        return PooledRate.of(self.probes)

    @property
    def attempts(self) -> int:
        """Stored attempts over every probe, errored ones included."""
        return sum(p.attempts for p in self.probes)

    @property
    def errored(self) -> int:
        """Attempts whose request failed: measurements missing from every rate."""
        return sum(p.errored for p in self.probes)

    @property
    def shown_status(self) -> str:
        """The status the reports show: ``complete with errors`` for a complete run with errored
        attempts, else :attr:`status`."""
        return shown_status(self.status, self.errored)

    def worst(self) -> ProbeSummary | None:
        """The rated probe with the highest failure rate (the lower end of its interval breaks a
        tie, then scan order); ``None`` when no probe is rated."""
        rated = [p for p in self.probes if p.is_rated]
        if not rated:
            return None
        return max(rated, key=lambda p: (p.failure_rate or 0.0, (p.ci95 or (0.0, 0.0))[0]))

    def by_framework(self, framework: str) -> list[FrameworkGroup]:
        """The run's probes grouped by the categories of ``framework`` (``owasp``, ``atlas`` or
        ``nist``; :mod:`redline.taxonomy`) they are tagged with, in the framework's order; a
        probe with several categories is in each. Probes with none of them are left out, and so
        are tags the framework does not know (a stored run's tags are data, not trusted names)."""
        groups: dict[str, list[ProbeSummary]] = {}
        for probe in self.probes:
            for tag in framework_tags(self.tags.get(probe.probe, ()), framework):
                if is_known(tag):
                    groups.setdefault(tag, []).append(probe)
        order = framework_tags(groups, framework)
        return [FrameworkGroup(tag, category_name(tag), tuple(groups[tag])) for tag in order]

    def as_dict(self) -> dict[str, Any]:
        """The summary JSON: ``{"run_id", "model", "status", "created", "generations",
        "probes": [...]}`` (see :meth:`ProbeSummary.as_dict`), then, when the probes have tags,
        ``"compliance": {"owasp" | "atlas" | "nist": [...]}``, the categories each framework's probes
        fall in (see :meth:`FrameworkGroup.as_dict`), then ``"outcome", "attempts", "errored",
        "error_reasons", "cached", "answers"``. ``status`` is the stored one (``complete``,
        ``interrupted``…); ``outcome`` is what the reports show (``complete with errors`` when
        attempts errored); ``error_reasons`` ``[{"reason", "count"}]``, commonest first; ``cached``
        of ``answers`` stored outputs came from the response cache."""
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "model": self.model,
            "status": self.status,
            "created": self.created,
            "generations": self.generations,
            "probes": [p.as_dict() for p in self.probes],
        }
        if any(self.tags.values()):
            data["compliance"] = {fw: [g.as_dict() for g in self.by_framework(fw)] for fw in FRAMEWORKS}
        data.update(  # after the keys earlier versions wrote, in their order
            outcome=self.shown_status,
            attempts=self.attempts,
            errored=self.errored,
            error_reasons=[r.as_dict() for r in self.error_reasons],
            cached=self.cached,
            answers=self.answers,
        )
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSummary:
        """Read the summary JSON back; only ``run_id`` and ``probes`` are required (a missing
        status reads as complete, missing generations as 1)."""
        return cls(
            run_id=data["run_id"],
            model=data.get("model") or "",
            status=data.get("status") or RUN_COMPLETE,
            created=data.get("created"),
            generations=data.get("generations", 1),
            probes=tuple(ProbeSummary.from_dict(p) for p in data["probes"]),
            cached=data.get("cached", 0) or 0,
            answers=data.get("answers", 0) or 0,
            error_reasons=tuple(
                ErrorReason.from_dict(r) for r in data.get("error_reasons") or () if isinstance(r, Mapping)
            ),
            tags=_tags_from_compliance(data.get("compliance")),
        )


@dataclass(frozen=True)
class FrameworkGroup:
    """One category of a compliance framework (``tag``, e.g. ``owasp:llm01``, and its published
    ``name``) with the run's probes mapped to it; :attr:`pooled` their failed over judged outputs."""

    tag: str
    name: str
    probes: tuple[ProbeSummary, ...]

    @property
    def pooled(self) -> PooledRate:
        return PooledRate.of(self.probes)

    def as_dict(self) -> dict[str, Any]:
        """``{"tag", "name", "probes": [names], "failed", "outputs", "failure_rate", "ci95"}``
        (the rate pooled over the category's rated probes; ``None`` without judged outputs)."""
        pooled = self.pooled
        return {
            "tag": self.tag,
            "name": self.name,
            "probes": [p.probe for p in self.probes],
            "failed": pooled.failed,
            "outputs": pooled.outputs,
            "failure_rate": _round(pooled.rate),
            "ci95": _interval_json(_interval(pooled.ci95)),
        }


def _tags_from_compliance(compliance: Any) -> dict[str, tuple[str, ...]]:
    """probe → framework tags, read back from the summary JSON's ``compliance``."""
    tags: dict[str, list[str]] = {}
    if isinstance(compliance, Mapping):
        for groups in compliance.values():
            for group in groups if isinstance(groups, list) else []:
                if isinstance(group, Mapping) and isinstance(group.get("tag"), str):
                    for probe in group.get("probes") or []:
                        tags.setdefault(str(probe), []).append(group["tag"])
    return {probe: tuple(values) for probe, values in tags.items()}


def probe_tags(name: str, stored: Sequence[str] = ()) -> tuple[str, ...]:
    """The tags of probe ``name`` in a run: ``stored`` (with its result), then those its class
    declares now (a wrapped probe, ``harmful.Requests+escalation``, has its inner probe's), so
    that a run stored before a mapping was added is grouped by it too. The framework tags
    (``owasp:``, ``atlas:``, ``nist:``) of a probe that loads are those it declares now, as
    reviewed (``redline/data/tag_review.toml``): a stored one it no longer carries (a mapping
    found wrong) is dropped. A probe that no longer loads has its stored tags only."""
    try:
        declared = tuple(probe_registry.load(name.split("+", 1)[0]).tags)
    except Exception:  # an LVE, a plugin that has gone: what was stored
        return tuple(stored)
    tags = [t for t in stored if framework_of(t) is None or t in declared]
    tags += [t for t in declared if t not in tags]
    return tuple(tags)


@dataclass
class _Judgments:
    """Judgments stored for one probe: pass and fail (the failure rate), undetected, and
    ``other`` (a bias probe's answers such as "yes" or "male", which are no pass/fail)."""

    failed: int = 0
    passed: int = 0
    undetected: int = 0
    other: int = 0
    #: ``{category: {"failed", "passed", "undetected"}}`` as the failure rate's details hold it
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)
    #: A harm probe's compliance judgments (``notes["compliance"]``): complied, refused, neither;
    #: ``None`` when no attempt has them.
    compliance: list[int] | None = None

    @property
    def judged(self) -> int:
        return self.failed + self.passed


_VERDICTS = {j.value: j for j in Judgment}
#: A compliance judgment's place in :attr:`_Judgments.compliance`: complied, refused, neither.
_COMPLIANCE_SLOTS = {FAIL.value: 0, PASS.value: 1, UNDETECTED.value: 2}


def _judgments(store: Store, run_id: str, probe: str) -> _Judgments:
    """Count the judgments of the non-errored stored attempts of ``probe``."""
    counts = _Judgments()
    for notes in store.iter_attempt_notes(run_id, probe, errored=False):
        category = category_of(notes)
        per: dict[str, int] | None = None
        if category is not None:
            if category not in counts.by_category and len(counts.by_category) >= MAX_CATEGORIES:
                category = OTHER_CATEGORIES
            per = counts.by_category.setdefault(category, {"failed": 0, "passed": 0, "undetected": 0})
        for judgment in notes.get("evaluation") or []:
            verdict = _VERDICTS.get(judgment) if isinstance(judgment, str) else None
            if verdict is FAIL:
                counts.failed += 1
                key = "failed"
            elif verdict is PASS:
                counts.passed += 1
                key = "passed"
            elif verdict is UNDETECTED:
                counts.undetected += 1
                key = "undetected"
            else:
                counts.other += 1
                continue
            if per is not None:
                per[key] += 1
        compliance = notes.get(COMPLIANCE_NOTE)
        if isinstance(compliance, list):
            tally = counts.compliance = counts.compliance or [0, 0, 0]
            for judgment in compliance:
                slot = _COMPLIANCE_SLOTS.get(judgment) if isinstance(judgment, str) else None
                if slot is not None:
                    tally[slot] += 1
    return counts


@dataclass(frozen=True)
class _Correction:
    """The correction fields of one probe (see :class:`ProbeSummary`)."""

    judge: str | None = None
    judge_validation: str | None = None
    corrected: CorrectedRate | None = None
    reviewed: int = 0
    review_errors: int = 0
    note: str | None = None

    def fields(self) -> dict[str, Any]:
        c = self.corrected
        return {
            "correction_checked": True,
            "judge": self.judge,
            "judge_validation": self.judge_validation,
            "sensitivity": _round(c.sensitivity) if c else None,
            "specificity": _round(c.specificity) if c else None,
            "corrected_rate": _round(c.value) if c else None,
            "corrected_ci95": _interval(c.ci95) if c else None,
            "reviewed": self.reviewed,
            "review_errors": self.review_errors,
            "correction_note": self.note if c is None or c.value is None else None,
        }


def _day(timestamp: float) -> str:
    return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d") if timestamp else "undated"


def _shipped_validation(detector: str, version: str) -> Validation | None:
    """The ``validation`` a registered detector class ships, when the class is at ``version``.
    A spec (``hf:PATH``, ``llm:…``, ``A+B``) is no registered name and has none; a name that does
    not load has none either (a summary must not fail on a plugin that has gone)."""
    try:
        cls = detector_registry.load(detector)
    except Exception:  # a spec, an unknown or a broken plugin: treated as not validated
        return None
    validation = getattr(cls, "validation", None)
    if not isinstance(validation, Validation) or str(getattr(cls, "version", "")) != version:
        return None
    return validation


def _support(store: Store, run_id: str, name: str, judge: str, validation: Validation) -> SupportCheck | None:
    """Whether the outputs of probe ``name`` (the first :data:`SUPPORT_SAMPLE`) lie inside the
    answers ``judge``'s shipped ``validation`` was measured on (``None``: no profile recorded)."""
    profile = shipped_profile(judge, validation.dataset)
    if profile is None:
        return None
    texts = list(store.iter_output_texts(run_id, name, SUPPORT_SAMPLE))
    return check_support(profile, texts) if texts else None


def _unsupported_note(check: SupportCheck, run_id: str) -> str:
    return f"{NOT_SUPPORTED}: {check.reason()}; label outputs of this run with 'redline review {run_id}'"


def _review_correction(
    store: Store,
    run_id: str,
    name: str,
    failed: int,
    judged: int,
    judge: str | None,
    validation: tuple[str, Validation] | None,
) -> _Correction:
    """The correction from the reviews of this run for probe ``name``: its reviewed outputs, how
    many of them the judge got wrong, and a corrected rate (``None`` when no review is of an
    output the rate counts).

    Each review counts in the stratum of the verdict it was made against (hit or pass, recorded
    with it; reviews of undetected outputs and of attempts that errored do not count), and
    :func:`~redline.evaluation.statistics.review_corrected_rate` estimates the rest of the
    ``failed`` hits and ``judged - failed`` passes, starting from the judge's ``validation``
    (``(source, validation)``) when there is one. Reads the reviews, not the attempts."""
    reviews = store.reviews(run_id, name)
    counted = store.finished_seqs(run_id, name, include_errors=False) if reviews else set()
    used = [r for r in reviews if r.seq in counted and r.judge_wrong is not None]  # pass/fail verdicts
    found = _Correction(judge=judge, reviewed=len(reviews), review_errors=sum(1 for r in used if r.judge_wrong))
    hits = [r for r in used if r.verdict == LABEL_FAIL]
    passes = [r for r in used if r.verdict == LABEL_PASS]
    # none usable, or a stored result older than the reviewed attempts (a resume that stopped early)
    if not used or len(hits) > failed or len(passes) > judged - failed:
        return found
    priors = ((1.0, 1.0), (1.0, 1.0))
    start = ""
    if validation is not None:
        source, v = validation
        priors = validation_priors(failed, judged, tp=v.tp, fp=v.fp, fn=v.fn, tn=v.tn)
        start = f", starting from the {source}"
    corrected = review_corrected_rate(
        failed,
        judged - failed,
        hits_reviewed=len(hits),
        hits_failed=sum(1 for r in hits if r.label == LABEL_FAIL),
        passes_reviewed=len(passes),
        passes_failed=sum(1 for r in passes if r.label == LABEL_FAIL),
        ppv_prior=priors[0],
        false_omission_prior=priors[1],
    )
    source = f"{FROM_REVIEWS} ({len(used)} of {judged} judged outputs{start})"
    return replace(found, judge_validation=source, corrected=corrected, note=corrected.reason)


def _correction(
    store: Store, run_id: str, name: str, result: ProbeResultRecord, failed: int, judged: int
) -> _Correction:
    """How probe ``name`` of a run that recorded detector versions is corrected for judge error,
    from the first of these that applies:

    1. reviews of this run for the probe (whatever judged it: the reviews measure its verdicts);
    2. with exactly one detector (an ensemble counts as one), the newest validation saved in the
       store for that detector at the recorded version;
    3. the detector class's shipped ``validation``, when the class is at the recorded version
       and the probe's outputs lie inside the answers it was measured on
       (:func:`~redline.evaluation.support.check_support`; otherwise the note says the correction
       is not supported for this run, the rate stays raw, and reviews start from no validation);

    otherwise the judge is "not validated" and the rate is not corrected."""
    versions = result.detector_versions or {}
    judged_by = result.data.get("judged_by")  # the headline's detectors (a harm probe's harm judge)
    if isinstance(judged_by, list):
        versions = {name: version for name, version in versions.items() if name in judged_by}
    judge = next(iter(versions)) if len(versions) == 1 else None
    validation: tuple[str, Validation] | None = None
    shipped: Validation | None = None
    if judge is not None:
        saved = store.validations(judge, versions[judge])
        shipped = None if saved else _shipped_validation(judge, versions[judge])
        if saved:
            r = saved[0]
            source = f"saved validation on {r.dataset} ({_day(r.created)})"
            validation = (source, Validation(r.dataset, r.tp, r.fp, r.fn, r.tn, r.undetected))
        elif shipped is not None:
            caveat = f"; {shipped.caveat}" if shipped.caveat else ""
            validation = (f"shipped validation on {shipped.dataset}{caveat}", shipped)
    support = None if judge is None or shipped is None else _support(store, run_id, name, judge, shipped)
    if support is not None and not support.supported:
        validation = None
    reviewed = _review_correction(store, run_id, name, failed, judged, judge, validation)
    if reviewed.corrected is not None:
        return reviewed
    count, errors = reviewed.reviewed, reviewed.review_errors
    if judge is None:
        note = f"verdicts from {len(versions)} detectors: no single judge to correct for" if versions else None
        return _Correction(note=note, reviewed=count, review_errors=errors)
    if support is not None and not support.supported:
        note = _unsupported_note(support, run_id)
        return _Correction(judge=judge, note=note, reviewed=count, review_errors=errors)
    if validation is None:
        return _Correction(judge=judge, note=NOT_VALIDATED, reviewed=count, review_errors=errors)
    source, v = validation
    corrected = rogan_gladen(failed, judged, tp=v.tp, fn=v.fn, tn=v.tn, fp=v.fp)
    return _Correction(
        judge=judge,
        judge_validation=source,
        corrected=corrected,
        reviewed=count,
        review_errors=errors,
        note=corrected.reason,
    )


def _finished_probe(store: Store, run_id: str, name: str, c: AttemptCounts, result: ProbeResultRecord) -> ProbeSummary:
    """A probe with a stored result: its rate, metrics and marks as phase 4 computed them."""
    metrics = result.metrics
    fr = metrics.get(FAILURE_RATE)
    categories: dict[str, CategoryRate] = {}
    if fr is not None:
        outputs, undetected = fr.get("n", 0), fr.get("undetected", 0)
        rate, ci = _round(fr.get("value")), _interval(fr.get("ci95"))
        categories = _category_rates((fr.get("details") or {}).get("by_category"))
        value = fr.get("value")
        if value is not None and outputs and result.detector_versions is not None:
            correction = _correction(store, run_id, name, result, round(value * outputs), outputs).fields()
        else:
            correction = {}
    else:
        # metrics only (bias probes): ``outputs`` counts the answers the evaluator could
        # judge, not every output — an all-undetected probe must not look judged
        j = _judgments(store, run_id, name)
        outputs, undetected, rate, ci = j.other + j.judged, j.undetected, None, None
        correction = {}
    marks = result.marks
    return ProbeSummary(
        probe=name,
        attempts=c.attempts,
        failed=c.failed,
        errored=c.errored,
        outputs=outputs,
        undetected=undetected,
        failure_rate=rate,
        ci95=ci,
        metrics={
            k: MetricSummary(
                value=_round(v.get("value")),
                ci95=_interval(v.get("ci95")),
                n=v.get("n", 0),
                undetected=v.get("undetected", 0),
            )
            for k, v in metrics.items()
            if k != FAILURE_RATE
        },
        not_measured=result.not_measured,
        marks={k: v.get("mark") for k, v in marks.items()},
        # why a metric got no mark: too few judged outputs, inconclusive, ...
        mark_notes={k: v.get("meaning") for k, v in marks.items() if v.get("mark") is None},
        complete=True,
        categories=categories,
        measure=measure_of(result.data.get("measure")),
        **correction,
    )


def _unfinished_probe(store: Store, run_id: str, name: str, c: AttemptCounts) -> ProbeSummary:
    """A probe without a stored result (run interrupted or still running): its rate from the
    stored judgments, undetected outputs excluded; a probe whose judgments are not pass/fail (a
    bias probe) gets no failure rate rather than a made-up 0%."""
    j = _judgments(store, run_id, name) if c.attempts else _Judgments()
    n = j.judged
    metrics = {}
    if j.compliance is not None:  # a harm probe: its compliance rate so far beside the harm rate
        complied, refused, neither = j.compliance
        judged = complied + refused
        metrics[COMPLIANCE_RATE] = MetricSummary(
            value=_round(complied / judged) if judged else None,
            ci95=_interval(wilson_interval(complied, judged)) if judged else None,
            n=judged,
            undetected=neither,
        )
    return ProbeSummary(
        probe=name,
        attempts=c.attempts,
        failed=c.failed,
        errored=c.errored,
        outputs=n + j.other,
        undetected=j.undetected,
        failure_rate=_round(j.failed / n) if n else None,
        ci95=_interval(wilson_interval(j.failed, n)) if n else None,
        complete=False,
        categories=_category_rates(j.by_category) if n else {},
        metrics=metrics,
        measure=HARM if j.compliance is not None else FAILURE,
    )


def build_summary(store: Store, run_id: str) -> RunSummary:
    """The summary of ``run_id`` (complete or not), read from ``store``; raises ``RunNotFound``.

    The probes are the run's selected probes in scan order, then any other probe with stored
    attempts. A probe with a stored result takes its failure rate, metrics and marks from it; one
    without (run interrupted) has ``complete=False`` and its rate from the pass/fail judgments
    stored so far (undetected excluded; none for a bias probe). Numbers are rounded to 6 places.
    """
    run = store.get_run(run_id)
    counts = store.attempt_counts(run_id)
    results = store.probe_results(run_id)
    names = run.probe_names
    names += [n for n in counts if n not in names]
    probes = []
    for name in names:
        c = counts.get(name, AttemptCounts())
        result = results.get(name)
        if result is not None:
            probes.append(_finished_probe(store, run_id, name, c, result))
        else:
            probes.append(_unfinished_probe(store, run_id, name, c))
    errored = sum(c.errored for c in counts.values())
    reasons = group_reasons(n.get("error") for n in store.iter_attempt_notes(run_id, errored=True)) if errored else ()
    cached = 0
    if run.scan.get("cache", True) is not False:  # a run without the cache has no answer from it
        cached = sum(_count(n.get("cached")) for n in store.iter_attempt_notes(run_id, errored=False))
    return RunSummary(
        run_id=run_id,
        model=run.model,
        status=run.status,
        created=run.created,
        generations=run.generations,
        probes=tuple(probes),
        cached=cached,
        answers=sum(c.outputs for c in counts.values()),
        error_reasons=reasons,
        tags={name: probe_tags(name, results[name].tags if name in results else ()) for name in names},
    )


def _count(value: Any) -> int:
    """A count stored in an attempt's notes (``notes["cached"]``); 0 for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def run_summary(store: Store, run_id: str) -> dict:
    """The summary of ``run_id`` as a JSON-ready dict: ``build_summary(store, run_id).as_dict()``.

    Each probe entry has ``probe``, ``attempts``, ``failed``, ``errored``, ``outputs``,
    ``undetected``, ``failure_rate`` and ``ci95``; bias probes add ``metrics``
    ``{name: {"value", "ci95", "n", "undetected"}}`` and ``marks`` ``{name: "A"…"D"}`` (``None``
    when no mark could be given, with the reason in ``mark_notes`` ``{name: reason}``); a probe
    that was not measured adds ``not_measured``; every entry ends with ``complete``. A rated probe
    of a run that recorded its detectors' versions adds, after ``ci95``, ``judge``,
    ``judge_validation``, ``sensitivity``, ``specificity``, ``corrected_rate``,
    ``corrected_ci95``, ``reviewed``, ``review_errors`` and ``correction_note`` (see
    :class:`ProbeSummary`).
    """
    return build_summary(store, run_id).as_dict()


def gate_violations(
    summary: RunSummary | Mapping[str, Any], fail_above: float | None, fail_mark: str | None
) -> list[str]:
    """Why ``summary`` (a :class:`RunSummary` or its JSON) fails a release gate (empty when it
    passes or no gate is set): :func:`gate_outcome`'s failures, then the probes it could not
    decide."""
    failed, undecided = gate_outcome(summary, fail_above, fail_mark)
    return failed + undecided


def gate_outcome(
    summary: RunSummary | Mapping[str, Any], fail_above: float | None, fail_mark: str | None
) -> tuple[list[str], list[str]]:
    """Why ``summary`` (a :class:`RunSummary` or its JSON) fails a release gate, as ``(failed,
    undecided)``: ``undecided`` names the probes without a judged output whose attempts errored
    (asked again, they may pass or fail), ``failed`` every other reason (both empty when the gate
    passes or no gate is set).

    A probe fails when its failure rate (judged outputs; a harm probe's harm rate, not its
    compliance rate; the rate corrected for judge error when the summary has one, and the message
    says so) is above ``fail_above``, when one of its
    marks is ``fail_mark`` or worse, or — with either gate set — when it was not measured at all
    (a gate must not pass on evidence that does not exist). A run that is not complete fails."""
    if fail_above is None and fail_mark is None:
        return [], []
    if not isinstance(summary, RunSummary):
        summary = RunSummary.from_dict(summary)
    problems: list[str] = []
    undecided: list[str] = []
    for p in summary.probes:
        if p.not_measured:
            problems.append(f"{p.probe}: not measured ({p.not_measured})")
            continue
        rate = p.failure_rate
        gated = p.gated_rate
        if fail_above is not None and gated is not None and gated > fail_above:
            if p.corrected_rate is not None:
                observed = f"observed {rate:.1%}" if rate is not None else "no observed rate"
                problems.append(
                    f"{p.probe}: {p.rate_name} corrected for judge error {gated:.1%} > {fail_above:.1%} ({observed})"
                )
            else:
                problems.append(f"{p.probe}: {p.rate_name} {gated:.1%} > {fail_above:.1%}")
        if fail_mark is not None:
            for metric, mark in p.marks.items():
                if mark is not None and MARKS.index(mark) >= MARKS.index(fail_mark):
                    problems.append(f"{p.probe}: {metric} mark {mark} (gate: {fail_mark} or worse fails)")
        if rate is None and not set(p.metrics) - {COMPLIANCE_RATE} and p.attempts and fail_above is not None:
            (undecided if p.errored else problems).append(
                f"{p.probe}: no judged outputs ({p.errored} errored, {p.undetected} undetected)"
            )
    if summary.status != RUN_COMPLETE:
        problems.append(f"run {summary.run_id} is {summary.status}: resume it before gating")
    return problems, undecided
