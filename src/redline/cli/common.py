"""Shared CLI helpers: consoles, the scan's progress (a bar on a terminal, heartbeat lines in a
log), the summary table with its legend, notes, example failures and next steps, error reporting."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import shlex
import sys
import threading
import time as _time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from redline.detectors import detectors as detector_registry
from redline.engine import scan
from redline.engine.budget import Budget
from redline.engine.executors import ExecutorConfig
from redline.engine.ray_executor import import_ray
from redline.engine.shard_worker import prefork
from redline.errors import RedlineError, UsageError
from redline.eventloop import run_async
from redline.generators import Generator
from redline.generators import generators as generator_registry
from redline.generators.transport.secrets import mask_url
from redline.probes import probes as probe_registry
from redline.report.formatting import pct, pct_interval, plural
from redline.report.rows import OutputRow, attempt_rows
from redline.report.summary import NOT_VALIDATED, ProbeSummary, RunSummary, build_summary, gate_violations
from redline.report.tally import ReviewTally
from redline.store import RUN_INTERRUPTED, RunLocked, RunNotFound, Store, StoreDamaged
from redline.textsafety import visible

__all__ = [
    "DEFAULT_STORE",
    "EXIT_INTERNAL_ERROR",
    "EXIT_USER_ERROR",
    "HEARTBEAT_ENV",
    "Heartbeat",
    "err_console",
    "heartbeat_interval",
    "out_console",
    "print_summary",
    "report_exception",
    "run_scan",
    "visible",
]

#: The store the commands use when neither ``--store`` nor ``$REDLINE_STORE`` names one.
DEFAULT_STORE = "redline.db"

# emoji=False: a spec such as "rest:x:" or "ollama:smile:latest" must print as written. A table
# piped to a file or a CI log is 160 columns wide, unless $COLUMNS says otherwise.
out_console = Console(
    highlight=False,
    emoji=False,
    width=None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 160,
)
err_console = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)


#: Exit status of a command that stopped on an expected error (see :func:`report_exception`).
EXIT_USER_ERROR = 1
#: Exit status of a command that stopped on a bug in redline (``EX_SOFTWARE`` of sysexits.h).
EXIT_INTERNAL_ERROR = 70


def report_exception(exc: BaseException) -> int:
    """Print ``exc`` on stderr and return the exit status for it; the decision is by type.

    - :class:`~redline.errors.RedlineError` (raised on purpose: a bad option, file or name, a
      model or classifier that cannot be used) and :class:`OSError` (a file the system refused):
      one line ``error: MESSAGE`` (the first line of the message), :data:`EXIT_USER_ERROR`.
    - Anything else is a bug in redline: ``error: internal error TYPE: MESSAGE (set
      REDLINE_DEBUG=1 for the traceback)``, :data:`EXIT_INTERNAL_ERROR`.

    The message is printed through :func:`visible` with URL passwords masked: it may quote what an
    endpoint answered. With ``REDLINE_DEBUG`` set, the traceback is printed first in both cases.
    """
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    # an error may quote an endpoint's answer or a URL: escapes shown, never sent to the terminal
    message = visible(mask_url(message))
    if os.environ.get("REDLINE_DEBUG"):
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, (RedlineError, OSError)):
        err_console.print(f"error: {message}", markup=False, highlight=False)
        return EXIT_USER_ERROR
    err_console.print(
        f"error: internal error {type(exc).__name__}: {message} (set REDLINE_DEBUG=1 for the traceback)",
        markup=False,
        highlight=False,
    )
    return EXIT_INTERNAL_ERROR


def clock_text(seconds: float) -> str:
    """A duration as a clock: ``M:SS`` below an hour, ``H:MM:SS`` from one (whole seconds,
    rounded down; a negative duration reads as 0:00)."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


#: Environment variable: seconds between two progress lines when stderr is not a terminal.
HEARTBEAT_ENV = "REDLINE_HEARTBEAT"
#: Seconds between two progress lines when :data:`HEARTBEAT_ENV` is not set.
DEFAULT_HEARTBEAT = 10.0


def heartbeat_interval(environ: Mapping[str, str] | None = None) -> float:
    """The seconds between two heartbeat lines: ``$REDLINE_HEARTBEAT`` (``environ`` instead of
    ``os.environ`` when given), :data:`DEFAULT_HEARTBEAT` when it is unset or empty; 0 means no
    heartbeat. Raises :class:`~redline.errors.UsageError` for anything but a finite number ≥ 0."""
    raw = (os.environ if environ is None else environ).get(HEARTBEAT_ENV, "").strip()
    if not raw:
        return DEFAULT_HEARTBEAT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise UsageError(f"{HEARTBEAT_ENV} must be a number of seconds (0 turns progress lines off), not {raw!r}")
    return seconds


