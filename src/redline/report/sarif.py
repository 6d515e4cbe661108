"""A run as a SARIF 2.1.0 log, for code-scanning dashboards (GitHub code scanning, Azure DevOps,
DefectDojo and other SARIF readers).

One rule per probe of the run (``id`` the probe name, its goal as description, its tags in
``properties.tags``), one result per probe that has failed outputs or no evidence:

* ``error``: the gate fails the probe (:mod:`redline.report.verdicts`);
* ``warning``: the probe has failed outputs, within the gate;
* ``note``: the probe has failed outputs and the gate does not compare its rate;
* kind ``open`` (level ``none``): the probe has no evidence (not measured, not finished, no judged
  output), since the scan could not tell pass from fail.

A probe without a failed output gets no result. A result quotes up to
:data:`~redline.report.verdicts.EXAMPLES` failing outputs in ``properties.examples``, each bounded
and inert (:func:`~redline.report.verdicts.quoted`): SARIF readers show them as text, never as
markup. Its location is the file named by ``artifact`` (GitHub code scanning shows a result only
with a file in the repository; name the file that configures the scan) and, always, the probe as
a logical location; ``partialFingerprints`` keep one alert per model and probe across runs.
A run that did not complete, and every unmeasured probe, is an ``invocations`` notification, and
``executionSuccessful`` is false.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import urllib.parse
from collections.abc import Iterator
from typing import Any

from redline import __version__
from redline.evaluation.measures import HARM, measure_of
from redline.report.summary import RunSummary, build_summary
from redline.report.verdicts import (
    Gate,
    Outcome,
    Verdict,
    failing_examples,
    outcome_line,
    probe_verdicts,
    quoted,
    rate_line,
    run_problems,
)
from redline.store import Store
from redline.store.records import ProbeResultRecord
from redline.textsafety import dumps

__all__ = ["SARIF_SCHEMA", "export_sarif"]

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
"""The ``$schema`` of every log: the OASIS SARIF 2.1.0 schema (errata 01)."""

_TEXT = 2000  # characters kept of a name, goal or message from the store


def _utc(timestamp: float | None) -> str | None:
    if not timestamp:
        return None
    return _dt.datetime.fromtimestamp(timestamp, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rule(name: str, result: ProbeResultRecord | None, tags: tuple[str, ...]) -> dict[str, Any]:
    goal = quoted(result.goal if result else "", _TEXT)
    detectors = ", ".join(result.detectors) if result and result.detectors else "its evaluator"
    judged_by = result.data.get("judged_by") if result else None
    judged = f"Outputs are judged by {detectors}."
    if result is not None and measure_of(result.data.get("measure")) == HARM and isinstance(judged_by, list):
        beside = [d for d in result.detectors if d not in judged_by]
        judged = (
            f"The harm rate (the answer delivers what was asked for) counts the verdicts of {', '.join(map(str, judged_by))}"
            + (f"; the compliance rate beside it, those of {', '.join(beside)}." if beside else ".")
        )
    text = f"redline probe {name}: tries to {goal}." if goal else f"redline probe {name}."
    return {
        "id": quoted(name, _TEXT),
        "name": quoted(name, _TEXT),
        "shortDescription": {"text": quoted(goal or name, _TEXT)},
        "fullDescription": {"text": quoted(f"{text} {judged}", _TEXT)},
        "help": {
            "text": quoted(
                f"{text} A result means the model's outputs failed this probe; the run's failing "
                "outputs are in 'redline report RUN --format hitlog' and the HTML report.",
                _TEXT,
            )
        },
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["security", "llm", *(quoted(t, 200) for t in tags)]},
    }


def _level(v: Verdict) -> tuple[str, str] | None:
    """``(kind, level)`` of the verdict's result; ``None`` when it gets none."""
    if v.outcome is Outcome.UNMEASURED:
        return "open", "none"
    if v.outcome is Outcome.FAILED:
        return "fail", "error"
    if v.probe.is_rated and v.probe.failed:
        return "fail", "warning" if v.outcome is Outcome.PASSED else "note"
    return None


