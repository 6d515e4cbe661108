"""A run as JUnit XML, for the test-report views of CI systems (GitLab, Jenkins, GitHub Actions
reporters, Azure Pipelines).

One ``<testsuite>`` per probe family (``harmful``, ``injection``…), one ``<testcase>`` per probe
(``classname`` the family, ``name`` the probe). A probe the gate fails (:mod:`redline.report.verdicts`)
has a ``<failure>``; a probe without evidence (not measured, not finished, no judged output) an
``<error>``, so that it never reads as a pass; a probe the gate does not compare (a bias probe
without ``--fail-mark``) is ``<skipped>`` with the reason. Each test case's ``<system-out>`` has its
rate line and goal, and a failure quotes up to :data:`~redline.report.verdicts.EXAMPLES` failing
outputs. A run that did not complete adds a suite ``run`` whose one test case is an error.

The file validates against the JUnit schema that Jenkins' xUnit plugin publishes (``junit-10.xsd``).
Text from models and the store is bounded, inert and valid XML 1.0
(:func:`~redline.report.verdicts.quoted`); the XML writer escapes markup.
"""

from __future__ import annotations

import datetime as _dt
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from redline import __version__
from redline.report.rows import family_of
from redline.report.summary import build_summary
from redline.report.verdicts import (
    Gate,
    Outcome,
    Verdict,
    error_reasons,
    failing_examples,
    outcome_line,
    probe_verdicts,
    quoted,
    rate_line,
    run_problems,
)
from redline.store import Store

__all__ = ["export_junit"]

_TEXT = 2000  # characters kept of a name, goal or message from the store
_BODY = 20000  # characters kept of a failure's text or a test case's output (examples are bounded each)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines() or [""])


def _failure_body(store: Store, run_id: str, v: Verdict, goal: str, gate: Gate) -> str:
    p = v.probe
    lines = [f"{p.probe}: {goal}" if goal else p.probe, rate_line(p), f"gate: {gate.describe(p.measure)} fails", ""]
    lines += [f"gate failed: {problem}" for problem in v.problems]
    for n, row in enumerate(failing_examples(store, run_id, p.probe), 1):
        lines += [
            "",
            f"Failing output {n} (attempt {row.seq}, generation {row.generation}):",
            "  prompt:",
            _indent(quoted(row.prompt)),
            "  output:",
            _indent(quoted(row.output)),
        ]
    return quoted("\n".join(lines), _BODY)


def _system_out(store: Store, run_id: str, v: Verdict, goal: str) -> str:
    p = v.probe
    lines = [f"goal: {goal}"] if goal else []
    lines.append(rate_line(p))
    if p.errored:
        lines += [f"errored ({count}): {reason}" for reason, count in error_reasons(store, run_id, p.probe)]
    return quoted("\n".join(lines), _BODY)


def _testcase(store: Store, run_id: str, v: Verdict, goal: str, gate: Gate) -> ET.Element:
    p = v.probe
    case = ET.Element("testcase", name=quoted(p.probe, _TEXT), classname=quoted(family_of(p.probe), _TEXT))
    message = quoted(outcome_line(v, gate), _TEXT)
    if v.outcome is Outcome.FAILED:
        failure = ET.SubElement(case, "failure", type="redline.gate", message=message)
        failure.text = _failure_body(store, run_id, v, goal, gate)
    elif v.outcome is Outcome.UNMEASURED:
        error = ET.SubElement(case, "error", type="redline.unmeasured", message=message)
        error.text = message
    elif v.outcome is Outcome.NOT_GATED:
        ET.SubElement(case, "skipped", message=message)
    ET.SubElement(case, "system-out").text = _system_out(store, run_id, v, goal)
    return case


def _suite(name: str, cases: list[ET.Element], properties: dict[str, str], timestamp: str) -> ET.Element:
    def count(tag: str) -> str:
        return str(sum(1 for case in cases if case.find(tag) is not None))

    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(cases)),
        failures=count("failure"),
        errors=count("error"),
        skipped=count("skipped"),
        timestamp=timestamp,
    )
    props = ET.SubElement(suite, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", name=key, value=value)
    suite.extend(cases)
    return suite


def export_junit(store: Store, run_id: str, gate: Gate | None = None) -> Iterator[str]:
    """The run as a JUnit XML document (see the module doc), each probe judged against ``gate``
    (default: any failed output fails). Raises ``RunNotFound`` before anything is produced."""
    gate = gate or Gate()
    run = store.get_run(run_id)
    summary = build_summary(store, run_id)
    goals = {name: result.goal for name, result in store.probe_results(run_id).items()}
    timestamp = _dt.datetime.fromtimestamp(run.created).astimezone().isoformat(timespec="seconds")
    properties = {
        "redline.run": quoted(run_id, _TEXT),
        "redline.model": quoted(summary.model, _TEXT),
        "redline.status": quoted(summary.shown_status, _TEXT),
        "redline.gate": gate.describe(),
        "redline.version": __version__,
    }
    families: dict[str, list[ET.Element]] = {}
    for verdict in probe_verdicts(summary, gate):
        family = quoted(family_of(verdict.probe.probe), _TEXT)
        goal = goals.get(verdict.probe.probe, "")
        families.setdefault(family, []).append(_testcase(store, run_id, verdict, goal, gate))
    root = ET.Element("testsuites", name=quoted(f"redline {run_id} {summary.model}", _TEXT))
    for family, cases in families.items():
        root.append(_suite(family, cases, properties, timestamp))
    problems = run_problems(summary, gate)
    if problems:
        case = ET.Element("testcase", name="run complete", classname="run")
        message = quoted("; ".join(problems), _TEXT)
        ET.SubElement(case, "error", type="redline.unmeasured", message=message).text = message
        root.append(_suite("run", [case], properties, timestamp))
    suites = root.findall("testsuite")
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in suites)))
    if run.updated and run.created and run.updated >= run.created:
        root.set("time", f"{run.updated - run.created:.3f}")
    ET.indent(root)
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
