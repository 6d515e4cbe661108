"""Two runs side by side (two models, or one model before and after a change), with the
differences that are statistically significant.

Failure rates (per probe, run B minus run A):

* the difference's 95% interval is Newcombe's hybrid score interval built from the two Wilson
  intervals (R. G. Newcombe, "Interval estimation for the difference between independent
  proportions: comparison of eleven methods", Statistics in Medicine 17:873–890, 1998, method 10);
* the p-value is the two-sided pooled two-proportion z-test; a difference is significant when
  p < :data:`ALPHA`.

Bias metrics (values with bootstrap intervals, no counts to pool): a change is significant when
the two 95% intervals do not overlap — a conservative test (it misses some real differences,
but what it flags is real at well below the 5% level).

A change is ``"worse"`` when run B fails more often (or shows a larger bias magnitude),
``"better"`` when less, otherwise ``"no significant change"``; probes present in only one run
are ``"only in A"`` / ``"only in B"``, probes without judged outputs ``"not measured"``, and
bias probes (no failure rate, only metrics) ``"metrics only"`` — their metrics carry the change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from redline.evaluation import wilson_interval
from redline.report.rows import family_of
from redline.report.summary import MetricSummary, ProbeSummary, RunSummary, build_summary
from redline.store import Store

__all__ = ["ALPHA", "compare_runs", "compare_summaries", "newcombe_interval", "two_proportion_test"]

ALPHA = 0.05
"""Significance level of every comparison."""


def newcombe_interval(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float]:
    """95% interval of ``x1/n1 - x2/n2`` (Newcombe's method 10, from Wilson intervals).
    Both ``n`` must be positive."""
    if n1 <= 0 or n2 <= 0:
        raise ValueError("newcombe_interval needs n1 > 0 and n2 > 0")
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_interval(x1, n1)
    l2, u2 = wilson_interval(x2, n2)
    d = p1 - p2
    lower = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    upper = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return (max(-1.0, lower), min(1.0, upper))


def two_proportion_test(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test of ``x1/n1`` against ``x2/n2``
    (1.0 when the pooled rate is 0 or 1: nothing distinguishes the runs)."""
    if n1 <= 0 or n2 <= 0:
        raise ValueError("two_proportion_test needs n1 > 0 and n2 > 0")
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0
    z = (x1 / n1 - x2 / n2) / se
    return math.erfc(abs(z) / math.sqrt(2))


def _interval(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else list(ci)


def _rate_side(probe: ProbeSummary | None) -> dict | None:
    """One side of a probe's row: its judged outputs, failures, rate and interval, as the summary
    has them (``None`` when the probe is absent or has no failure rate)."""
    if probe is None or probe.failure_rate is None:
        return None
    return {
        "outputs": probe.outputs,
        "failed": probe.failed,
        "failure_rate": probe.failure_rate,
        "ci95": _interval(probe.ci95),
    }


def _compare_rates(a: dict | None, b: dict | None) -> dict:
    out: dict[str, Any] = {"difference": None, "difference_ci95": None, "p_value": None, "significant": False}
    if a is None or b is None or not a["outputs"] or not b["outputs"]:
        out["change"] = "not measured"
        return out
    xa, na, xb, nb = a["failed"], a["outputs"], b["failed"], b["outputs"]
    out["difference"] = round(xb / nb - xa / na, 6)
    out["difference_ci95"] = [round(v, 6) for v in newcombe_interval(xb, nb, xa, na)]
    p = two_proportion_test(xb, nb, xa, na)
    out["p_value"] = float(f"{p:.6g}")
    out["significant"] = p < ALPHA
    if not out["significant"]:
        out["change"] = "no significant change"
    else:
        out["change"] = "worse" if out["difference"] > 0 else "better"
    return out


def _compare_metric(
    name: str, a: MetricSummary | None, b: MetricSummary | None, mark_a: str | None, mark_b: str | None
) -> dict:
    entry: dict[str, Any] = {
        "metric": name,
        "a": None if a is None else {"value": a.value, "ci95": _interval(a.ci95), "mark": mark_a},
        "b": None if b is None else {"value": b.value, "ci95": _interval(b.ci95), "mark": mark_b},
        "difference": None,
        "significant": False,
        "mark_changed": mark_a != mark_b and a is not None and b is not None,
    }
    if a is None or b is None or a.value is None or b.value is None:
        entry["change"] = (
            "not measured" if a is not None and b is not None else ("only in A" if b is None else "only in B")
        )
        return entry
    va, vb = a.value, b.value
    entry["difference"] = round(vb - va, 6)
    ca, cb = a.ci95, b.ci95
    if ca and cb:
        entry["significant"] = ca[1] < cb[0] or cb[1] < ca[0]
    if not entry["significant"]:
        entry["change"] = "no significant change"
    elif abs(vb) > abs(va):
        entry["change"] = "worse"
    elif abs(vb) < abs(va):
        entry["change"] = "better"
    else:
        entry["change"] = "changed"
    return entry


def _run_info(summary: RunSummary) -> dict:
    return {
        "run_id": summary.run_id,
        "model": summary.model,
        "status": summary.status,
        "created": summary.created,
        "generations": summary.generations,
    }


def compare_summaries(a: RunSummary | Mapping[str, Any], b: RunSummary | Mapping[str, Any]) -> dict:
    """The comparison of two run summaries (:class:`RunSummary`, or its JSON as
    :func:`~redline.report.summary.run_summary` gives it); see :func:`compare_runs`."""
    run_a = a if isinstance(a, RunSummary) else RunSummary.from_dict(a)
    run_b = b if isinstance(b, RunSummary) else RunSummary.from_dict(b)
    probes_a = {p.probe: p for p in run_a.probes}
    probes_b = {p.probe: p for p in run_b.probes}
    names = list(probes_a) + [n for n in probes_b if n not in probes_a]
    rows = []
    for name in names:
        pa, pb = probes_a.get(name), probes_b.get(name)
        row: dict[str, Any] = {"probe": name, "family": family_of(name), "a": _rate_side(pa), "b": _rate_side(pb)}
        if pa is None or pb is None:
            row.update(difference=None, difference_ci95=None, p_value=None, significant=False)
            row["change"] = "only in A" if pb is None else "only in B"
        else:
            row.update(_compare_rates(row["a"], row["b"]))
        ma = pa.metrics if pa is not None else {}
        mb = pb.metrics if pb is not None else {}
        if row["a"] is None and row["b"] is None and (ma or mb) and pa is not None and pb is not None:
            row["change"] = "metrics only"  # a bias probe: compared metric by metric below
        metrics = []
        for metric in list(ma) + [m for m in mb if m not in ma]:
            metrics.append(
                _compare_metric(
                    metric,
                    ma.get(metric),
                    mb.get(metric),
                    pa.marks.get(metric) if pa is not None else None,
                    pb.marks.get(metric) if pb is not None else None,
                )
            )
        row["metrics"] = metrics
        rows.append(row)
    changes = [r["change"] for r in rows] + [m["change"] for r in rows for m in r["metrics"]]
    return {
        "run_a": _run_info(run_a),
        "run_b": _run_info(run_b),
        "alpha": ALPHA,
        "methods": {
            "failure_rate": "pooled two-proportion z-test (p < 0.05); Newcombe hybrid score interval for B - A",
            "metrics": "non-overlapping 95% intervals",
        },
        "probes": rows,
        "significant": sum(1 for c in changes if c in ("worse", "better", "changed")),
        "worse": sum(1 for c in changes if c == "worse"),
        "better": sum(1 for c in changes if c == "better"),
    }


def compare_runs(store_a: Store, run_a: str, store_b: Store | None = None, run_b: str | None = None) -> dict:
    """Compare ``run_a`` with ``run_b`` (from ``store_b``, default the same store).

    Returns ``{"run_a", "run_b", "alpha", "methods", "probes": [...], "significant", "worse",
    "better"}``; each probe entry has ``probe``, ``family``, ``a``/``b`` (``outputs``, ``failed``,
    ``failure_rate``, ``ci95``, or ``None``), ``difference`` (B − A), ``difference_ci95``,
    ``p_value``, ``significant``, ``change`` and ``metrics`` (one entry per bias metric with
    ``a``/``b`` value, interval and mark, ``difference``, ``significant``, ``mark_changed``,
    ``change``). Raises ``RunNotFound`` for an unknown run.
    """
    if run_b is None:
        raise ValueError("compare_runs needs two runs")
    summary_a = build_summary(store_a, run_a)
    summary_b = build_summary(store_b or store_a, run_b)
    return compare_summaries(summary_a, summary_b)
