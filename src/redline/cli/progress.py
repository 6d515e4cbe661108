"""A scan's progress on stderr: a rich progress bar on a terminal, :class:`Heartbeat` lines in a log."""

from __future__ import annotations

import math
import os
import threading
import time as _time
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from redline.errors import UsageError
from redline.generators.transport.ratelimit import LimiterStatus
from redline.report.formatting import plural

__all__ = [
    "DEFAULT_HEARTBEAT",
    "HEARTBEAT_ENV",
    "Heartbeat",
    "RateColumn",
    "clock_text",
    "heartbeat_interval",
    "limiter_note",
    "progress_bar",
]


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


def limiter_note(status: LimiterStatus | None) -> str:
    """What a remote model's rate limiter says for a progress line: the requests it has answered
    per second lately, and ``provider limiting`` while the provider refuses requests for the rate
    (``"96.4 req/s, provider limiting"``); empty before any answer or refusal, or without a limiter."""
    if status is None or (status.answered <= 0 and not status.limited):
        return ""
    note = f"{_rate_text(status.answered)} req/s"
    return f"{note}, provider limiting" if status.limited else note


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
        progress: 120/400 attempts (30%), 4.1 att/s, ETA 1:08, 96.4 req/s, provider limiting
        progress: 400/400 attempts (100%) in 1:38, 4.1 att/s           the end, finished
        progress: stopped at 120/400 attempts (30%) after 0:30         the end, stopped early

    The rate counts the attempts finished since :meth:`start` (stored ones excluded), the ETA
    assumes the rest go at that rate, and the percentage is rounded down (100% only when done).
    While attempts run, :attr:`note` (when set: a remote model's :func:`limiter_note`) ends the
    line when it has something to say.
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
        #: Says more about the rate (:func:`limiter_note`); called on the heartbeat's thread.
        self.note: Callable[[], str] | None = None

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
            note = self.note() if self.note is not None else ""
            note = f", {note}" if note else ""
            if finished <= 0:
                waiting = f"waiting for the first to finish ({clock_text(elapsed)} elapsed)"
                return f"progress: {self._counts()}, {waiting}{note}"
            rate = finished / elapsed
            eta = max(self.total - self.done, 0) / rate
            return f"progress: {self._counts()}, {_rate_text(rate)} att/s, ETA {clock_text(eta)}{note}"

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


class RateColumn(ProgressColumn):
    """Attempts per second since this scan started, and the ETA at that rate (rich's own
    estimate over-reacts to a local model, whose batches finish together).

    Reads the task's ``started`` field (``time.monotonic()`` when attempts began), ``initial``
    (attempts already stored then) and ``note`` (when set: a function that says more about the
    rate, :func:`limiter_note`)."""

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
        note = task.fields.get("note")
        said = note() if note is not None else ""
        return Text(f"{rate:.2f} att/s  ETA {clock_text(remaining)}" + (f"  {said}" if said else ""))


def progress_bar(console: Console, shown: bool) -> Progress:
    """The scan's progress bar on ``console``: a spinner, the description, the bar, done/total,
    :class:`RateColumn` and the elapsed time when ``shown``; disabled (draws nothing) otherwise."""
    columns: list[Any] = [TextColumn("{task.description}")]
    if shown:  # the other columns (the spinner loads rich's emoji table) only where the bar is drawn
        columns = [SpinnerColumn(), *columns, BarColumn(), MofNCompleteColumn(), RateColumn(), TimeElapsedColumn()]
    return Progress(*columns, console=console, disable=not shown, transient=False)
