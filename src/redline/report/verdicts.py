"""Each probe of a run judged against a release gate, for the CI formats (JUnit XML, SARIF).

A :class:`Gate` is the pair ``--fail-above`` / ``--fail-mark``; :func:`probe_verdicts` gives
every probe of a run one :class:`Verdict`: passed, failed (the gate's own violations, from
:func:`~redline.report.summary.gate_violations`), unmeasured (no evidence: not measured, not
finished, or no judged output) or not gated (nothing the gate compares, such as a bias probe
without ``--fail-mark``). An unmeasured probe is never a pass.

Model outputs quoted in these formats are bounded and made inert (:func:`quoted`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum

from redline.evaluation.measures import FAILURE, HARM, rate_name
from redline.report.formatting import pct, pct_interval, plural
from redline.report.outcome import group_reasons
from redline.report.rows import OutputRow, attempt_rows
from redline.report.summary import ProbeSummary, RunSummary, gate_violations
from redline.store import RUN_COMPLETE, Store
from redline.textsafety import inert

__all__ = [
    "EXAMPLE_CHARS",
    "EXAMPLES",
    "Gate",
    "Outcome",
    "Verdict",
    "error_reasons",
    "failing_examples",
    "outcome_line",
    "probe_verdicts",
    "quoted",
    "rate_line",
    "run_problems",
]

#: Failing outputs quoted per failed probe.
EXAMPLES = 3
#: Characters kept of each quoted prompt or output.
EXAMPLE_CHARS = 500


@dataclass(frozen=True)
class Gate:
    """A release gate: a probe fails when its failure rate is above ``fail_above`` (0-1) or a
    mark is ``fail_mark`` (``"A"``-``"D"``) or worse; ``None`` leaves that side ungated."""

    fail_above: float | None = 0.0
    fail_mark: str | None = None

    def describe(self, measure: str = FAILURE) -> str:
        """``failure rate above 10.0%, a mark C or worse`` (``no gate`` when neither is set); for a
        probe of ``measure`` ``"harm"``, whose gate is on its harm rate, ``harm rate above 10.0%``."""
        parts = []
        if self.fail_above is not None:
            parts.append(f"{rate_name(measure)} above {pct(self.fail_above)}")
        if self.fail_mark is not None:
            parts.append(f"a mark {self.fail_mark} or worse")
        return ", ".join(parts) or "no gate"


class Outcome(str, Enum):
    """What the gate made of one probe."""

    PASSED = "passed"
    FAILED = "failed"
    UNMEASURED = "unmeasured"
    NOT_GATED = "not gated"


@dataclass(frozen=True)
class Verdict:
    """One probe judged against a gate: its ``outcome``, the gate's ``problems`` with it (one
    line each) and, for an unmeasured or ungated probe, ``reason``."""

    probe: ProbeSummary
    outcome: Outcome
    problems: tuple[str, ...] = ()
    reason: str = ""


def _unmeasured(p: ProbeSummary) -> str:
    """Why ``p`` has no evidence to gate on (``""`` when it has some)."""
    if p.not_measured:
        return f"not measured: {p.not_measured}"
    if not p.complete:
        return f"not finished ({plural(p.attempts, 'attempt')} stored): resume the run"
    if not p.is_rated and not p.metrics:
        return f"no judged outputs ({p.errored} of {plural(p.attempts, 'attempt')} errored, {p.undetected} undetected)"
    return ""


def _gated(p: ProbeSummary, gate: Gate) -> bool:
    """The gate compares something ``p`` has: its failure rate, or a mark it was given."""
    rate = p.is_rated and gate.fail_above is not None
    return rate or (gate.fail_mark is not None and any(mark is not None for mark in p.marks.values()))


def probe_verdicts(summary: RunSummary, gate: Gate) -> list[Verdict]:
    """A :class:`Verdict` per probe of ``summary``, in the summary's order. The problems are the
    gate's own (:func:`~redline.report.summary.gate_violations` on that probe alone)."""
    verdicts = []
    for p in summary.probes:
        alone = replace(summary, probes=(p,), status=RUN_COMPLETE)
        problems = tuple(
            problem.removeprefix(f"{p.probe}: ") for problem in gate_violations(alone, gate.fail_above, gate.fail_mark)
        )
        missing = _unmeasured(p)
        if missing:
            verdicts.append(Verdict(p, Outcome.UNMEASURED, problems, missing))
        elif problems:
            verdicts.append(Verdict(p, Outcome.FAILED, problems))
        elif _gated(p, gate):
            verdicts.append(Verdict(p, Outcome.PASSED))
        elif p.is_rated:
            verdicts.append(Verdict(p, Outcome.NOT_GATED, reason=f"{p.rate_name} not gated (no --fail-above)"))
        elif p.marks and gate.fail_mark is not None:
            notes = "; ".join(f"{k}: {v}" for k, v in p.mark_notes.items() if v) or "no mark given"
            verdicts.append(Verdict(p, Outcome.NOT_GATED, reason=f"no mark to gate on ({notes})"))
        else:
            verdicts.append(Verdict(p, Outcome.NOT_GATED, reason="metrics only: gated by --fail-mark"))
    return verdicts


