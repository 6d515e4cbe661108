"""Running a scan from the command line: its progress on stderr, Ctrl-C, and the exit status."""

from __future__ import annotations

import contextlib
import os
import sys
import time as _time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape

from redline.cli.common import err_console, open_store, report_exception
from redline.cli.progress import Heartbeat, heartbeat_interval, limiter_note, progress_bar
from redline.engine import scan
from redline.engine.budget import Budget
from redline.engine.executors import ExecutorConfig
from redline.engine.ray_executor import import_ray
from redline.engine.trust import UntrustedRun
from redline.eventloop import run_async
from redline.generators import Generator
from redline.generators.transport.http import NotServed
from redline.report.formatting import plural
from redline.report.resume import resume_command
from redline.store import RunLocked, RunNotFound, StoreDamaged
from redline.textsafety import visible

__all__ = ["INTERRUPTED_EXIT_CODE", "PROCESS_IS_OURS", "exit_interrupted", "run_scan"]

INTERRUPTED_EXIT_CODE = 130
#: Set by the console script (``redline``, ``python -m redline``), never when ``main(args)`` is
#: called inside another program: an interrupted scan may then end the process at once.
PROCESS_IS_OURS = {"value": False}


def exit_interrupted() -> None:
    """Leave after Ctrl-C, once the store is closed (every finished attempt committed): exit 130.

    With a local model loaded, the console script ends the process at once (``os._exit``)
    instead of running the interpreter's teardown of torch and its threads: nothing is left to
    save."""
    if PROCESS_IS_OURS["value"] and "torch" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED_EXIT_CODE)
    raise SystemExit(INTERRUPTED_EXIT_CODE) from None


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
    resume_flags: Sequence[str] = (),
    trust_settings: bool = False,
    trust_code: bool = False,
) -> str:
    """Run a scan, showing its progress on stderr; returns the run id. On Ctrl-C, prints how to
    resume and exits 130.

    ``executor`` says where the attempts run (:class:`~redline.engine.executors.ExecutorConfig`;
    ``None``: in this process). Ray is checked for before the store is opened: without it, an
    :class:`~redline.engine.executors.ExecutorUnavailable` with the install command, and no run.

    On a terminal (or with ``REDLINE_PROGRESS=1``) the progress is a bar. Otherwise (a CI log, a
    file), unless ``quiet``, it is a :class:`Heartbeat` line every ``heartbeat`` seconds and one
    at the end; ``heartbeat`` defaults to :func:`heartbeat_interval` (``$REDLINE_HEARTBEAT``,
    else :data:`~redline.cli.progress.DEFAULT_HEARTBEAT`), and 0 turns the lines off.
    ``generator`` is the model under test instead of the one ``config.model`` names (the Python
    API, tests). ``budget`` (``--budget-usd``,
    ``--max-requests``) may stop the run before the end: ``budget.stopped`` then says so.
    ``resume_flags`` end the ``redline scan --resume`` command the hints print (what confirms the
    run's settings, e.g. ``--trust-settings``); ``trust_settings`` and ``trust_code`` are the
    resumed run's confirmation (:func:`~redline.engine.scan`)."""
    interval = heartbeat_interval() if heartbeat is None else heartbeat
    if executor is not None and executor.kind == "ray":
        import_ray()  # the one-line install hint now, before a run is created
    store = open_store(store_path, must_exist=resume is not None)
    state: dict[str, Any] = {"run_id": resume, "task": None}
    shown = err_console.is_terminal or os.environ.get("REDLINE_PROGRESS") == "1"
    progress = progress_bar(err_console, shown)
    # the model spec as typed, made printable (visible) for the log and literal (escape) for the bar
    model_name = visible(config.model if config and config.model else "model")
    beat = (
        Heartbeat(lambda line: err_console.print(line, markup=False, highlight=False), interval, model=model_name)
        if progress.disable and not quiet and interval > 0
        else None
    )

    def on_generator(model: Generator) -> None:
        """A remote model's rate limiter says more on the progress line (:func:`limiter_note`)."""
        status = getattr(getattr(model, "limiter", None), "status", None)
        if status is None:
            return
        state["note"] = lambda: limiter_note(status())
        if beat is not None:
            beat.note = state["note"]

    def on_progress(event: str, done: int, total: int) -> None:
        if event == "loading":
            state["task"] = progress.add_task(f"starting {escape(model_name)}", total=None)
        elif event == "start":
            if beat is not None:
                beat.start(done, total)
            started = _time.monotonic()
            if state["task"] is not None:
                progress.reset(
                    state["task"],
                    description="scanning",
                    total=total,
                    completed=done,
                    started=started,
                    initial=done,
                    note=state.get("note"),
                )
            else:
                state["task"] = progress.add_task(
                    "scanning", total=total, completed=done, started=started, initial=done, note=state.get("note")
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
                    on_generator=on_generator,
                    trust_settings=trust_settings,
                    trust_code=trust_code,
                )
            )
    except KeyboardInterrupt:
        if state["run_id"]:
            err_console.print(
                f"interrupted: finished attempts are stored; continue with "
                f"'{resume_command(state['run_id'], store=store_path, confirm=resume_flags)}'",
                markup=False,
                highlight=False,
            )
        else:
            err_console.print("interrupted")
        store.close()
        exit_interrupted()
    except Exception as exc:
        code = report_exception(exc)
        # not for a run that is not in the store, is being scanned by another process, is not confirmed,
        # a model or URL the endpoint does not serve (resuming as stored cannot help), or a damaged store
        if state["run_id"] and not isinstance(exc, (RunNotFound, RunLocked, StoreDamaged, UntrustedRun, NotServed)):
            err_console.print(
                f"the run can be continued with '{resume_command(state['run_id'], store=store_path, confirm=resume_flags)}'",
                markup=False,
                highlight=False,
            )
        raise SystemExit(code) from None
    finally:
        store.close()
    return state["run_id"]