def _rate_text(rate: float) -> str:
    """Attempts per second with as many decimals as a person needs (``1982``, ``4.1``, ``0.05``)."""
    return f"{rate:.0f}" if rate >= 100 else f"{rate:.1f}" if rate >= 1 else f"{rate:.2f}"


class Heartbeat:
    """A scan's progress as plain lines, for a log or a file where a progress bar cannot draw.

    Used as a context manager around the scan: on entering, a daemon thread starts and writes
    :meth:`line` through ``write`` every ``interval`` seconds (measured by the thread's waits,
    never by ``clock``); on leaving, the thread is stopped and joined, then :meth:`end_line` is
    written once, if attempts had started. The scan reports through :meth:`start` (``done`` of
    ``total`` attempts already stored; called again when the total changes) and :meth:`advance`
    (one more finished). ``clock`` (seconds, monotonic) dates the start, the rate and the ETA;
    tests pass a fake one. The methods may be called from any thread.

    Lines, with the noun in the singular when ``total`` is 1::

        progress: starting MODEL (0:10 elapsed)                        before start()
        progress: 0/400 attempts (0%), waiting for the first to finish (0:10 elapsed)
        progress: 120/400 attempts (30%), 4.1 att/s, ETA 1:08
        progress: 400/400 attempts (100%) in 1:38, 4.1 att/s           the end, finished
        progress: stopped at 120/400 attempts (30%) after 0:30         the end, stopped early

    The rate counts the attempts finished since :meth:`start` (stored ones excluded), the ETA
    assumes the rest go at that rate, and the percentage is rounded down (100% only when done).
    """

    def __init__(
        self,
        write: Callable[[str], None],
        interval: float,
        *,
        model: str = "model",
        clock: Callable[[], float] = _time.monotonic,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"a heartbeat needs an interval > 0 seconds, not {interval!r}")
        self.interval = interval
        self._write = write
        self._model = model
        self._clock = clock
        self._lock = threading.Lock()
        self._began = clock()
        self._since: float | None = None  # when start() was last called
        self.done = 0
        self.total = 0
        self._initial = 0  # done at start(): attempts stored before this process
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, done: int, total: int) -> None:
        """Attempts begin (again, when the total changed): ``done`` of ``total`` are stored."""
        with self._lock:
            self._since = self._clock()
            self.done = self._initial = done
            self.total = total

    def advance(self, count: int = 1) -> None:
        """``count`` more attempts finished."""
        with self._lock:
            self.done += count

    def _counts(self) -> str:
        percent = self.done * 100 // self.total if self.total else 100
        return f"{self.done}/{plural(self.total, 'attempt')} ({percent}%)"

    def line(self) -> str:
        """The progress line for now (see the class)."""
        with self._lock:
            now = self._clock()
            if self._since is None:
                return f"progress: starting {self._model} ({clock_text(now - self._began)} elapsed)"
            elapsed = max(now - self._since, 1e-9)
            finished = self.done - self._initial
            if finished <= 0:
                return f"progress: {self._counts()}, waiting for the first to finish ({clock_text(elapsed)} elapsed)"
            rate = finished / elapsed
            eta = max(self.total - self.done, 0) / rate
            return f"progress: {self._counts()}, {_rate_text(rate)} att/s, ETA {clock_text(eta)}"

    def end_line(self, finished: bool) -> str | None:
        """The closing line: how far the scan got and how fast (``finished``: it ran to the
        end), or ``None`` when attempts never started (the scan stopped while starting)."""
        with self._lock:
            if self._since is None:
                return None
            elapsed = max(self._clock() - self._since, 1e-9)
            if not finished:
                return f"progress: stopped at {self._counts()} after {clock_text(elapsed)}"
            ran = self.done - self._initial
            speed = f", {_rate_text(ran / elapsed)} att/s" if ran > 0 else ""
            return f"progress: {self._counts()} in {clock_text(elapsed)}{speed}"

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self._write(self.line())

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._beat, name="redline-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        closing = self.end_line(finished=exc_type is None)
        if closing is not None:
            self._write(closing)