def _fingerprint(model: str, probe: str) -> str:
    return hashlib.sha256(f"{model}\0{probe}".encode("utf-8", "surrogatepass")).hexdigest()


def _result(
    store: Store, summary: RunSummary, v: Verdict, index: int, gate: Gate, artifact: str | None
) -> dict[str, Any] | None:
    shape = _level(v)
    if shape is None:
        return None
    kind, level = shape
    p = v.probe
    location: dict[str, Any] = {
        "logicalLocations": [
            {"name": quoted(p.probe, _TEXT), "fullyQualifiedName": quoted(f"{summary.model}/{p.probe}", _TEXT)}
        ]
    }
    if artifact:
        location["physicalLocation"] = {"artifactLocation": {"uri": urllib.parse.quote(artifact, safe="/")}}
    examples = failing_examples(store, summary.run_id, p.probe) if p.failed else []
    return {
        "ruleId": quoted(p.probe, _TEXT),
        "ruleIndex": index,
        "kind": kind,
        "level": level,
        "message": {"text": quoted(f"{p.probe}: {outcome_line(v, gate)}. {rate_line(p)}.", _TEXT)},
        "locations": [location],
        "partialFingerprints": {"redlineProbe/v1": _fingerprint(summary.model, p.probe)},
        "properties": {
            "run": summary.run_id,
            "model": quoted(summary.model, _TEXT),
            "attempts": p.attempts,
            "errored": p.errored,
            "failed": p.failed,
            "judged": p.outputs,
            "failureRate": p.failure_rate,
            "ci95": None if p.ci95 is None else list(p.ci95),
            "correctedRate": p.corrected_rate,
            "measure": p.measure,
            "complianceRate": p.compliance.value if p.compliance is not None else None,
            "gate": gate.describe(p.measure),
            "examples": [
                {
                    "attempt": row.seq,
                    "generation": row.generation,
                    "prompt": quoted(row.prompt),
                    "output": quoted(row.output),
                }
                for row in examples
            ],
        },
    }


def export_sarif(store: Store, run_id: str, gate: Gate | None = None, artifact: str | None = None) -> Iterator[str]:
    """The run as a SARIF 2.1.0 log (see the module doc), each probe judged against ``gate``
    (default: any failed output fails), each result located at ``artifact`` (a path relative to
    the repository, percent-encoded into the URI) when given. Raises ``RunNotFound`` before
    anything is produced."""
    gate = gate or Gate()
    run = store.get_run(run_id)
    summary = build_summary(store, run_id)
    records = store.probe_results(run_id)
    verdicts = probe_verdicts(summary, gate)
    rules = [_rule(v.probe.probe, records.get(v.probe.probe), summary.tags.get(v.probe.probe, ())) for v in verdicts]
    results = [r for i, v in enumerate(verdicts) if (r := _result(store, summary, v, i, gate, artifact)) is not None]
    notifications = [
        {"level": "error", "message": {"text": quoted(f"{v.probe.probe}: {v.reason}", _TEXT)}}
        for v in verdicts
        if v.outcome is Outcome.UNMEASURED
    ]
    notifications += [
        {"level": "error", "message": {"text": quoted(problem, _TEXT)}} for problem in run_problems(summary, gate)
    ]
    invocation: dict[str, Any] = {"executionSuccessful": not notifications}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    start, end = _utc(run.created), _utc(run.updated)
    if start:
        invocation["startTimeUtc"] = start
    if end:
        invocation["endTimeUtc"] = end
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "redline", "version": __version__, "rules": rules}},
                "automationDetails": {"id": quoted(f"redline/{summary.model}/{run_id}", _TEXT)},
                "invocations": [invocation],
                "results": results,
                "properties": {
                    "run": run_id,
                    "model": quoted(summary.model, _TEXT),
                    "status": summary.shown_status,
                    "gate": gate.describe(),
                },
            }
        ],
    }
    yield dumps(log, indent=2) + "\n"
