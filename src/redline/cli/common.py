"""What every command shares: the consoles, the default store, exit statuses and error reporting,
the run summary with its release gate, and the plugin and run listings."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import traceback
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from redline.detectors import detectors as detector_registry
from redline.engine.trust import resume_flags
from redline.errors import RedlineError, UsageError
from redline.generators import generators as generator_registry
from redline.generators.transport.secrets import mask_url
from redline.probes import probes as probe_registry
from redline.report.outcome import errored_note, shown_status
from redline.report.resume import DEFAULT_STORE, resume_command, store_args
from redline.report.summary import build_summary, gate_outcome
from redline.report.tally import ReviewTally
from redline.report.terminal import example_failures, print_run_summary
from redline.store import DamagedRun, RunListing, Store
from redline.textsafety import visible

__all__ = [
    "DEFAULT_STORE",
    "EXIT_INTERNAL_ERROR",
    "ERRORED_EXIT_CODE",
    "EXIT_USER_ERROR",
    "GATE_EXIT_CODE",
    "err_console",
    "open_store",
    "out_console",
    "print_plugins",
    "print_runs",
    "print_summary",
    "report_exception",
    "resume_flags",
]

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


def open_store(path: Path, must_exist: bool = False) -> Store:
    """The store at ``path``; with ``must_exist``, a :class:`~redline.errors.UsageError` when
    there is no file there (a command that reads runs, not one that makes them)."""
    if must_exist and not Path(path).exists():
        raise UsageError(f"no store at {path} (run 'redline scan' first, or pass --store PATH)")
    return Store(path)


#: Exit status of a command whose release gate (``--fail-above``, ``--fail-mark``) failed.
GATE_EXIT_CODE = 3
#: Exit status of ``scan`` and ``show`` for a run whose attempts errored (measurements missing),
#: when no gate failed: not a clean result, and a gate on it could not be decided.
ERRORED_EXIT_CODE = 5


def print_summary(
    store_path: Path,
    run_id: str,
    as_json: bool,
    fail_above: float | None = None,
    fail_mark: str | None = None,
    *,
    examples: int = 0,
    errors_exit: bool = False,
) -> None:
    """Print a run's summary and apply a release gate.

    With ``as_json``: the summary JSON on stdout and nothing else there (``examples`` is then
    ignored). Otherwise, on stdout: the table (one row per probe), a legend of its columns, notes
    (other metrics and marks, outputs left undetected, why a probe was not measured), up to
    ``examples`` example failures per probe, and ``next:`` lines with the commands to go further
    (``--store`` included when ``store_path`` is not the default store).

    With a gate (``fail_above`` / ``fail_mark``) print each violation on stderr and exit with
    :data:`GATE_EXIT_CODE` when there is one. Otherwise, with ``errors_exit``, a run whose
    attempts errored exits with :data:`ERRORED_EXIT_CODE` (one line on stderr says why), also
    when the gate could not be decided because a probe's attempts errored and none was judged."""
    with open_store(store_path, must_exist=True) as store:
        summary = build_summary(store, run_id)
        failures = (
            {p.probe: example_failures(store, run_id, p.probe, examples) for p in summary.probes if p.failed}
            if examples > 0 and not as_json
            else {}
        )
        reviews = ReviewTally.of(store.reviews(run_id)) if not as_json else None
        flags = resume_flags(store, run_id)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), indent=2) + "\n")
    else:
        print_run_summary(
            out_console,
            summary,
            reviews=reviews,
            failures=failures,
            examples=examples,
            store=str(store_path) if store_args(store_path) else None,
            resume_flags=flags,
        )
    failed, undecided = gate_outcome(summary, fail_above, fail_mark)
    for problem in failed:
        err_console.print(f"gate failed: {visible(problem)}", markup=False, highlight=False)
    for problem in undecided:
        err_console.print(
            f"gate {'failed' if failed else 'undecided'}: {visible(problem)}", markup=False, highlight=False
        )
    if failed or (undecided and not errors_exit):
        raise typer.Exit(GATE_EXIT_CODE)
    gated = fail_above is not None or fail_mark is not None
    if errors_exit and summary.errored:
        err_console.print(
            f"{'gate undecided' if gated else summary.shown_status}: "
            f"{errored_note(summary.errored, summary.attempts)} (exit {ERRORED_EXIT_CODE}; "
            f"retry them with '{resume_command(run_id, store=store_path, retry_errors=True, confirm=flags)}')",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(ERRORED_EXIT_CODE)
    if gated:
        err_console.print("gate passed", markup=False, highlight=False)


def print_plugins(kind: str, as_json: bool) -> None:
    """List the installed plugins of ``kind`` (``probes``, ``detectors``, ``generators``): a table
    on stdout, or JSON with ``as_json``; a plugin that fails to load is listed with the error."""
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
    """List the runs in the store at ``store_path``: a table on stdout, or JSON with ``as_json``.

    A damaged run row is listed as damaged (its id and what is wrong) and the others as usual;
    then one ``error:`` line on stderr counts the damaged rows and the exit status is
    :data:`EXIT_USER_ERROR`.
    """
    with open_store(store_path, must_exist=True) as store:
        runs = store.list_runs()
    if as_json:
        sys.stdout.write(json.dumps([r.as_dict() for r in runs], indent=2) + "\n")
    else:
        out_console.print(_runs_table(store_path, runs))
    damaged = [r for r in runs if isinstance(r, DamagedRun)]
    if damaged:
        err_console.print(f"error: {visible(_damaged_runs_line(store_path, damaged))}", markup=False, highlight=False)
        raise typer.Exit(EXIT_USER_ERROR)


def _runs_table(store_path: Path, runs: list[RunListing | DamagedRun]) -> Table:
    """The table of ``redline runs``: one row per run, a damaged one with what is wrong as its status."""
    table = Table(title=escape(f"runs in {store_path}"))
    for col in ("run", "created", "model", "status", "attempts", "failed", "errored"):
        table.add_column(col)
    for r in runs:
        if isinstance(r, DamagedRun):
            damage = Text(visible(f"damaged ({r.problem})"), style="red")
            table.add_row(Text(visible(r.run_id)), "", "", damage, "", "", "")
            continue
        created = dt.datetime.fromtimestamp(r.created).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(
            r.run_id,
            created,
            Text(visible(r.model)),
            shown_status(r.status, r.errored),
            str(r.attempts),
            str(r.failed),
            str(r.errored),
        )
    return table


def _damaged_runs_line(store_path: Path, damaged: list[DamagedRun]) -> str:
    """The one line that says which runs of the store at ``store_path`` are damaged."""
    if len(damaged) == 1:
        (run,) = damaged
        return f"store {store_path}: run {run.run_id!r} is damaged ({run.problem}); it was not written by redline"
    first = damaged[0].run_id
    return (
        f"store {store_path}: {len(damaged)} runs are damaged (run {first!r} and {len(damaged) - 1} more, "
        "listed as damaged); they were not written by redline"
    )