def open_store(path: Path, must_exist: bool = False):
    if must_exist and not Path(path).exists():
        raise UsageError(f"no store at {path} (run 'redline scan' first, or pass --store PATH)")
    return Store(path)


def run_scan(
    config: Any,
    store_path: Path,
    *,
    resume: str | None,
    retry_errors: bool,
    quiet: bool,
    heartbeat: float | None = None,
    generator: Generator | None = None,
    executor: ExecutorConfig | None = None,
    budget: Budget | None = None,
) -> str:
    """Run a scan, showing its progress on stderr; returns the run id. On Ctrl-C, prints how to
    resume and exits 130.

    ``executor`` says where the attempts run (:class:`~redline.engine.executors.ExecutorConfig`;
    ``None``: in this process). Ray is checked for before the store is opened: without it, an
    :class:`~redline.engine.executors.ExecutorUnavailable` with the install command, and no run.

    On a terminal (or with ``REDLINE_PROGRESS=1``) the progress is a bar. Otherwise (a CI log, a
    file), unless ``quiet``, it is a :class:`Heartbeat` line every ``heartbeat`` seconds and one
    at the end; ``heartbeat`` defaults to :func:`heartbeat_interval` (``$REDLINE_HEARTBEAT``,
    10 s), and 0 turns the lines off. ``generator`` is the model under test instead of the one
    ``config.model`` names (the Python API, tests). ``budget`` (``--budget-usd``,
    ``--max-requests``) may stop the run before the end: ``budget.stopped`` then says so."""
    interval = heartbeat_interval() if heartbeat is None else heartbeat
    if executor is not None and executor.kind == "ray":
        import_ray()  # the one-line install hint now, before a run is created

    class RateColumn(ProgressColumn):
        """Attempts per second since this scan started, and the ETA at that rate (rich's own
        estimate over-reacts to a local model, whose batches finish together)."""

        def render(self, task: Any) -> Text:
            started = task.fields.get("started")
            if not started or task.total is None:
                return Text("")
            done = task.completed - task.fields.get("initial", 0)
            elapsed = max(_time.monotonic() - started, 1e-6)
            rate = done / elapsed
            if done <= 0:
                return Text("- att/s  ETA -")
            remaining = (task.total - task.completed) / rate
            return Text(f"{rate:.2f} att/s  ETA {clock_text(remaining)}")

    # the console script forks the scan's worker processes now, before the store, the loop and the
    # progress thread exist (redline.engine.shards); a scan that needs none discards them
    shareable = generator is None and (budget is None or not budget.limited)
    preforked = prefork(config, executor, shareable=shareable) if PROCESS_IS_OURS["value"] and not resume else None
    try:
        store = open_store(store_path, must_exist=resume is not None)
    except BaseException:
        if preforked is not None:
            preforked.discard()
        raise
    state: dict[str, Any] = {"run_id": resume, "task": None}
    shown = err_console.is_terminal or os.environ.get("REDLINE_PROGRESS") == "1"
    columns: list[Any] = [TextColumn("{task.description}")]
    if shown:  # the bar's other columns only where it is shown (the spinner loads rich's emoji table: 2-3 ms)
        columns = [SpinnerColumn(), *columns, BarColumn(), MofNCompleteColumn(), RateColumn(), TimeElapsedColumn()]
    progress = Progress(*columns, console=err_console, disable=not shown, transient=False)
    # the model spec as typed, made printable (visible) for the log and literal (escape) for the bar
    model_name = visible(config.model if config and config.model else "model")
    beat = (
        Heartbeat(lambda line: err_console.print(line, markup=False, highlight=False), interval, model=model_name)
        if progress.disable and not quiet and interval > 0
        else None
    )

    def on_progress(event: str, done: int, total: int) -> None:
        if event == "loading":
            state["task"] = progress.add_task(f"starting {escape(model_name)}", total=None)
        elif event == "start":
            if beat is not None:
                beat.start(done, total)
            started = _time.monotonic()
            if state["task"] is not None:
                progress.reset(
                    state["task"], description="scanning", total=total, completed=done, started=started, initial=done
                )
            else:
                state["task"] = progress.add_task(
                    "scanning", total=total, completed=done, started=started, initial=done
                )
            if not progress.disable:
                return
            if not quiet:
                to_run = plural(total - done, "attempt")
                if state.get("announced"):  # a probe that cannot be measured left the total
                    err_console.print(f"scanning: {to_run} to run after leaving out probes not measured")
                else:
                    err_console.print(f"scanning: {to_run} to run ({done} of {total} already stored)")
                state["announced"] = True
        elif event == "advance":  # ``done`` more finished
            if beat is not None:
                beat.advance(done)
            progress.advance(state["task"], done)

    def on_run(run_id: str) -> None:
        state["run_id"] = run_id
        if not quiet:
            err_console.print(f"run {run_id} (store {store_path})")

    try:
        with progress, beat if beat is not None else contextlib.nullcontext():
            run_async(
                scan(
                    config,
                    store,
                    resume=resume,
                    retry_errors=retry_errors,
                    progress=on_progress,
                    generator=generator,
                    on_run=on_run,
                    executor=executor,
                    budget=budget,
                    preforked=preforked,
                )
            )
    except KeyboardInterrupt:
        if state["run_id"]:
            err_console.print(
                f"interrupted: finished attempts are stored; continue with "
                f"'redline scan --resume {state['run_id']} --store {store_path}'"
            )
        else:
            err_console.print("interrupted")
        store.close()
        exit_interrupted()
    except Exception as exc:
        code = report_exception(exc)
        # not for a run that is not in the store, is being scanned by another process, or a damaged store
        if state["run_id"] and not isinstance(exc, (RunNotFound, RunLocked, StoreDamaged)):
            err_console.print(
                f"the run can be continued with 'redline scan --resume {state['run_id']} --store {store_path}'"
            )
        raise SystemExit(code) from None
    finally:
        store.close()
        if preforked is not None:
            preforked.discard()
    return state["run_id"]


