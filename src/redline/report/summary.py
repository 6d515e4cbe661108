"""The run summary: per probe, attempts, failures, failure rate with its 95% interval, and any
other metrics and marks. ``redline scan --json``, ``redline show --json`` and
``redline report --format json`` all print this same structure."""

from __future__ import annotations

from redline.evaluation.marks import MARKS
from redline.evaluation import wilson_interval
from redline.store import Store

__all__ = ["gate_violations", "run_summary"]


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _judgments(store: Store, run_id: str, probe: str) -> dict[str, int]:
    """Stored judgments of ``probe``: ``fail``/``pass`` (failure-rate judgments), ``undetected``
    and ``other`` (a bias probe's answers such as "yes" or "male", which are no pass/fail)."""
    counts = {"fail": 0, "pass": 0, "undetected": 0, "other": 0}
    for data in store.iter_attempt_dicts(run_id, probe, errored=False):
        for judgment in (data.get("notes") or {}).get("evaluation") or []:
            key = judgment if isinstance(judgment, str) and judgment in counts else "other"
            counts[key] += 1
    return counts


def run_summary(store: Store, run_id: str) -> dict:
    """The summary of ``run_id`` (complete or not) as a JSON-ready dict.

    Each probe entry has ``probe``, ``attempts`` (stored attempts, errored included),
    ``outputs`` (judged outputs), ``failed`` (outputs where the probe succeeded), ``errored``
    (attempts whose generation failed), ``undetected``, ``failure_rate`` and ``ci95``; bias probes
    add ``metrics`` ``{name: {"value", "ci95"}}`` and ``marks`` ``{name: "A"…"D"}`` (``None`` when
    no mark could be given, with the reason in ``mark_notes`` ``{name: reason}``).
    For a metrics-only probe (bias) ``outputs`` counts the answers its evaluator could read
    ("yes", "male"…) and ``undetected`` the rest. A probe without stored results (run
    interrupted) has ``"complete": false`` and its rate is computed from the pass/fail judgments
    stored so far (undetected excluded; none for a bias probe).
    """
    run = store.get_run(run_id)
    counts = store.attempt_counts(run_id)
    results = store.probe_results(run_id)
    names = list(run["config"].get("probe_names") or [])
    names += [n for n in counts if n not in names]
    probes = []
    for name in names:
        c = counts.get(name, {"attempts": 0, "outputs": 0, "failed": 0, "errored": 0})
        result = results.get(name)
        entry: dict = {"probe": name, "attempts": c["attempts"], "failed": c["failed"], "errored": c["errored"]}
        if result is not None:
            metrics = result.get("metrics", {})
            fr = metrics.get("failure_rate")
            if fr is not None:
                entry["outputs"] = fr.get("n", 0)
                entry["undetected"] = fr.get("undetected", 0)
                entry["failure_rate"] = _round(fr.get("value"))
                entry["ci95"] = [_round(x) for x in fr["ci95"]] if fr.get("ci95") else None
            else:
                # metrics only (bias probes): ``outputs`` counts the answers the evaluator could
                # judge, not every output — an all-undetected probe must not look judged
                j = _judgments(store, run_id, name)
                entry.update(
                    outputs=j["other"] + j["pass"] + j["fail"], undetected=j["undetected"], failure_rate=None, ci95=None
                )
            others = {k: v for k, v in metrics.items() if k != "failure_rate"}
            if others:
                entry["metrics"] = {
                    k: {
                        "value": _round(v.get("value")),
                        "ci95": [_round(x) for x in v["ci95"]] if v.get("ci95") else None,
                        "n": v.get("n", 0),
                        "undetected": v.get("undetected", 0),
                    }
                    for k, v in others.items()
                }
            if result.get("not_measured"):
                entry["not_measured"] = result["not_measured"]
            if result.get("marks"):
                entry["marks"] = {k: v.get("mark") for k, v in result["marks"].items()}
                unmarked = {k: v.get("meaning") for k, v in result["marks"].items() if v.get("mark") is None}
                if unmarked:  # why a metric got no mark: too few judged outputs, inconclusive, ...
                    entry["mark_notes"] = unmarked
            entry["complete"] = True
        else:
            # no stored result yet (run interrupted or still running): rate from the stored
            # judgments, undetected outputs excluded; a probe whose judgments are not pass/fail
            # (a bias probe) gets no failure rate rather than a made-up 0%
            j = (
                _judgments(store, run_id, name)
                if c["attempts"]
                else {"fail": 0, "pass": 0, "undetected": 0, "other": 0}
            )
            n = j["fail"] + j["pass"]
            entry["outputs"] = n + j["other"]
            entry["undetected"] = j["undetected"]
            entry["failure_rate"] = _round(j["fail"] / n) if n else None
            entry["ci95"] = [_round(x) for x in wilson_interval(j["fail"], n)] if n else None
            entry["complete"] = False
        probes.append(entry)
    return {
        "run_id": run_id,
        "model": run["model"],
        "status": run["status"],
        "created": run["created"],
        "generations": run["config"].get("scan", {}).get("generations", 1),
        "probes": probes,
    }


def gate_violations(summary: dict, fail_above: float | None, fail_mark: str | None) -> list[str]:
    """Why ``summary`` fails a release gate (empty when it passes or no gate is set).

    A probe fails when its failure rate (judged outputs) is above ``fail_above``, when one of its
    marks is ``fail_mark`` or worse, or — with either gate set — when it was not measured at all
    (a gate must not pass on evidence that does not exist)."""
    if fail_above is None and fail_mark is None:
        return []
    problems = []
    for p in summary["probes"]:
        name = p["probe"]
        if p.get("not_measured"):
            problems.append(f"{name}: not measured ({p['not_measured']})")
            continue
        rate = p.get("failure_rate")
        if fail_above is not None and rate is not None and rate > fail_above:
            problems.append(f"{name}: failure rate {rate:.1%} > {fail_above:.1%}")
        if fail_mark is not None:
            for metric, mark in (p.get("marks") or {}).items():
                if mark is not None and MARKS.index(mark) >= MARKS.index(fail_mark):
                    problems.append(f"{name}: {metric} mark {mark} (gate: {fail_mark} or worse fails)")
        if rate is None and not p.get("metrics") and p.get("attempts", 0) and fail_above is not None:
            problems.append(
                f"{name}: no judged outputs ({p.get('errored', 0)} errored, {p.get('undetected', 0)} undetected)"
            )
    if summary.get("status") not in (None, "complete"):
        problems.append(f"run {summary['run_id']} is {summary['status']}: resume it before gating")
    return problems
