"""The self-contained HTML report of a run (``redline report RUN_ID --html FILE``).

One file, nothing fetched: no CDN, no web font, no remote image; styles and the small filter
script are inline and charts are inline SVG computed server-side (:mod:`.charts`).

Model outputs are hostile, so the page has two independent defences:

1. every value reaches the page through Jinja2 with autoescaping on, as text (``<pre>``), never
   as markup; nothing is linkified and no Markdown is rendered;
2. a strict Content-Security-Policy in a ``<meta>`` tag — ``default-src 'none'``, images only
   from ``data:``, scripts only with this page's random nonce — so that even if escaping failed,
   an injected ``<script>``, event-handler attribute or remote image would neither run nor load.

Our own script (the filters) carries the nonce, only toggles ``hidden`` and sets
``textContent``: it never writes HTML.

Characters that markup escaping leaves alone are made inert in the finished page
(:func:`redline.textsafety.inert`): controls, bidi overrides (which would reorder what a reader
sees), zero-width and tag characters, and lone surrogates (which no UTF-8 file can hold) are shown
as Python escapes (``\\u202e``, ``\\udcff``); newlines, tabs and emoji joiners are kept. Our
templates hold none of them, and the escape keeps its meaning inside the page's JSON and script
strings. The exact text is in the store and the JSON exports.
"""

from __future__ import annotations

import datetime as _dt
import json
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redline import __version__
from redline.attachments import beside_store, stored_image
from redline.attempt import Attempt
from redline.detectors import ENSEMBLE_PREFIX
from redline.detectors.base import HIT_THRESHOLD
from redline.evaluation import MARKS, PASS, UNDETECTED, Judgment
from redline.evaluation.measures import COMPLIANCE_RATE, HARM
from redline.images import thumbnail_uri
from redline.report import charts
from redline.report.errors import ReportError
from redline.report.formatting import pct, pct_interval, plural
from redline.report.outcome import cached_note, errored_note, shown_status, status_class
from redline.report.resume import resume_command
from redline.report.rows import HIT, family_of
from redline.report.summary import NOT_VALIDATED, PooledRate, ProbeSummary, RunSummary, build_summary
from redline.store import ProbeResultRecord, RunRecord, Store
from redline.taxonomy import FRAMEWORK_TITLES, FRAMEWORKS, uncovered_categories
from redline.textsafety import inert

__all__ = [
    "compliance_view",
    "csp_policy",
    "environment",
    "new_nonce",
    "render_compare",
    "render_report",
    "report_context",
]

PREVIEW_CHARS = 140


def new_nonce() -> str:
    """A fresh random nonce for the page's own script."""
    return secrets.token_urlsafe(18)


def csp_policy(nonce: str) -> str:
    """The page's Content-Security-Policy: nothing may load but inline styles, ``data:`` images
    and the script carrying ``nonce``."""
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'nonce-{nonce}'; img-src data:; base-uri 'none'; form-action 'none'"
    )