GATE_EXIT_CODE = 3
INTERRUPTED_EXIT_CODE = 130
#: Set by the console script (``redline``, ``python -m redline``), never when ``main(args)`` is
#: called inside another program: an interrupted scan may then end the process at once.
PROCESS_IS_OURS = {"value": False}


def exit_interrupted() -> None:
    """Leave after Ctrl-C, once the store is closed (every finished attempt committed): exit 130.

    With a local model loaded the interpreter's own teardown (torch and its threads) takes a
    second or more; nothing is left to save, so the console script ends at once instead."""
    if PROCESS_IS_OURS["value"] and "torch" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED_EXIT_CODE)
    raise SystemExit(INTERRUPTED_EXIT_CODE) from None


def print_summary(
    store_path: Path,
    run_id: str,
    as_json: bool,
    fail_above: float | None = None,
    fail_mark: str | None = None,
    *,
    examples: int = 0,
) -> None:
    """Print a run's summary and apply a release gate.

    With ``as_json``: the summary JSON on stdout and nothing else there (``examples`` is then
    ignored). Otherwise, on stdout: the table (one row per probe), a legend of its columns, notes
    (other metrics and marks, outputs left undetected, why a probe was not measured), up to
    ``examples`` example failures per probe, and ``next:`` lines with the commands to go further
    (``--store`` included when ``store_path`` is not the default store).

    With a gate (``fail_above`` / ``fail_mark``) print each violation on stderr and exit with
    :data:`GATE_EXIT_CODE` when there is one."""
    with open_store(store_path, must_exist=True) as store:
        summary = build_summary(store, run_id)
        failures = (
            {p.probe: example_failures(store, run_id, p.probe, examples) for p in summary.probes if p.failed}
            if examples > 0 and not as_json
            else {}
        )
        reviews = ReviewTally.of(store.reviews(run_id)) if not as_json else None
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), indent=2) + "\n")
    else:
        _print_table(summary)
        _print_legend(summary)
        _print_categories(summary)
        if reviews is not None and reviews.reviewed:
            _print_reviews(reviews)
        _print_notes(summary)
        _print_judges(summary)
        if examples > 0:
            _print_examples(summary, failures, examples)
        _print_next(summary, store_path, examples_shown=examples > 0)
    problems = gate_violations(summary, fail_above, fail_mark)
    for problem in problems:
        err_console.print(f"gate failed: {visible(problem)}", markup=False, highlight=False)
    if problems:
        raise typer.Exit(GATE_EXIT_CODE)
    if fail_above is not None or fail_mark is not None:
        err_console.print("gate passed", markup=False, highlight=False)


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