def run_problems(summary: RunSummary, gate: Gate) -> list[str]:
    """The gate's problems with the run as a whole (a run that did not complete)."""
    problems = gate_violations(replace(summary, probes=()), gate.fail_above, gate.fail_mark)
    if summary.status != RUN_COMPLETE and not problems:
        problems = [f"run {summary.run_id} is {summary.status}: resume it before gating"]
    return problems


def rate_line(p: ProbeSummary) -> str:
    """``2 of 10 judged outputs failed (20.0%, 95% CI 5.7–51.0%)`` (a harm probe: ``2 of 10 judged
    outputs delivered harm (harm rate 20.0%, 95% CI 5.7–51.0%); complied 90.0% (…)``), with the
    corrected rate and the errored attempts when there are any."""
    compliance = p.compliance
    if p.is_rated and p.measure == HARM:
        line = (
            f"{p.failed} of {plural(p.outputs, 'judged output')} delivered harm "
            f"(harm rate {pct(p.failure_rate)}, 95% CI {pct_interval(p.ci95)})"
        )
        if compliance is not None and compliance.value is not None:
            line += f"; complied {pct(compliance.value)} (95% CI {pct_interval(compliance.ci95)})"
    elif p.is_rated:
        line = (
            f"{p.failed} of {plural(p.outputs, 'judged output')} failed "
            f"({pct(p.failure_rate)}, 95% CI {pct_interval(p.ci95)})"
        )
    elif p.metrics:
        line = "; ".join(
            f"{name} {'not measured' if m.value is None else f'{m.value:+.2f}'}"
            + (f" mark {p.marks[name]}" if p.marks.get(name) else "")
            for name, m in p.metrics.items()
        )
    else:
        line = "no judged outputs"
    if p.corrected_rate is not None:
        line += f"; corrected for judge error {pct(p.corrected_rate)} (95% CI {pct_interval(p.corrected_ci95)})"
    if p.errored:
        line += f"; {p.errored} of {plural(p.attempts, 'attempt')} errored (no answer)"
    if p.undetected:
        line += f"; {p.undetected} undetected"
    return line


def outcome_line(v: Verdict, gate: Gate) -> str:
    """One line for the verdict: the gate's problems, the reason, or that it passed the gate."""
    if v.outcome is Outcome.FAILED:
        return "; ".join(v.problems)
    if v.outcome is Outcome.PASSED:
        return f"passed the gate ({gate.describe(v.probe.measure)} fails)"
    return v.reason


def error_reasons(store: Store, run_id: str, probe: str, top: int = 3) -> list[tuple[str, int]]:
    """The commonest reasons the attempts of ``probe`` errored
    (:func:`~redline.report.outcome.group_reasons`), inert, with how many attempts each."""
    notes = store.iter_attempt_notes(run_id, probe, errored=True)
    return [(quoted(r.reason, 200), r.count) for r in group_reasons((n.get("error") for n in notes), top)]


def failing_examples(store: Store, run_id: str, probe: str, limit: int = EXAMPLES) -> list[OutputRow]:
    """Up to ``limit`` outputs of ``probe`` judged as failures, in attempt order."""
    found: list[OutputRow] = []
    if limit <= 0:
        return found
    for attempt in store.iter_attempts(run_id, probe, errored=False):
        found += [row for row in attempt_rows(attempt, run_id) if row.is_hit]
        if len(found) >= limit:
            break
    return found[:limit]


# XML 1.0 allows no other characters; inert() already shows controls, so this catches U+FFFE/U+FFFF
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def quoted(text: str | None, limit: int = EXAMPLE_CHARS) -> str:
    """Model or server text as the CI formats quote it: at most ``limit`` characters (then how many
    more there were), inert (:func:`~redline.textsafety.inert`) and valid in XML 1.0."""
    text = text or ""
    if len(text) > limit:
        text = text[:limit] + f"… [{len(text) - limit} more characters]"
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", inert(text))
