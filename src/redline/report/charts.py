"""Chart geometry for the HTML reports, computed server-side.

Functions here return plain dicts of coordinates and labels; the Jinja templates draw them as
inline SVG (autoescaped like everything else). No JavaScript and no charting library is
involved, so the charts render under the report's strict Content-Security-Policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redline.report.formatting import pct, pct_interval
from redline.report.summary import MetricSummary, ProbeSummary

__all__ = ["dumbbell_chart", "mark_class", "metric_chart", "rate_chart", "rate_class"]

LABEL_W = 230
PLOT_X = 240
PLOT_W = 440
VALUE_W = 120
ROW_H = 26
TOP = 28
WIDTH = PLOT_X + PLOT_W + VALUE_W


def rate_class(rate: float | None) -> str:
    """CSS class for a failure rate: ``rn`` (not measured), ``r0`` (none), ``r1`` (< 5%),
    ``r2`` (< 20%), ``r3`` (< 50%), ``r4`` (50% or more)."""
    if rate is None:
        return "rn"
    if rate <= 0:
        return "r0"
    if rate < 0.05:
        return "r1"
    if rate < 0.20:
        return "r2"
    if rate < 0.50:
        return "r3"
    return "r4"


def mark_class(mark: str | None) -> str:
    """CSS class for a mark A–D (``mn`` when not measured)."""
    return f"m{mark.lower()}" if mark in ("A", "B", "C", "D") else "mn"


def _label(text: str, limit: int = 31) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _x(value: float, lo: float, hi: float) -> float:
    value = min(max(value, lo), hi)
    return round(PLOT_X + (value - lo) / (hi - lo) * PLOT_W, 2)


def _frame(count: int, ticks: list[dict], **parts: object) -> dict:
    """The geometry every chart shares, for ``count`` rows, with ``ticks`` and the chart's own
    ``parts`` (bars, lines, rows...)."""
    height = TOP + count * ROW_H + 8
    return {
        "width": WIDTH,
        "height": height,
        "plot_x": PLOT_X,
        "plot_w": PLOT_W,
        "top": TOP,
        "bottom": height - 8,
        "value_x": PLOT_X + PLOT_W + 12,
        "ticks": ticks,
        **parts,
    }


def _rate_ticks() -> list[dict]:
    return [{"x": _x(t, 0, 1), "label": f"{int(t * 100)}%"} for t in (0, 0.25, 0.5, 0.75, 1.0)]


def rate_chart(probes: Sequence[ProbeSummary]) -> dict | None:
    """Failure rate per probe as horizontal bars with 95% whiskers (``None`` when no probe has
    a failure rate)."""
    rows = [(p, p.failure_rate) for p in probes if p.failure_rate is not None]
    if not rows:
        return None
    bars = []
    for i, (p, rate) in enumerate(rows):
        y = TOP + i * ROW_H
        ci = p.ci95 or (rate, rate)
        bars.append(
            {
                "label": _label(p.probe),
                "title": p.probe,
                "y": y,
                "mid": y + ROW_H / 2,
                "bar_y": y + 7,
                "bar_h": ROW_H - 14,
                "bar_w": max(round(_x(rate, 0, 1) - PLOT_X, 2), 1.5),
                "lo_x": _x(ci[0], 0, 1),
                "hi_x": _x(ci[1], 0, 1),
                "text": pct(rate),
                "ci_text": pct_interval(ci, digits=0),
                "cls": rate_class(rate),
            }
        )
    return _frame(len(rows), _rate_ticks(), bars=bars)


def _domain(values: list[float]) -> tuple[float, float]:
    lo = min([0.0] + values)
    hi = max([1.0] + values)
    if lo < 0:
        lo = min(lo, -1.0)
    return (lo, hi)


def metric_chart(probes: Sequence[ProbeSummary]) -> dict | None:
    """Bias metrics as dots with 95% whiskers and their mark (``None`` when no probe has
    metrics)."""
    items: list[tuple[str, str, MetricSummary, str | None]] = []
    for p in probes:
        for name, metric in p.metrics.items():
            items.append((p.probe, name, metric, p.marks.get(name)))
    if not items:
        return None
    values: list[float] = []
    for _, _, metric, _ in items:
        if metric.value is not None:
            values.append(float(metric.value))
        values.extend(float(v) for v in (metric.ci95 or ()))
    lo, hi = _domain(values)
    rows = []
    for i, (probe, name, metric, mark) in enumerate(items):
        y = TOP + i * ROW_H
        value = metric.value
        row: dict[str, Any] = {
            "label": _label(f"{probe.split('.', 1)[-1]} · {name}", 31),
            "title": f"{probe} · {name}",
            "y": y,
            "mid": y + ROW_H / 2,
            "measured": value is not None,
            "mark": mark,
            "mark_cls": mark_class(mark),
        }
        if value is not None:
            ci = metric.ci95 or (value, value)
            row.update(
                x=_x(float(value), lo, hi),
                lo_x=_x(float(ci[0]), lo, hi),
                hi_x=_x(float(ci[1]), lo, hi),
                text=f"{float(value):+.2f}",
            )
        rows.append(row)
    step = 0.5 if hi - lo > 1.01 else 0.25
    ticks = []
    t = lo
    while t <= hi + 1e-9:
        ticks.append({"x": _x(t, lo, hi), "label": f"{t:+.2f}" if lo < 0 else f"{t:.2f}"})
        t = round(t + step, 6)
    return _frame(len(items), ticks, zero_x=_x(0.0, lo, hi), rows=rows)


def dumbbell_chart(rows: list[dict]) -> dict | None:
    """Run A against run B per probe: two dots with whiskers on one line (``None`` when no probe
    has a failure rate in both). Each row needs ``probe``, ``a``/``b`` (``failure_rate``,
    ``ci95``) and ``significant``/``change``."""
    usable = [r for r in rows if r.get("a") and r.get("b")]
    if not usable:
        return None
    lines = []
    for i, r in enumerate(usable):
        y = TOP + i * ROW_H
        mid = y + ROW_H / 2
        a, b = r["a"], r["b"]
        ca = a.get("ci95") or [a["failure_rate"]] * 2
        cb = b.get("ci95") or [b["failure_rate"]] * 2
        lines.append(
            {
                "label": _label(r["probe"]),
                "title": r["probe"],
                "mid": mid,
                "a_y": mid - 4,
                "b_y": mid + 4,
                "ax": _x(a["failure_rate"], 0, 1),
                "bx": _x(b["failure_rate"], 0, 1),
                "a_lo": _x(ca[0], 0, 1),
                "a_hi": _x(ca[1], 0, 1),
                "b_lo": _x(cb[0], 0, 1),
                "b_hi": _x(cb[1], 0, 1),
                "change": r.get("change", ""),
                "significant": bool(r.get("significant")),
                "text": "" if r.get("difference") is None else f"{r['difference'] * 100:+.1f} pts",
            }
        )
    return _frame(len(usable), _rate_ticks(), lines=lines)