def _print_reviews(tally: ReviewTally) -> None:
    out_console.print(review_line(tally), markup=False, highlight=False)


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
        title=Text(visible(f"run {summary.run_id} · model {summary.model} · {summary.status}").replace("\n", "\\n")),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0 if tight else 1, 0, 0),
    )
    table.add_column("probe", no_wrap=not fold, overflow="fold")
    table.add_column("attempts", justify="right", no_wrap=True)
    table.add_column("model\nfailed" if narrow else "model failed", justify="right", no_wrap=True)
    table.add_column("failure rate\n(95% CI)" if narrow else "failure rate (95% CI)", justify="right", no_wrap=True)
    if corrected:
        table.add_column("corrected\n(95% CI)" if narrow else "corrected (95% CI)", justify="right", no_wrap=True)
    table.add_column("errored", justify="right", no_wrap=True)
    for p in summary.probes:
        table.add_row(
            Text(visible(p.probe) + ("" if p.complete else ("\n(incomplete)" if narrow else " (incomplete)"))),
            str(p.attempts),
            "-" if p.is_metrics_only or (p.not_measured and not p.attempts) else str(p.failed),
            _rate_cell(p, narrow, tight),
            *([_corrected_cell(p, narrow, tight)] if corrected else []),
            str(p.errored),
        )
    return table


def _has_corrected(summary: RunSummary) -> bool:
    """Whether a probe of ``summary`` has a rate corrected for judge error (the table then has a
    ``corrected`` column)."""
    return any(p.corrected_rate is not None for p in summary.probes)


def _print_table(summary: RunSummary) -> None:
    """The summary table, as wide as it needs on one line per probe when the console allows,
    else narrow, else (with a ``corrected`` column) tight, else with long probe names folded:
    never with a name cut short."""
    width = out_console.width
    unbounded = out_console.options.update_width(10_000)  # the width the table wants, not the one it gets
    layouts = [(False, False, False), (True, False, False)]
    if _has_corrected(summary):  # one more column: tighter before a name is folded
        layouts.append((True, False, True))
    layouts.append((True, True, layouts[-1][2]))
    for narrow, fold, tight in layouts:
        table = _summary_table(summary, narrow, fold, tight)
        if fold or Measurement.get(out_console, unbounded, table).maximum <= width:
            break
    out_console.print(table)


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


def _print_legend(summary: RunSummary | None = None) -> None:
    legend = LEGEND + (" · " + CORRECTED_LEGEND if summary is not None and _has_corrected(summary) else "")
    out_console.print(legend, style="dim", markup=False, highlight=False)


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


def _print_judges(summary: RunSummary) -> None:
    """The judges of the run, one per line, with the validation that corrects their rates or
    "not validated" (then how to validate one); nothing when no probe records its judge."""
    judges = _judge_lines(summary)
    if not judges:
        return
    out_console.print()
    out_console.print("judges (what the corrected rates rest on):", markup=False, highlight=False)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for judge, lines in judges.items():
        for i, line in enumerate(lines):
            grid.add_row(Text("  " + visible(judge) if i == 0 else ""), Text(visible(line)))
    out_console.print(grid)
    if not any(JUDGE_NOT_VALIDATED in lines for lines in judges.values()):
        return
    out_console.print(
        "  (see 'redline detectors validate --help' and 'redline review --help')",
        style="dim",
        markup=False,
        highlight=False,
    )


