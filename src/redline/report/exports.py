"""Exports of a stored run, each an iterator of text chunks (written to a file or stdout).

* :func:`export_json` — the run summary (:func:`~redline.report.summary.run_summary`), exactly
  what ``redline show --json`` prints.
* :func:`export_jsonl` — every attempt as one JSON line (:meth:`Attempt.as_dict`).
* :func:`export_csv` — one row per output, for pandas and spreadsheets (see :data:`CSV_FIELDS`).
* :func:`export_markdown` — a summary for a pull-request comment.
* :func:`export_hitlog` — one JSON line per failed output.
* :func:`export_lve` — LVE instances (``instances/*.jsonl`` lines) for a run of LVEs.
* ``junit`` and ``sarif`` — each probe judged against a release gate, for CI
  (:mod:`redline.report.junit`, :mod:`redline.report.sarif`).

Model outputs are hostile data. The CSV guards against formula injection (OWASP "CSV
Injection": a cell starting with ``= + - @``, tab or carriage return is prefixed with ``'``).
The Markdown never puts model text in Markdown: prompts and outputs go inside fenced code blocks
whose fence is longer than any run of backticks in the text, so no image, link or HTML in them
is rendered.

Control characters, bidi overrides and lone surrogates (:mod:`redline.textsafety`), per format.
Every format is valid UTF-8 and safe to print on a terminal, whether written to a file or stdout:

* JSON formats (``jsonl``, ``hitlog``, ``garak``, ``lve``; ``json`` is plain ASCII) are
  **lossless**: such characters are written as JSON ``\\uXXXX`` escapes
  (:func:`redline.textsafety.dumps`), which any JSON reader turns back into the very same text,
  a lone surrogate included.
* ``csv`` and ``md`` are read by people (a spreadsheet, a Markdown viewer) and are **made inert**
  (:func:`redline.textsafety.inert`): ESC, carriage returns, other controls, bidi overrides,
  zero-width and tag characters and lone surrogates are shown as Python escapes (``\\x1b``,
  ``\\u202e``, ``\\udcff``); newlines, tabs and emoji joiners are kept. The exact text is in the
  JSON formats and the store.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from redline import __version__
from redline.evaluation import PASS
from redline.evaluation.measures import COMPLIANCE_RATE, HARM
from redline.report.errors import ReportError
from redline.report.formatting import pct, pct_interval, plural
from redline.report.garak import export_garak
from redline.report.junit import export_junit
from redline.report.outcome import cached_note, errored_note
from redline.report.resume import resume_command
from redline.report.rows import HIT, OutputRow, attempt_rows, detector_names, iter_output_rows
from redline.report.sarif import export_sarif
from redline.report.summary import NOT_VALIDATED, ProbeSummary, RunSummary, build_summary
from redline.report.verdicts import Gate
from redline.store import Store
from redline.taxonomy import FRAMEWORK_TITLES, FRAMEWORKS, uncovered_categories
from redline.textsafety import dumps, inert

__all__ = [
    "CSV_FIELDS",
    "FORMATS",
    "csv_safe",
    "export",
    "export_csv",
    "export_hitlog",
    "export_json",
    "export_jsonl",
    "export_lve",
    "export_markdown",
    "md_code_block",
    "md_inline",
]

CSV_FIELDS = ("run_id", "probe", "seq", "generation", "prompt", "output", "evaluation", "error")
"""The fixed CSV columns; one column per detector (its name, e.g. ``refusal.Compliance``) is
inserted before ``evaluation``."""

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """``value`` made safe for a spreadsheet: a string is made inert (controls, bidi overrides and
    lone surrogates shown as escapes, :func:`~redline.textsafety.inert`) and, when it starts with a
    formula character, gets a leading ``'``; other values are returned unchanged."""
    if not isinstance(value, str):
        return value
    value = inert(value)
    return "'" + value if value.startswith(_FORMULA_START) else value


def export_json(store: Store, run_id: str) -> Iterator[str]:
    """The run summary JSON, as ``redline show --json`` prints it."""
    yield json.dumps(build_summary(store, run_id).as_dict(), indent=2) + "\n"


