"""The run summary for a terminal: the table (one row per probe), its legend, rates by category,
reviews, notes, the judges, example failures and the ``next:`` commands, printed on a rich console."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from redline.evaluation.measures import COMPLIANCE_RATE, FAILURE, HARM
from redline.report.formatting import pct, pct_interval, plural
from redline.report.outcome import cached_note, errored_note
from redline.report.resume import resume_command, store_args
from redline.report.rows import OutputRow, attempt_rows
from redline.report.summary import NOT_VALIDATED, ProbeSummary, RunSummary
from redline.report.tally import ReviewTally
from redline.store import RUN_INTERRUPTED, Store
from redline.textsafety import visible

__all__ = [
    "CORRECTED_LEGEND",
    "HARM_LEGEND",
    "LEGEND",
    "example_failures",
    "excerpt",
    "print_run_summary",
    "print_summary_table",
    "review_line",
]


def print_run_summary(
    console: Console,
    summary: RunSummary,
    *,
    reviews: ReviewTally | None = None,
    failures: Mapping[str, list[OutputRow]] | None = None,
    examples: int = 0,
    store: str | None = None,
    resume_flags: Sequence[str] = (),
) -> None:
    """Print ``summary`` on ``console``: the table, a legend of its columns, the rates by
    category, the errored attempts (how many, the commonest reasons, the command that retries
    them), the outputs answered from the cache, the reviews (``reviews``, when outputs were
    reviewed), notes (other metrics and
    marks, outputs left undetected, why a probe was not measured), the judges, up to ``examples``
    example failures per probe (``failures``: probe → rows, see :func:`example_failures`), and
    ``next:`` lines with the commands to go further.

    Args:
        store: the ``--store`` value the printed commands repeat; ``None`` for the default store.
        resume_flags: what the printed ``scan --resume`` commands end with to confirm the run's
            settings (``--trust-settings``, ``--trust-code``).
    """
    print_summary_table(console, summary)
    _print_legend(console, summary)
    _print_errors(console, summary, store, resume_flags)
    _print_cached(console, summary)
    _print_categories(console, summary)
    if reviews is not None and reviews.reviewed:
        _print_reviews(console, reviews)
    _print_notes(console, summary)
    _print_judges(console, summary)
    if examples > 0:
        _print_examples(console, summary, failures or {}, examples)
    _print_next(console, summary, store, examples_shown=examples > 0, resume_flags=resume_flags)


def review_line(tally: ReviewTally) -> str:
    """``Reviewed: N outputs; the judge was wrong on W (R%, 95% CI lo–hi%)``: the human labels of
    a run against the judge's verdicts (``… on W of J`` when some reviewed outputs had no
    pass/fail verdict)."""
    line = f"Reviewed: {plural(tally.reviewed, 'output')}"
    if not tally.judged:
        return line + "; none had a pass/fail verdict to compare"
    of = f" of {tally.judged}" if tally.judged != tally.reviewed else ""
    rate = f"{pct(tally.error_rate)}, 95% CI {pct_interval(tally.ci95)}"
    return f"{line}; the judge was wrong on {tally.wrong}{of} ({rate})"


def _print_reviews(console: Console, tally: ReviewTally) -> None:
    console.print(review_line(tally), markup=False, highlight=False)


def _no_mark(probe: ProbeSummary, metric: str) -> str:
    """``, no mark (reason)`` for a measured metric that got no mark."""
    reason = probe.mark_notes.get(metric) or ""
    return f", no mark ({reason.removeprefix('not measured: ')})" if reason else ", no mark"


def _notes(probe: ProbeSummary) -> list[str]:
    """What the table cannot say about ``probe``, one line each: its other metrics with their
    95% interval and mark, outputs left undetected, why it was not measured, that it is
    incomplete."""
    lines = []
    for name, metric in probe.metrics.items():
        if name == COMPLIANCE_RATE:  # a column of the table
            continue
        value, ci = metric.value, metric.ci95
        shown = "not measured" if value is None else f"{value:+.2f}" + (f" ({ci[0]:+.2f}…{ci[1]:+.2f})" if ci else "")
        mark = probe.marks.get(name)
        lines.append(
            f"{name} {shown}"
            + (f", mark {mark}" if mark else _no_mark(probe, name) if value is not None and probe.marks else "")
            + (f", {plural(metric.undetected, 'output')} undetected" if metric.undetected else "")
        )
    if probe.undetected and not probe.metrics:
        lines.append(f"{plural(probe.undetected, 'output')} undetected (left out of the rate)")
    if probe.not_measured:
        lines.append(f"not measured: {probe.not_measured}")
    if not probe.complete:
        lines.append("incomplete: the run stopped before this probe finished; counts are what was stored")
    lines += _correction_notes(probe)
    return lines


def _correction_notes(probe: ProbeSummary) -> list[str]:
    """What is particular to this probe about its correction for judge error: a rate corrected
    from reviews of the run (the judge's validation is said once per judge by
    :func:`_print_judges`), why a rate is not corrected (other than "not validated"), and the
    reviewed outputs."""
    lines = []
    if probe.corrected_by_reviews:
        figures = probe.judge_figures
        lines.append(f"corrected with {probe.judge_validation}" + (f": judge {figures}" if figures else ""))
    elif probe.corrected_rate is None and probe.correction_note and probe.correction_note != NOT_VALIDATED:
        lines.append(f"not corrected for judge error: {probe.correction_note}")
    if probe.review_note:
        lines.append(probe.review_note)
    return lines


def _with_interval(rate: float, ci: tuple[float, float] | None, narrow: bool, tight: bool = False) -> str:
    """A rate and its interval: ``12.5% (5.0–20.0%)`` on one line, or the interval on a line of
    its own when ``narrow`` (without the parentheses when ``tight``)."""
    if not ci:
        return pct(rate)
    if tight:
        return pct(rate) + "\n" + pct_interval(ci)
    return pct(rate) + ("\n" if narrow else " ") + f"({pct_interval(ci)})"


def _rate_cell(probe: ProbeSummary, narrow: bool, tight: bool = False) -> str:
    if probe.not_measured and not probe.attempts:
        return "not measured"
    if probe.is_metrics_only:
        return "see notes"
    if probe.failure_rate is None:
        return "-"
    return _with_interval(probe.failure_rate, probe.ci95, narrow, tight)


def _compliance_cell(probe: ProbeSummary, narrow: bool, tight: bool = False) -> str:
    compliance = probe.compliance
    if compliance is None or compliance.value is None:
        return "-"
    return _with_interval(compliance.value, compliance.ci95, narrow, tight)


def _rate_header(summary: RunSummary) -> str:
    """What the rate column holds: ``failure rate``, ``harm rate`` (every rated probe a harm
    probe) or ``harm / failure rate`` (a row with a ``complied`` rate has a harm rate)."""
    measures = {p.measure for p in summary.probes if p.is_rated} or {FAILURE}
    if measures == {HARM}:
        return "harm rate"
    return "harm / failure rate" if HARM in measures else "failure rate"


def _has_compliance(summary: RunSummary) -> bool:
    """Whether a probe of ``summary`` is a harm probe with a compliance rate (the table then has
    a ``complied`` column)."""
    return any(p.compliance is not None for p in summary.probes)


def _corrected_cell(probe: ProbeSummary, narrow: bool, tight: bool = False) -> str:
    if probe.corrected_rate is None:
        return "-"
    return _with_interval(probe.corrected_rate, probe.corrected_ci95, narrow, tight)


def _summary_table(summary: RunSummary, narrow: bool, fold: bool, tight: bool = False) -> Table:
    """The table of ``summary``: on one line per probe, or ``narrow`` (two-line headers, the
    interval under the rate); with ``fold``, the probe column breaks a name too long for the
    console over several lines (never cuts it). ``tight`` (for a narrow table with a
    ``corrected`` column, the rates corrected for judge error): one space between columns and
    intervals without parentheses, so that probe names of up to 32 characters fit in 80 columns."""
    corrected = _has_corrected(summary)
    tight = tight and narrow
    # names come from models, LVE files and servers: shown literally (Text, visible), never as markup
    table = Table(
        title=Text(
            visible(f"run {summary.run_id} · model {summary.model} · {summary.shown_status}").replace("\n", "\\n")
        ),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0 if tight else 1, 0, 0),
    )
    table.add_column("probe", no_wrap=not fold, overflow="fold")
    table.add_column("attempts", justify="right", no_wrap=True)
    table.add_column("model\nfailed" if narrow else "model failed", justify="right", no_wrap=True)
    rate = _rate_header(summary)
    narrow_rate = rate.replace(" / failure ", " /\nfailure\n")  # no wider than its values
    table.add_column(f"{narrow_rate}\n(95% CI)" if narrow else f"{rate} (95% CI)", justify="right", no_wrap=True)
    if corrected:
        table.add_column("corrected\n(95% CI)" if narrow else "corrected (95% CI)", justify="right", no_wrap=True)
    complied = _has_compliance(summary)
    if complied:
        table.add_column("complied\n(95% CI)" if narrow else "complied (95% CI)", justify="right", no_wrap=True)
    table.add_column("errored", justify="right", no_wrap=True)
    for p in summary.probes:
        table.add_row(
            Text(visible(p.probe) + ("" if p.complete else ("\n(incomplete)" if narrow else " (incomplete)"))),
            str(p.attempts),
            "-" if p.is_metrics_only or (p.not_measured and not p.attempts) else str(p.failed),
            _rate_cell(p, narrow, tight),
            *([_corrected_cell(p, narrow, tight)] if corrected else []),
            *([_compliance_cell(p, narrow, tight)] if complied else []),
            str(p.errored),
        )
    return table


def _has_corrected(summary: RunSummary) -> bool:
    """Whether a probe of ``summary`` has a rate corrected for judge error (the table then has a
    ``corrected`` column)."""
    return any(p.corrected_rate is not None for p in summary.probes)


def print_summary_table(console: Console, summary: RunSummary) -> None:
    """The summary table, as wide as it needs on one line per probe when the console allows,
    else narrow, else (with a ``corrected`` column) tight, else with long probe names folded:
    never with a name cut short."""
    width = console.width
    unbounded = console.options.update_width(10_000)  # the width the table wants, not the one it gets
    layouts = [(False, False, False), (True, False, False)]
    if _has_corrected(summary) or _has_compliance(summary):  # more columns: tighter before a name is folded
        layouts.append((True, False, True))
    layouts.append((True, True, layouts[-1][2]))
    for narrow, fold, tight in layouts:
        table = _summary_table(summary, narrow, fold, tight)
        if fold or Measurement.get(console, unbounded, table).maximum <= width:
            break
    console.print(table)


LEGEND = (
    "model failed: outputs where the attack worked · failure rate: model failed / judged outputs · "
    "errored: request failed · undetected: output not judged (both left out of the rate)"
)
"""The legend printed under the summary table."""

CORRECTED_LEGEND = (
    "corrected: the failure rate corrected for the judge's measured errors, its interval "
    "counting the judge's uncertainty too (see judges)"
)
"""Added to the legend when the table has a ``corrected`` column."""


HARM_LEGEND = (
    "harm rate (harmful-request probes, the rows with a complied rate): outputs that deliver what "
    "the request asked for / judged outputs · complied: outputs that answered instead of refusing / "
    "judged outputs (the compliance judge's verdict; not counted as failures)"
)
"""Added to the legend when the table has a ``complied`` column."""


def _print_legend(console: Console, summary: RunSummary | None = None) -> None:
    legend = LEGEND + (" · " + CORRECTED_LEGEND if summary is not None and _has_corrected(summary) else "")
    legend += " · " + HARM_LEGEND if summary is not None and _has_compliance(summary) else ""
    console.print(legend, style="dim", markup=False, highlight=False)


#: The line of :func:`_print_judges` for a judge without validation.
JUDGE_NOT_VALIDATED = "not validated: its failure rates are not corrected"


def _judge_lines(summary: RunSummary) -> dict[str, list[str]]:
    """Per judge of the run (the one detector whose verdicts a probe's rate counts), what its
    rates are corrected with: each validation used (``sensitivity …, specificity … (source)``),
    "not validated" when a probe's rate could not be corrected for want of one, and that reviews
    corrected the rest."""
    found: dict[str, list[str]] = {}
    for p in summary.probes:
        if not p.correction_checked or not p.judge:
            continue
        lines = found.setdefault(p.judge, [])
        if p.corrected_rate is not None and not p.corrected_by_reviews:
            line = f"{p.judge_figures} ({p.judge_validation})" if p.judge_figures else str(p.judge_validation)
        elif p.correction_note == NOT_VALIDATED:
            line = JUDGE_NOT_VALIDATED
        elif p.corrected_by_reviews:
            line = "rates corrected with reviews of this run (see notes)"
        else:
            continue
        if line not in lines:
            lines.append(line)
    return {judge: lines for judge, lines in found.items() if lines}


def _print_judges(console: Console, summary: RunSummary) -> None:
    """The judges of the run, one per line, with the validation that corrects their rates or
    "not validated" (then how to validate one); nothing when no probe records its judge."""
    judges = _judge_lines(summary)
    if not judges:
        return
    console.print()
    console.print("judges (what the corrected rates rest on):", markup=False, highlight=False)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for judge, lines in judges.items():
        for i, line in enumerate(lines):
            grid.add_row(Text("  " + visible(judge) if i == 0 else ""), Text(visible(line)))
    console.print(grid)
    if not any(JUDGE_NOT_VALIDATED in lines for lines in judges.values()):
        return
    console.print(
        "  (see 'redline detectors validate --help' and 'redline review --help')",
        style="dim",
        markup=False,
        highlight=False,
    )


def _print_categories(console: Console, summary: RunSummary) -> None:
    """Per probe whose items have two categories or more, the failure rate of each category
    (model failed / judged outputs, with its 95% interval; undetected outputs when there are
    some); nothing when no probe has categories."""
    probes = [p for p in summary.probes if p.category_breakdown]
    if not probes:
        return
    console.print()
    console.print(
        "by category (model failed / judged outputs, the probe's rate, 95% CI):", markup=False, highlight=False
    )
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(no_wrap=True)
    for p in probes:
        for i, (category, rate) in enumerate(p.category_breakdown.items()):
            rate_text = (
                _with_interval(rate.failure_rate, rate.ci95, narrow=False) if rate.failure_rate is not None else "-"
            )
            grid.add_row(
                Text("  " + visible(p.probe) if i == 0 else ""),
                Text(visible(category)),
                f"{rate.failed}/{rate.outputs}",
                rate_text,
                f"{rate.undetected} undetected" if rate.undetected else "",
            )
    console.print(grid)


#: How many reasons the terminal prints for errored attempts (the JSON keeps more).
SHOWN_REASONS = 3


def _print_errors(console: Console, summary: RunSummary, store: str | None, flags: Sequence[str] = ()) -> None:
    """When attempts errored: how many (their outputs are missing from every rate), the commonest
    reasons with their counts, and the command that retries them; nothing when none did."""
    if not summary.errored:
        return
    console.print()
    console.print(
        Text(
            f"{summary.shown_status}: {errored_note(summary.errored, summary.attempts)}; "
            "their measurements are missing from every rate above",
            style="bold",
        ),
        highlight=False,
    )
    reasons = summary.error_reasons[:SHOWN_REASONS]
    if reasons:
        console.print("commonest reasons:", markup=False, highlight=False)
        for r in reasons:
            console.print(Text(f"  {r.count}× {visible(r.reason)}"), highlight=False)
        rest = summary.errored - sum(r.count for r in reasons)
        if rest > 0:
            console.print(f"  {plural(rest, 'more attempt')} with other reasons", markup=False, highlight=False)
    console.print("ask the model again for them:", markup=False, highlight=False)
    retry = resume_command(summary.run_id, store=store, retry_errors=True, confirm=flags)
    console.print("  " + retry, markup=False, highlight=False, soft_wrap=True)


def _print_cached(console: Console, summary: RunSummary) -> None:
    """``12 of 76 outputs answered from the cache``, when any was (``--no-cache`` asks the model
    again)."""
    note = cached_note(summary.cached, summary.answers)
    if note:
        console.print()
        console.print(f"{note} (a scan with --no-cache asks the model again)", markup=False, highlight=False)


def _print_notes(console: Console, summary: RunSummary) -> None:
    """A probe per line with what the table cannot say (:func:`_notes`); nothing when no probe
    has any."""
    rows = [(p.probe, _notes(p)) for p in summary.probes]
    rows = [(name, lines) for name, lines in rows if lines]
    if not rows:
        return
    marked = any(p.metrics for p in summary.probes)
    console.print()
    console.print(
        "notes (metrics with their 95% CI; marks from A, healthy, to D, catastrophic):" if marked else "notes:",
        markup=False,
        highlight=False,
    )
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for name, lines in rows:
        for i, line in enumerate(lines):
            grid.add_row(Text("  " + visible(name) if i == 0 else ""), Text(visible(line)))
    console.print(grid)


def example_failures(store: Store, run_id: str, probe: str, limit: int) -> list[OutputRow]:
    """Up to ``limit`` outputs of ``probe`` in run ``run_id`` that were judged
    :data:`~redline.evaluation.FAIL` (the model failed), in (seq, generation) order, read from
    the stored attempts (errored attempts have no outputs and are skipped)."""
    found: list[OutputRow] = []
    if limit <= 0:
        return found
    for attempt in store.iter_attempts(run_id, probe, errored=False):
        for row in attempt_rows(attempt, run_id):
            if row.is_hit:
                found.append(row)
                if len(found) >= limit:
                    return found
    return found


def _clip(line: str, width: int) -> str:
    """``line`` cut to ``width`` terminal cells, ending in ``…`` when it was cut."""
    if cell_len(line) <= width:
        return line
    kept, used = [], 0
    for ch in line:
        size = cell_len(ch)
        if used + size > width - 1:
            break
        kept.append(ch)
        used += size
    return "".join(kept) + "…"


def excerpt(text: str | None, max_lines: int, width: int) -> list[str]:
    """``text`` (a prompt or a model output) as at most ``max_lines`` lines of at most ``width``
    cells, neutralised by :func:`visible`, followed by ``… (N more lines)`` when lines were left
    out; ``["(no output)"]`` for ``None``, ``["(empty)"]`` for blank text."""
    if text is None:
        return ["(no output)"]
    lines = visible(text.strip("\n")).split("\n")
    if not "".join(lines).strip():
        return ["(empty)"]
    shown = [_clip(line, width) for line in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"… ({plural(len(lines) - max_lines, 'more line')})")
    return shown


def _print_examples(console: Console, summary: RunSummary, failures: Mapping[str, list[OutputRow]], limit: int) -> None:
    """Up to ``limit`` example failures per probe (``failures``: probe → rows): the prompt and the
    output, shortened and with control characters shown as escapes (:func:`excerpt`)."""
    console.print()
    console.print(
        f"example failures (up to {limit} per probe; text shortened, control characters shown as escapes)",
        markup=False,
        highlight=False,
    )
    if not any(failures.values()):
        console.print("  no output was judged a failure", markup=False, highlight=False)
        return
    width = max((console.width or 80) - 12, 20)
    for p in summary.probes:
        rows = failures.get(p.probe) or []
        if not rows:
            continue
        console.print()
        console.print(
            Text(f"{visible(p.probe)}: {_shown_failures(len(rows), p.failed)}", style="bold"),
            highlight=False,
        )
        for row in rows:
            where = f"attempt {row.seq}" + (
                f", output {row.generation + 1}" if summary.generations > 1 and row.generation is not None else ""
            )
            console.print(Text(f"  {where}"), highlight=False)
            for label, text, lines in (("prompt", row.prompt, 3), ("output", row.output, 6)):
                for i, line in enumerate(excerpt(text, lines, width)):
                    console.print(Text(f"    {label + ':' if i == 0 else '':7} {line}"), highlight=False)


def _shown_failures(shown: int, failed: int) -> str:
    """What an example heading lists: ``showing 2 of the 3 outputs that failed``, or ``the 2
    outputs that failed`` when every one is shown."""
    if shown >= failed:
        return "the output that failed" if failed == 1 else f"the {failed} outputs that failed"
    return f"showing {shown} of the {plural(failed, 'output')} that failed"


def _print_next(
    console: Console, summary: RunSummary, store: str | None, examples_shown: bool, resume_flags: Sequence[str] = ()
) -> None:
    """The ``next:`` steps, each a line saying what it gives and, indented under it, the exact
    command: write this run's HTML report; see example failures (unless they were just shown, or
    nothing failed); finish an interrupted run (with ``--retry-errors`` when attempts errored).
    ``--store STORE`` is added when ``store`` is given and not the default store. A command is
    printed whole on one line, never wrapped by redline."""
    run, where = summary.run_id, store_args(store)
    report = ["redline", "report", run, "--html", "report.html", *where]
    steps = [("write the HTML report (every prompt and output):", shlex.join(report))]
    if not examples_shown and any(p.failed and not p.is_metrics_only for p in summary.probes):
        steps.append(("see example failures here:", shlex.join(["redline", "show", run, "--examples", "3", *where])))
    if summary.status == RUN_INTERRUPTED:  # errored attempts are retried with the rest (see errors above)
        resume = resume_command(run, store=store, retry_errors=summary.errored > 0, confirm=resume_flags)
        steps.append(("finish the interrupted run:", resume))
    console.print()
    for i, (what, command) in enumerate(steps):
        console.print(("next: " if i == 0 else "") + what, markup=False, highlight=False)
        console.print("  " + command, markup=False, highlight=False, soft_wrap=True)