def _print_categories(summary: RunSummary) -> None:
    """Per probe whose items have two categories or more, the failure rate of each category
    (model failed / judged outputs, with its 95% interval; undetected outputs when there are
    some); nothing when no probe has categories."""
    probes = [p for p in summary.probes if p.category_breakdown]
    if not probes:
        return
    out_console.print()
    out_console.print(
        "by category (model failed / judged outputs, failure rate, 95% CI):", markup=False, highlight=False
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
    out_console.print(grid)


def _print_notes(summary: RunSummary) -> None:
    """A probe per line with what the table cannot say (:func:`_notes`); nothing when no probe
    has any."""
    rows = [(p.probe, _notes(p)) for p in summary.probes]
    rows = [(name, lines) for name, lines in rows if lines]
    if not rows:
        return
    marked = any(p.metrics for p in summary.probes)
    out_console.print()
    out_console.print(
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
    out_console.print(grid)


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


def _print_examples(summary: RunSummary, failures: Mapping[str, list[OutputRow]], limit: int) -> None:
    """Up to ``limit`` example failures per probe (``failures``: probe → rows): the prompt and the
    output, shortened and with control characters shown as escapes (:func:`excerpt`)."""
    out_console.print()
    out_console.print(
        f"example failures (up to {limit} per probe; text shortened, control characters shown as escapes)",
        markup=False,
        highlight=False,
    )
    if not any(failures.values()):
        out_console.print("  no output was judged a failure", markup=False, highlight=False)
        return
    width = max((out_console.width or 80) - 12, 20)
    for p in summary.probes:
        rows = failures.get(p.probe) or []
        if not rows:
            continue
        out_console.print()
        out_console.print(
            Text(f"{visible(p.probe)}: {len(rows)} of {plural(p.failed, 'failed output')}", style="bold"),
            highlight=False,
        )
        for row in rows:
            where = f"attempt {row.seq}" + (
                f", output {row.generation + 1}" if summary.generations > 1 and row.generation is not None else ""
            )
            out_console.print(Text(f"  {where}"), highlight=False)
            for label, text, lines in (("prompt", row.prompt, 3), ("output", row.output, 6)):
                for i, line in enumerate(excerpt(text, lines, width)):
                    out_console.print(Text(f"    {label + ':' if i == 0 else '':7} {line}"), highlight=False)


def _print_next(summary: RunSummary, store_path: Path, examples_shown: bool) -> None:
    """The ``next:`` steps, each a line saying what it gives and, indented under it, the exact
    command: write this run's HTML report; see example failures (unless they were just shown, or
    nothing failed); finish an interrupted run. ``--store PATH`` is added when the store is not
    :data:`DEFAULT_STORE`. A command is printed whole on one line, never wrapped by redline."""
    store = "" if str(store_path) == DEFAULT_STORE else f" --store {shlex.quote(str(store_path))}"
    run = shlex.quote(summary.run_id)
    steps = [("write the HTML report (every prompt and output):", f"redline report {run} --html report.html{store}")]
    if not examples_shown and any(p.failed and not p.is_metrics_only for p in summary.probes):
        steps.append(("see example failures here:", f"redline show {run} --examples 3{store}"))
    if summary.status == RUN_INTERRUPTED:
        steps.append(("finish the interrupted run:", f"redline scan --resume {run}{store}"))
    out_console.print()
    for i, (what, command) in enumerate(steps):
        out_console.print(("next: " if i == 0 else "") + what, markup=False, highlight=False)
        out_console.print("  " + command, markup=False, highlight=False, soft_wrap=True)


def print_plugins(kind: str, as_json: bool) -> None:
    registry = {"probes": probe_registry, "detectors": detector_registry}.get(kind, generator_registry)
    rows = []
    for name in registry.names():
        try:
            obj = registry.load(name)
        except Exception as exc:  # a broken third-party plugin is listed, not fatal
            rows.append({"name": name, "description": f"(failed to load: {exc})"})
            continue
        row = {
            "name": name,
            "description": (
                getattr(obj, "description", "") or (obj.__doc__ or "").strip().splitlines()[0] if obj.__doc__ else ""
            ),
        }
        if kind == "probes":
            row.update(
                goal=getattr(obj, "goal", ""),
                tags=list(getattr(obj, "tags", ())),
                detectors=list(getattr(obj, "recommended_detectors", ())),
                active=getattr(obj, "active", True),
            )
        rows.append(row)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title=kind)
    table.add_column("name", no_wrap=True)
    if kind == "probes":
        table.add_column("goal")
        table.add_column("detectors")
        table.add_column("tags")
        for r in rows:
            table.add_row(
                r["name"] + ("" if r.get("active", True) else " (inactive)"),
                r.get("goal", ""),
                ", ".join(r.get("detectors", [])),
                ", ".join(r.get("tags", [])),
            )
    else:
        table.add_column("description")
        for r in rows:
            table.add_row(r["name"], r["description"])
    out_console.print(table)


def print_runs(store_path: Path, as_json: bool) -> None:
    with open_store(store_path, must_exist=True) as store:
        runs = store.list_runs()
    if as_json:
        sys.stdout.write(json.dumps([r.as_dict() for r in runs], indent=2) + "\n")
        return

    table = Table(title=escape(f"runs in {store_path}"))
    for col in ("run", "created", "model", "status", "attempts", "failed", "errored"):
        table.add_column(col)
    for r in runs:
        created = dt.datetime.fromtimestamp(r.created).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(
            r.run_id,
            created,
            Text(visible(r.model)),
            r.status,
            str(r.attempts),
            str(r.failed),
            str(r.errored),
        )
    out_console.print(table)