def export_jsonl(store: Store, run_id: str) -> Iterator[str]:
    """Every stored attempt (errored ones included) as a JSON line, in (probe, seq) order."""
    store.get_run(run_id)
    for data in store.iter_attempt_dicts(run_id):
        yield dumps(data) + "\n"


def export_csv(store: Store, run_id: str) -> Iterator[str]:
    """A flat table: :data:`CSV_FIELDS` with one score column per detector, one row per output
    (an errored attempt is one row with an empty generation and its error)."""
    store.get_run(run_id)
    detectors = detector_names(store, run_id)
    fields = list(CSV_FIELDS[:6]) + detectors + list(CSV_FIELDS[6:])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, quoting=csv.QUOTE_MINIMAL)
    writer.writeheader()
    for row in iter_output_rows(store, run_id):
        record: dict[str, Any] = {
            "run_id": row.run_id,
            "probe": row.probe,
            "seq": row.seq,
            "generation": "" if row.generation is None else row.generation,
            "prompt": row.prompt,
            "output": "" if row.output is None else row.output,
            "evaluation": row.evaluation or "",
            "error": row.error or "",
        }
        for name in detectors:
            score = row.scores.get(name)
            record[name] = "" if score is None else score
        writer.writerow({k: csv_safe(v) for k, v in record.items()})
        if buffer.tell() > 65536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _hit_record(row: OutputRow, model: str) -> dict:
    return {
        "run_id": row.run_id,
        "model": model,
        "probe": row.probe,
        "seq": row.seq,
        "generation": row.generation,
        "uuid": row.uuid,
        "prompt": row.prompt,
        "output": row.output,
        "detector_results": row.scores,
        "evaluation": row.evaluation,
        "goal": row.goal,
        "targets": row.targets,
    }


def export_hitlog(store: Store, run_id: str) -> Iterator[str]:
    """One JSON line per failed output: run, model, probe, seq, generation, uuid, prompt,
    output, detector scores, evaluation, goal and targets."""
    model = store.get_run(run_id).model
    for row in iter_output_rows(store, run_id):
        if row.is_hit:
            yield dumps(_hit_record(row, model)) + "\n"


# -- Markdown -------------------------------------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_\[\]!|<>&~])")


def md_inline(text: Any) -> str:
    """``text`` as inert inline Markdown, never at the start of a line: one line, with every
    character that opens emphasis, code, links, images, HTML, tables or strikethrough escaped,
    and URLs broken (``:\\/\\/``, ``www\\.``) so that GitHub does not autolink them."""
    flat = " ".join(str(text).split())
    escaped = _MD_SPECIAL.sub(r"\\\1", flat)
    return escaped.replace("://", r":\/\/").replace("www.", r"www\.")


def md_code_block(text: str, limit: int | None = None) -> str:
    """``text`` (truncated to ``limit`` characters) in a fenced code block that nothing inside
    can close: the fence is one backtick longer than the longest backtick run (at least 3)."""
    body = text.replace("\r\n", "\n").replace("\r", "\n")
    if limit is not None and len(body) > limit:
        body = body[:limit] + f"… [{len(text) - limit} more characters]"
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def _md_categories(probes: Iterable[ProbeSummary]) -> list[str]:
    """The Markdown table of failure rates per category, for the probes whose items have two
    categories or more (no lines when none has)."""
    rows = []
    for p in probes:
        for category, rate in p.category_breakdown.items():
            undetected = f" ({rate.undetected} undetected)" if rate.undetected else ""
            rows.append(
                f"| {md_inline(p.probe)} | {md_inline(category)} | {rate.failed} | {rate.outputs}{undetected} | "
                f"{pct(rate.failure_rate)} | {pct_interval(rate.ci95)} |"
            )
    if not rows:
        return []
    return [
        "",
        "### Failure rate by category",
        "",
        "| Probe | Category | Failed | Judged | Failure rate | 95% CI |",
        "|---|---|---:|---:|---:|---:|",
        *rows,
    ]