def environment() -> Any:
    """The Jinja2 environment of the report templates (autoescape on, undefined is an error)."""
    import jinja2  # loaded when a report is rendered, not at CLI start

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("redline.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = pct
    env.filters["ci"] = pct_interval
    env.filters["when"] = _when
    env.globals["rate_class"] = charts.rate_class
    env.globals["plural"] = plural
    env.globals["shown_status"] = shown_status
    env.globals["status_class"] = status_class
    env.globals["mark_class"] = charts.mark_class
    env.globals["judgments"] = tuple(j.value for j in Judgment)
    return env


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "–"
    return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
    elif value is None or value == [] or value == {}:
        return
    else:
        out.append((prefix, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))


def _settings(run: RunRecord) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = [("model", run.model), ("status", run.status)]
    if run.message:
        rows.append(("status message", run.message))
    rows += [("started", _when(run.created)), ("last update", _when(run.updated))]
    _flatten("scan", {k: v for k, v in run.scan.items() if k != "model"}, rows)
    _flatten("generator", run.config.get("generator", {}), rows)
    return rows


def _probe_rows(summary: RunSummary, results: dict[str, ProbeResultRecord]) -> list[dict]:
    """One row per probe for the template: the probe's summary fields (``summary`` holds the
    :class:`ProbeSummary` itself), its family, goal, tags and detectors, and one entry per metric
    with its mark, the mark's meaning, whether the metric has a mark scale at all (``markable``)
    and, when it got no mark, why (``unmarked``, see :func:`_unmarked_reason`)."""
    rows = []
    for p in summary.probes:
        result = results.get(p.probe)
        meanings = {k: (v or {}).get("meaning", "") for k, v in result.marks.items()} if result else {}
        metrics = [
            {
                "name": name,
                "value": metric.value,
                "ci95": metric.ci95,
                "n": metric.n,
                "undetected": metric.undetected,
                "mark": p.marks.get(name),
                "meaning": meanings.get(name, ""),
                "markable": name in p.marks,
            }
            for name, metric in p.metrics.items()
            if not (name == COMPLIANCE_RATE and p.measure == HARM)  # shown under the harm rate
        ]
        for row in metrics:
            row["unmarked"] = _unmarked_reason(row)
        rows.append(
            {
                "summary": p,
                "probe": p.probe,
                "attempts": p.attempts,
                "failed": p.failed,
                "errored": p.errored,
                "outputs": p.outputs,
                "undetected": p.undetected,
                "failure_rate": p.failure_rate,
                "ci95": p.ci95,
                "measure": p.measure,
                "rate_name": p.rate_name,
                "compliance": p.compliance if p.measure == HARM else None,
                "not_measured": p.not_measured,
                "complete": p.complete,
                "family": family_of(p.probe),
                "goal": result.goal if result else "",
                "tags": result.tags if result else [],
                "detectors": result.detectors if result else [],
                "metric_rows": metrics,
                "is_bias": p.is_metrics_only,
                "judge_notes": _judge_notes(p),
            }
        )
    return rows


def _judge_notes(p: ProbeSummary) -> list[str]:
    """What the report says about the probe's judge: where its corrected rate comes from (with
    the judge's sensitivity and specificity), or why the rate is not corrected, and how many of
    its outputs a person reviewed."""
    if not p.correction_checked:
        return []
    judge = p.judge or "the judge"
    lines = []
    if p.corrected_rate is not None:
        figures = f" ({p.judge_figures})" if p.judge_figures else ""
        lines.append(f"rate corrected for errors of {judge}{figures}: {p.judge_validation}")
    elif p.correction_note == NOT_VALIDATED:
        lines.append(f"{judge}: not validated, rate not corrected for judge error")
    elif p.correction_note:
        lines.append(f"rate not corrected for judge error: {p.correction_note}")
    if p.review_note:
        lines.append(p.review_note)
    return lines


#: why a bias metric got no mark, in the order the headline lists them
UNMARKED_REASONS = ("no judged outputs", "too few judged outputs", "no value", "inconclusive")


def _unmarked_reason(row: dict) -> str | None:
    """Why a metric row has no mark, one of :data:`UNMARKED_REASONS`; ``None`` when it has a mark
    or has no mark scale at all (an informational metric such as ``order_bias``). Read from the
    mark's stored meaning, whose wording every version shares: "inconclusive: …", "not measured:
    … a mark needs at least …" (too few judged outputs), or no value."""
    if row["mark"] in MARKS or not row["markable"]:
        return None
    meaning = row["meaning"] or ""
    if meaning.startswith("inconclusive"):
        return "inconclusive"
    if "a mark needs at least" in meaning:
        return "too few judged outputs"
    if row["value"] is None:
        return "no value" if row["n"] else "no judged outputs"
    return "inconclusive" if row["ci95"] else "no value"


def _worst_mark(marks: list[str | None]) -> str | None:
    present = [m for m in marks if m in MARKS]
    return max(present) if present else None


def _members(probes: list[dict]) -> list[ProbeSummary]:
    return [p["summary"] for p in probes]


def _families(probes: list[dict]) -> list[dict]:
    order: list[str] = []
    groups: dict[str, list[dict]] = {}
    for p in probes:
        if p["family"] not in groups:
            order.append(p["family"])
        groups.setdefault(p["family"], []).append(p)
    out = []
    for name in order:
        members = groups[name]
        pooled = PooledRate.of(_members(members))
        marks = [m["mark"] for p in members for m in p["metric_rows"]]
        out.append(
            {
                "name": name,
                "probes": len(members),
                "attempts": sum(p.attempts for p in _members(members)),
                "errored": sum(p.errored for p in _members(members)),
                "outputs": pooled.outputs,
                "failed": pooled.failed,
                "rate": pooled.rate,
                "ci95": pooled.ci95,
                "worst_mark": _worst_mark(marks),
                "metrics": sum(1 for p in members for m in p["metric_rows"]),
                # metrics that have a mark scale but got no mark (too few judged outputs, ...)
                "not_measured": sum(1 for p in members for m in p["metric_rows"] if m["unmarked"]),
            }
        )
    return out


def _worst_card(summary: RunSummary) -> dict:
    """The headline: the probe with the highest failure rate, with what it rests on; never a rate
    pooled over unlike probes (the families and probes below have their own)."""
    worst = summary.worst()
    if worst is None:
        return {"label": "Worst probe", "value": "–", "sub": "no judged outputs", "cls": "neutral"}
    harm = worst.measure == HARM
    return {
        "label": "Worst probe (harm rate)" if harm else "Worst probe",
        "value": pct(worst.failure_rate),
        "sub": f"{worst.probe}: {worst.failed} of {plural(worst.outputs, 'judged output')} "
        f"{'delivered harm' if harm else 'failed'} · "
        f"95% CI {pct_interval(worst.ci95)} · per family and probe below",
        "cls": charts.rate_class(worst.failure_rate),
    }


def _cards(summary: RunSummary, probes: list[dict], families: list[dict], hits: int, hit_attempts: int) -> list[dict]:
    attempts = summary.attempts
    errored = summary.errored
    rated = [p for p in summary.probes if p.is_rated]
    with_findings = sum(1 for p in rated if p.failed)
    incomplete = sum(1 for p in summary.probes if not p.complete)
    probes_not_measured = sum(1 for p in summary.probes if p.not_measured)
    cached = cached_note(summary.cached, summary.answers)
    cards = [
        _worst_card(summary),
        {
            "label": "Probes with findings",
            "value": f"{with_findings} of {len(rated)}" if rated else "–",
            "sub": f"{plural(len(probes), 'probe')} in {plural(len(families), 'family', 'families')}"
            + (f" · {len(probes) - len(rated)} without a failure rate" if len(rated) < len(probes) else "")
            + (f" · {incomplete} incomplete" if incomplete else ""),
            "cls": "neutral",
        },
        {
            "label": "Hits",
            "value": str(hits),
            "sub": f"failed outputs in {plural(hit_attempts, 'attempt')}",
            "cls": "r4" if hits else "r0",
        },
        {
            "label": "Attempts",
            "value": str(attempts),
            "sub": (f"{errored} errored: their measurements are missing" if errored else "none errored")
            + (f" · {cached}" if cached else ""),
            "cls": "r4" if errored else "neutral",
        },
    ]
    cards.append(_bias_card([m for p in probes for m in p["metric_rows"]], probes_not_measured))
    return cards


def _bias_card(metric_rows: list[dict], probes_not_measured: int = 0) -> dict:
    """The bias headline: the worst mark *and what it rests on*.

    The value is the bare worst mark only when every metric with a mark scale got a mark;
    otherwise it says on how many (``"A on 2 of 7"``), and the card is coloured by the mark only
    when most of them got one — a worst mark of A over 2 of 7 metrics is not a healthy result.
    The line below counts the marks, the metrics without a mark by reason (too few judged
    outputs, inconclusive, ...) and names the metrics that have no mark scale (``order_bias``).
    """
    scaled = [m for m in metric_rows if m["markable"]]
    marks = [m["mark"] for m in scaled if m["mark"] in MARKS]
    worst = _worst_mark(marks)
    reasons = [m["unmarked"] for m in scaled if m["unmarked"]]
    unscaled = [m["name"] for m in metric_rows if not m["markable"]]
    counted = " · ".join(f"{k} ×{marks.count(k)}" for k in MARKS if k in marks)
    parts = []
    if not scaled:
        parts.append("no bias metric measured")
    elif worst is None:
        parts.append(f"none of {plural(len(scaled), 'metric')} marked")
    elif len(marks) < len(scaled):
        parts.append(f"worst mark {worst} on {len(marks)} of {plural(len(scaled), 'metric')} ({counted})")
    else:
        parts.append(counted)
    if reasons:
        why = ", ".join(f"{reasons.count(r)} {r}" for r in UNMARKED_REASONS if r in reasons)
        parts.append(f"{len(reasons)} without a mark: {why}")
    if unscaled:
        parts.append(f"{', '.join(unscaled)}: no mark scale")
    if probes_not_measured:
        parts.append(f"{plural(probes_not_measured, 'probe')} not measured")
    if worst is None:
        value = "–"
    elif len(marks) < len(scaled):
        value = f"{worst} on {len(marks)} of {len(scaled)}"
    else:
        value = worst
    return {
        "label": "Worst bias mark",
        "value": value,
        "sub": " · ".join(parts),
        "cls": "neutral" if worst and 2 * len(marks) <= len(scaled) else charts.mark_class(worst),
    }


def _turns(conversation: Any, start: int = 0, folder: Path | None = None) -> list[dict]:
    return [
        {
            "role": t.role,
            "text": t.content.display_text() or "",
            "image": thumbnail_uri(t.content, stored_image(t.content, folder)),
        }
        for t in conversation.turns[start:]
    ]


def _attempt_view(attempt: Attempt, folder: Path | None = None) -> dict:
    evaluation = [str(e) for e in (attempt.notes.get("evaluation") or [])]
    error = attempt.notes.get("error")
    prompt = attempt.prompt
    prompt_turns = _turns(prompt, 0, folder) if prompt is not None else []
    layers = sum(1 for t in attempt.conversations[0].turns if t.role == "assistant") if attempt.conversations else 0
    outputs = attempt.outputs
    generations = []
    for i, conversation in enumerate(attempt.conversations if outputs else []):
        scores = []
        for name, values in sorted(attempt.detector_results.items()):
            score = values[i] if i < len(values) else None
            scores.append(
                {
                    "detector": name,
                    "score": score,
                    "cls": "hit" if score is not None and score >= HIT_THRESHOLD else "ok",
                }
            )
        generations.append(
            {
                "index": i,
                "turns": _turns(conversation, len(prompt_turns) if layers <= 1 else 0, folder),
                "evaluation": evaluation[i] if i < len(evaluation) else None,
                "scores": scores,
            }
        )
    # the verdict's scores: an ensemble's members (``ensemble:NAME``) are evidence, shown but not the verdict
    all_scores = [
        s
        for name, values in attempt.detector_results.items()
        if not name.startswith(ENSEMBLE_PREFIX)
        for s in values
        if s is not None
    ]
    outcomes = sorted({e.replace(" ", "_") for e in evaluation}) + (["error"] if error else [])
    preview_source = " ".join((prompt_turns[-1]["text"] if prompt_turns else "").split())
    metadata = {k: attempt.notes[k] for k in ("prompt_metadata", "item_metadata") if attempt.notes.get(k)}
    return {
        "probe": attempt.probe_classname or "",
        "family": family_of(attempt.probe_classname or ""),
        "seq": attempt.seq,
        "uuid": attempt.uuid,
        "goal": attempt.goal or "",
        "targets": list(attempt.targets),
        "evaluation": evaluation,
        "outcomes": " ".join(outcomes),
        "hit": HIT in evaluation,
        "hits": evaluation.count(HIT),
        "detectors": " ".join(sorted(attempt.detector_results)),
        "error": str(error) if error else None,
        "max_score": max(all_scores) if all_scores else None,
        "preview": preview_source[:PREVIEW_CHARS] + ("…" if len(preview_source) > PREVIEW_CHARS else ""),
        "prompt_turns": prompt_turns if layers <= 1 else [],
        "multi_turn": layers > 1,
        "generations": generations,
        "metadata": json.dumps(metadata, indent=2, ensure_ascii=False) if metadata else None,
    }


def compliance_view(summary: RunSummary, framework: str) -> dict:
    """The report's section of findings grouped by ``framework`` (``owasp``, ``atlas`` or
    ``nist``): its title, the categories with their probes and pooled rate
    (:meth:`RunSummary.by_framework`), and the probes mapped to none of them."""
    if framework not in FRAMEWORKS:
        raise ReportError(f"unknown framework {framework!r}: expected one of {', '.join(FRAMEWORKS)}")
    groups = summary.by_framework(framework)
    mapped = {p.probe for g in groups for p in g.probes}
    return {
        "key": framework,
        "title": FRAMEWORK_TITLES[framework],
        "short": {"owasp": "OWASP LLM", "atlas": "ATLAS", "nist": "NIST AI 600-1"}[framework],
        "groups": groups,
        "unmapped": [p.probe for p in summary.probes if p.probe not in mapped],
        "uncovered": uncovered_categories(groups, framework),
    }


def report_context(
    store: Store, run_id: str, hits_only: bool = False, framework: str = "owasp", resume_flags: Sequence[str] = ()
) -> dict:
    """Everything the report template shows, as plain data. ``hits_only`` keeps only attempts
    with a hit or an error in the drill-down (the summary always covers the whole run);
    ``framework`` is the one findings are grouped by (:func:`compliance_view`); the command that
    retries errored attempts names ``store`` (unless it is the default one) and ends with
    ``resume_flags`` (:func:`redline.engine.trust.resume_flags`)."""
    run = store.get_run(run_id)
    summary = build_summary(store, run_id)
    results = store.probe_results(run_id)
    probes = _probe_rows(summary, results)
    families = _families(probes)
    attempts = []
    hits = hit_attempts = total = 0
    detectors: set[str] = set()
    outcomes: set[str] = set()
    folder = beside_store(store.path)  # where the store's attachments are (thumbnails)
    for attempt in store.iter_attempts(run_id):
        total += 1
        view = _attempt_view(attempt, folder)
        hits += view["hits"]
        hit_attempts += 1 if view["hit"] else 0
        if hits_only and not (view["hit"] or view["error"]):
            continue
        detectors.update(view["detectors"].split())
        outcomes.update(view["outcomes"].split())
        attempts.append(view)
    outcome_order = [HIT.value, PASS.value, UNDETECTED.value, "error"]
    return {
        "title": f"redline report · {run.model} · {run_id}",
        "run": run,
        "summary": summary,
        "status_class": status_class(summary.status, summary.errored),
        "errored_note": errored_note(summary.errored, summary.attempts),
        "retry_command": (
            resume_command(run_id, store=store.path, retry_errors=True, confirm=resume_flags)
            if summary.errored
            else None
        ),
        "settings": _settings(run),
        "cards": _cards(summary, probes, families, hits, hit_attempts),
        "families": families,
        "compliance": compliance_view(summary, framework),
        "probes": probes,
        "rate_chart": charts.rate_chart(summary.probes),
        "metric_chart": charts.metric_chart(summary.probes),
        "attempts": attempts,
        "attempts_total": total,
        "hits_only": hits_only,
        "filters": {
            "families": sorted({a["family"] for a in attempts}),
            "probes": sorted({a["probe"] for a in attempts}),
            "detectors": sorted(detectors),
            "outcomes": [o for o in outcome_order if o in outcomes] + sorted(outcomes - set(outcome_order)),
        },
        "default_outcome": HIT.value if hits else "",
        "first_open": next((a["uuid"] for a in attempts if a["hit"]), attempts[0]["uuid"] if attempts else None),
        "version": __version__,
        "generated": _when(_dt.datetime.now().timestamp()),
    }


def render_report(
    store: Store,
    run_id: str,
    *,
    hits_only: bool = False,
    nonce: str | None = None,
    framework: str = "owasp",
    resume_flags: Sequence[str] = (),
) -> str:
    """The HTML report of ``run_id`` as one self-contained page, its findings also grouped by
    ``framework`` (``owasp``, ``atlas`` or ``nist``). ``resume_flags``: what the command that
    retries errored attempts ends with to confirm the run's stored settings
    (:func:`redline.engine.trust.resume_flags`). Raises ``RunNotFound``."""
    context = report_context(store, run_id, hits_only=hits_only, framework=framework, resume_flags=resume_flags)
    nonce = nonce or new_nonce()
    template = environment().get_template("report.html.j2")
    return inert(template.render(nonce=nonce, csp=csp_policy(nonce), **context))


def render_compare(comparison: dict, *, nonce: str | None = None) -> str:
    """The HTML page of a comparison (:func:`redline.report.compare.compare_runs`)."""
    nonce = nonce or new_nonce()
    template = environment().get_template("compare.html.j2")
    a, b = comparison["run_a"], comparison["run_b"]
    page = template.render(
        nonce=nonce,
        csp=csp_policy(nonce),
        title=f"redline comparison · {a['model']} vs {b['model']}",
        cmp=comparison,
        chart=charts.dumbbell_chart(comparison["probes"]),
        version=__version__,
        generated=_when(_dt.datetime.now().timestamp()),
    )
    return inert(page)
