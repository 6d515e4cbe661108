"""Shared CLI helpers: consoles, the scan progress bar, summary tables, error reporting."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import sys
import time as _time
import traceback
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
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
from redline.errors import RedlineError, UsageError
from redline.generators import generators as generator_registry
from redline.probes import probes as probe_registry
from redline.report.formatting import pct, pct_interval
from redline.report.summary import ProbeSummary, RunSummary, build_summary, gate_violations
from redline.store import Store

__all__ = [
    "EXIT_INTERNAL_ERROR",
    "EXIT_USER_ERROR",
    "err_console",
    "out_console",
    "print_summary",
    "report_exception",
    "run_scan",
]

# emoji=False: a spec such as "rest:x:" or "ollama:smile:latest" must print as written.
out_console = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 160)
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

    With ``REDLINE_DEBUG`` set, the traceback is printed first in both cases.
    """
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
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


def open_store(path: Path, must_exist: bool = False):
    if must_exist and not Path(path).exists():
        raise UsageError(f"no store at {path} (run 'redline scan' first, or pass --store PATH)")
    return Store(path)


def run_scan(config: Any, store_path: Path, *, resume: str | None, retry_errors: bool, quiet: bool) -> str:
    """Run a scan with a progress bar on stderr; returns the run id. On Ctrl-C, prints how to
    resume and exits 130."""

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
            eta = f"{int(remaining // 60)}:{int(remaining % 60):02d}"
            return Text(f"{rate:.2f} att/s  ETA {eta}")

    store = open_store(store_path, must_exist=resume is not None)
    state: dict[str, Any] = {"run_id": resume, "task": None}
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=not err_console.is_terminal and os.environ.get("REDLINE_PROGRESS") != "1",
        transient=False,
    )

    def on_progress(event: str, done: int, total: int) -> None:
        if event == "loading":
            state["task"] = progress.add_task(
                f"starting {config.model if config and config.model else 'model'}", total=None
            )
        elif event == "start":
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
                if state.get("announced"):  # a probe that cannot be measured left the total
                    err_console.print(f"scanning: {total - done} attempts to run after leaving out probes not measured")
                else:
                    err_console.print(f"scanning: {total - done} attempts to run ({done} of {total} already stored)")
                state["announced"] = True
        elif event == "advance":
            progress.advance(state["task"])

    def on_run(run_id: str) -> None:
        state["run_id"] = run_id
        if not quiet:
            err_console.print(f"run {run_id} (store {store_path})")

    try:
        with progress:
            asyncio.run(
                scan(config, store, resume=resume, retry_errors=retry_errors, progress=on_progress, on_run=on_run)
            )
    except KeyboardInterrupt:
        if state["run_id"]:
            err_console.print(
                f"interrupted: finished attempts are stored; continue with "
                f"'redline scan --resume {state['run_id']} --store {store_path}'"
            )
        else:
            err_console.print("interrupted")
        raise SystemExit(130) from None
    except Exception as exc:
        code = report_exception(exc)
        if state["run_id"]:
            err_console.print(
                f"the run can be continued with 'redline scan --resume {state['run_id']} --store {store_path}'"
            )
        raise SystemExit(code) from None
    finally:
        store.close()
    return state["run_id"]


GATE_EXIT_CODE = 3


def print_summary(
    store_path: Path, run_id: str, as_json: bool, fail_above: float | None = None, fail_mark: str | None = None
) -> None:
    """Print a run's summary: JSON on stdout, or a table per probe. With a gate
    (``fail_above`` / ``fail_mark``) print each violation on stderr and exit with
    :data:`GATE_EXIT_CODE` when there is one."""
    with open_store(store_path, must_exist=True) as store:
        summary = build_summary(store, run_id)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), indent=2) + "\n")
    else:
        _print_table(summary)
    problems = gate_violations(summary, fail_above, fail_mark)
    for problem in problems:
        err_console.print(f"gate failed: {problem}", markup=False, highlight=False)
    if problems:
        raise typer.Exit(GATE_EXIT_CODE)
    if fail_above is not None or fail_mark is not None:
        err_console.print("gate passed", markup=False, highlight=False)


def _no_mark(probe: ProbeSummary, metric: str) -> str:
    """`` no mark (reason)`` for a measured metric that got no mark."""
    reason = probe.mark_notes.get(metric) or ""
    return f" no mark ({reason.removeprefix('not measured: ')})" if reason else " no mark"


def _print_table(summary: RunSummary) -> None:
    # names and reasons come from models, LVE files and servers: shown literally, never as markup
    table = Table(title=escape(f"run {summary.run_id} · model {summary.model} · {summary.status}"))
    table.add_column("probe")
    table.add_column("attempts", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("failure rate", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("errored", justify="right")
    table.add_column("metrics / marks")
    for p in summary.probes:
        extra = []
        for name, metric in p.metrics.items():
            mark = p.marks.get(name)
            value, ci = metric.value, metric.ci95
            shown = (
                "not measured" if value is None else f"{value:+.2f}" + (f" ({ci[0]:+.2f}…{ci[1]:+.2f})" if ci else "")
            )
            extra.append(
                f"{name} {shown}"
                + (f" mark {mark}" if mark else _no_mark(p, name) if value is not None and p.marks else "")
                + (f", {metric.undetected} undetected" if metric.undetected else "")
            )
        if p.undetected and not p.metrics:
            extra.append(f"{p.undetected} outputs without a verdict (undetected)")
        if p.not_measured:
            extra.append(f"not measured: {p.not_measured}")
        table.add_row(
            escape(p.probe + ("" if p.complete else " (incomplete)")),
            str(p.attempts),
            "-" if p.is_metrics_only else str(p.failed),
            pct(p.failure_rate, missing="-"),
            pct_interval(p.ci95, missing="-"),
            str(p.errored),
            escape("\n".join(extra)),
        )
    out_console.print(table)


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
            escape(r.model),
            r.status,
            str(r.attempts),
            str(r.failed),
            str(r.errored),
        )
    out_console.print(table)