def _md_framework(summary: RunSummary, framework: str) -> list[str]:
    """The Markdown section of findings grouped by ``framework`` (``owasp``, ``atlas``, ``nist``):
    one row per category the run's probes are mapped to, with those probes and their rates."""
    if framework not in FRAMEWORKS:
        raise ReportError(f"unknown framework {framework!r}: expected one of {', '.join(FRAMEWORKS)}")
    lines = ["", f"### By {md_inline(FRAMEWORK_TITLES[framework])}", ""]
    groups = summary.by_framework(framework)
    if not groups:
        return [*lines, f"No probe of this run is mapped to {md_inline(FRAMEWORK_TITLES[framework])}."]
    lines += [
        "| Category | Probes (failure rate) | Failed | Judged | Failure rate | 95% CI |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for group in groups:
        pooled = group.pooled
        members = "<br>".join(
            md_inline(f"{p.probe} {pct(p.failure_rate)}" + (f" ({p.failed}/{p.outputs})" if p.is_rated else ""))
            for p in group.probes
        )
        judged = pooled.outputs if pooled.rate is not None else "–"
        failed = pooled.failed if pooled.rate is not None else "–"
        lines.append(
            f"| {md_inline(group.name)} ({md_inline(group.tag)}) | {members} | {failed} | {judged} | "
            f"{pct(pooled.rate)} | {pct_interval(pooled.ci95)} |"
        )
    uncovered = uncovered_categories(groups, framework)
    if uncovered:
        lines += ["", "Not covered by this run's probes: " + "; ".join(md_inline(name) for name in uncovered)]
    mapped = {p.probe for g in groups for p in g.probes}
    unmapped = [p.probe for p in summary.probes if p.probe not in mapped]
    if unmapped:
        lines += ["", "Not mapped: " + ", ".join(md_inline(name) for name in unmapped)]
    return lines


def export_markdown(
    store: Store,
    run_id: str,
    top_hits: int = 5,
    limit: int = 400,
    framework: str = "owasp",
    resume_flags: Sequence[str] = (),
) -> Iterator[str]:
    """A Markdown summary: a probe table (failure rates, intervals, bias metrics and marks), the
    findings grouped by ``framework`` (``owasp``, ``atlas`` or ``nist``: :func:`_md_framework`)
    and the first ``top_hits`` hits with prompt and output truncated to ``limit`` characters. The
    command that retries errored attempts ends with ``resume_flags``
    (:func:`redline.engine.trust.resume_flags`)."""
    summary = build_summary(store, run_id)
    probes = summary.probes
    pooled = summary.pooled()
    errored = summary.errored
    cached = cached_note(summary.cached, summary.answers)
    lines = [
        f"## redline report: {md_inline(summary.model)}",
        "",
        f"Run {md_inline(summary.run_id)} · status {md_inline(summary.shown_status)} · "
        f"{plural(len(probes), 'probe')} · {plural(summary.attempts, 'attempt')}"
        + (f" · {errored} errored" if errored else "")
        + (f" · {cached}" if cached else ""),
        "",
    ]
    if errored:
        reasons = "; ".join(f"{r.count}× {md_inline(r.reason)}" for r in summary.error_reasons)
        lines += [
            f"**{md_inline(errored_note(errored, summary.attempts))}: their measurements are missing from every "
            f"rate below.** Commonest reasons: {reasons}. Ask the model again for them: "
            f"{md_inline(resume_command(summary.run_id, store=store.path, retry_errors=True, confirm=resume_flags))}",
            "",
        ]
    worst = summary.worst()
    if worst is not None:
        rated = [p for p in probes if p.is_rated]
        harm = worst.measure == HARM
        lines += [
            f"**Worst probe: {md_inline(worst.probe)}, {worst.failed} of "
            f"{plural(worst.outputs, 'judged output')} {'delivered harm' if harm else 'failed'} "
            f"({'harm rate ' if harm else ''}{pct(worst.failure_rate)}, 95% CI "
            f"{pct_interval(worst.ci95)}); {sum(1 for p in rated if p.failed)} of {plural(len(rated), 'rated probe')} "
            "with findings.**",
            "",
        ]
    any_harm = any(p.measure == HARM for p in probes)
    lines += [
        f"| Probe | Attempts | Failed | {'Harm or failure rate' if any_harm else 'Failure rate'} | 95% CI | Errored | Metrics and marks |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for p in probes:
        extra = []
        if p.measure == HARM:
            compliance = p.compliance
            complied = (
                f"; complied {pct(compliance.value)} (95% CI {pct_interval(compliance.ci95)}, n={compliance.n})"
                if compliance is not None and compliance.value is not None
                else ""
            )
            extra.append(md_inline(f"harm rate: answers that deliver what was asked for{complied}"))
        for name, metric in p.metrics.items():
            if name == COMPLIANCE_RATE and p.measure == HARM:
                continue
            value, ci = metric.value, metric.ci95
            mark = p.marks.get(name)
            shown = "not measured" if value is None else f"{value:+.2f}"
            why = []
            if value is not None:
                if ci:
                    why.append(f"95% CI {ci[0]:+.2f} to {ci[1]:+.2f}")
                why.append(f"n={metric.n}")
                if not mark:
                    why.append("no mark: too few judged outputs")
            if metric.undetected:
                why.append(f"{metric.undetected} undetected")
            shown += f" ({', '.join(why)})" if why else ""
            extra.append(md_inline(f"{name} {shown}") + (f" **{md_inline(mark)}**" if mark else ""))
        if p.undetected and not p.metrics:
            u = p.undetected
            extra.append(
                md_inline(
                    f"{plural(u, 'output')} undetected (no verdict" + (", left out of the rate)" if p.is_rated else ")")
                )
            )
        if p.not_measured:
            extra.append(md_inline(f"not measured: {p.not_measured}"))
        if p.corrected_rate is not None:
            extra.append(
                md_inline(
                    f"corrected for judge error: {pct(p.corrected_rate)} (95% CI {pct_interval(p.corrected_ci95)}; "
                    f"{p.judge_validation})"
                )
            )
        elif p.correction_note == NOT_VALIDATED:
            extra.append(md_inline(f"{p.judge}: not validated (rate not corrected for judge error)"))
        elif p.correction_note:
            extra.append(md_inline(f"not corrected for judge error: {p.correction_note}"))
        if p.review_note:
            extra.append(md_inline(p.review_note))
        if not p.complete and not p.is_rated and p.outputs:
            extra.append("not finished: no failure rate or metrics yet")
        name = md_inline(p.probe) + ("" if p.complete else " (incomplete)")
        lines.append(
            f"| {name} | {p.attempts} | {p.failed if p.is_rated else '–'} | "
            f"{pct(p.failure_rate)} | {pct_interval(p.ci95)} | {p.errored} | {'<br>'.join(extra)} |"
        )
    lines += _md_categories(probes)
    lines += _md_framework(summary, framework)
    hits = []
    for attempt in store.iter_attempts(run_id):
        for row in attempt_rows(attempt, run_id):
            if row.is_hit:
                hits.append(row)
        if len(hits) >= top_hits:
            break
    total_hits = pooled.failed
    if hits and top_hits > 0:
        lines += ["", f"### First {min(top_hits, len(hits))} of {plural(total_hits, 'hit')}", ""]
        for row in hits[:top_hits]:
            scores = ", ".join(f"{md_inline(k)} {v:.2f}" for k, v in row.scores.items() if v is not None)
            lines += [
                f"**{md_inline(row.probe)}** attempt {row.seq}, generation {row.generation}"
                + (f" · {scores}" if scores else ""),
                "",
                "Prompt:",
                "",
                md_code_block(row.prompt, limit),
                "",
                "Output:",
                "",
                md_code_block(row.output or "", limit),
                "",
            ]
    lines += [
        "",
        f"<sub>redline {md_inline(__version__)} · full details: redline report {md_inline(run_id)} --html FILE</sub>",
        "",
    ]
    yield inert("\n".join(lines))  # model names and texts: controls and bidi overrides shown as escapes


# -- LVE instances --------------------------------------------------------------------------------
def export_lve(store: Store, run_id: str, author: str = "") -> Iterator[str]:
    """LVE instances, one JSON line per output of every LVE attempt: ``test_path``, ``args``
    (prompt parameters, plus ``model_args`` when recorded), ``response``, ``passed`` (the
    checker's verdict, else the evaluation), ``author`` and ``run_info``.

    Works from ``attempt.notes["lve"] = {"test_path", "args", ["responses"], ["passed"], ...}``;
    outputs that were neither checked nor judged pass/fail are left out. Raises
    :class:`ReportError` when the run has no LVE attempts."""
    run = store.get_run(run_id)
    stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(run.created))
    found = False
    for attempt in store.iter_attempts(run_id):
        info = attempt.notes.get("lve")
        if not isinstance(info, dict) or "test_path" not in info:
            continue
        found = True
        if attempt.notes.get("error"):
            continue
        responses = info.get("responses")
        verdicts = info.get("passed")
        evaluation = attempt.notes.get("evaluation") or []
        args = {**(info.get("model_args") or {}), **(info.get("args") or {})}
        for i, message in enumerate(attempt.outputs):
            if isinstance(verdicts, list) and i < len(verdicts) and isinstance(verdicts[i], bool):
                passed = verdicts[i]
            elif i < len(evaluation) and evaluation[i] in (PASS, HIT):
                passed = evaluation[i] == PASS
            else:
                continue
            response = responses[i] if isinstance(responses, list) and i < len(responses) else message.text
            instance = {
                "test_path": info["test_path"],
                "args": args,
                "response": response,
                "run_info": {
                    "redline": __version__,
                    "model": run.model,
                    "run_id": run_id,
                    "probe": attempt.probe_classname,
                    "seq": attempt.seq,
                    "generation": i,
                    "checker": info.get("checker"),
                    "timestamp": stamp,
                },
                "passed": passed,
                "author": author,
            }
            yield dumps(instance) + "\n"
    if not found:
        raise ReportError(f"run {run_id} has no LVE attempts (scan with --lve PATH to run LVEs)")


FORMATS = ("json", "jsonl", "csv", "md", "hitlog", "garak", "lve", "junit", "sarif")
"""The formats :func:`export` knows."""


def export(
    store: Store,
    run_id: str,
    fmt: str,
    framework: str = "owasp",
    gate: Gate | None = None,
    artifact: str | None = None,
    resume_flags: Sequence[str] = (),
) -> Iterator[str]:
    """The export of ``run_id`` in ``fmt`` (one of :data:`FORMATS`) as text chunks; ``md`` groups
    findings by ``framework`` (``owasp``, ``atlas`` or ``nist``) and ends its retry command with
    ``resume_flags``; ``junit`` and ``sarif`` judge
    each probe against ``gate`` and ``sarif`` locates its results at ``artifact``. Raises
    :class:`ReportError` for an unknown format or framework and ``RunNotFound`` for an unknown
    run — all before the first chunk is produced, so nothing partial is written."""
    if fmt not in FORMATS:
        raise ReportError(f"unknown export format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if framework not in FRAMEWORKS:
        raise ReportError(f"unknown framework {framework!r}: expected one of {', '.join(FRAMEWORKS)}")
    store.get_run(run_id)
    if fmt == "md":
        return export_markdown(store, run_id, framework=framework, resume_flags=resume_flags)
    if fmt == "garak":
        chunks: Iterable[str] = export_garak(store, run_id)
    elif fmt == "lve":
        chunks = _checked_lve(store, run_id)
    elif fmt == "junit":
        chunks = export_junit(store, run_id, gate)
    elif fmt == "sarif":
        chunks = export_sarif(store, run_id, gate, artifact)
    else:
        chunks = {
            "json": export_json,
            "jsonl": export_jsonl,
            "csv": export_csv,
            "md": export_markdown,
            "hitlog": export_hitlog,
        }[fmt](store, run_id)
    return iter(chunks)


def _checked_lve(store: Store, run_id: str) -> Iterator[str]:
    """:func:`export_lve`, with the "no LVE attempts" error raised before anything is yielded."""
    lines = list(export_lve(store, run_id))
    return iter(lines)
