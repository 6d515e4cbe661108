"""Run LVE checkers in worker processes: untrusted checker code cannot reach the scan.

An LVE's checker is code from a shared repository: a lambda in ``test.json`` or, under
``--trust-code``, its own ``checker/checker.py``. The static checks of
:mod:`redline.lve.sandbox.safe_eval` refuse what they can see; this module is the guarantee.

* **One worker per LVE.** A worker process serves the checker of one LVE only and is never
  handed to another, so nothing a checker does to its interpreter (rebinding ``re.search``,
  filling memory, patching a module) is seen by another LVE's verdicts. Workers are forked from a
  clean server process (``forkserver``) and reused for every call of their LVE: a pool, not a
  process per call.
* **OS limits.** Each worker runs in a session (and process group) of its own, so a checker that
  signals its group stops only its worker. Its address space is limited (``memory_mb`` above what it starts
  with), each call's CPU time (``cpu_seconds``) and its wall-clock time (``timeout``); the
  reply's size is bounded. Its standard output and error go to ``/dev/null``, so a ``print()``
  in a checker cannot corrupt ``--json`` output.
* **One error, on its own instances.** A checker that crashes (even a segfault), hangs, or
  exceeds a limit raises :class:`CheckerIsolationError` for that call, with the reason; its
  worker is killed and the next call starts a fresh one. After ``strikes`` such failures on
  one LVE, its remaining calls fail at once with the last reason. Other LVEs are not affected.

Replies travel as JSON (never pickle), so a hostile worker cannot run code in the scan.

Which checkers run here: every checker whose class has ``isolated = True`` (the default of
:class:`~redline.lve.checkers.base.BaseChecker`; lambda, regex and match checkers, third-party
checkers and every custom checker). redline's own model-backed checkers (toxicity, bias, PII)
set ``isolated = False``: their code is ours, and loading their models once per LVE would cost
seconds each.

Use :func:`checker_for` (what the LVE runner, ``lve verify`` and ``scan --lve`` call) to get a
checker for an LVE; it returns an :class:`IsolatedChecker` when the class is isolated.
"""

from __future__ import annotations

import atexit
import json
import math
import multiprocessing
import os
import signal
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import spawn as mp_spawn
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from redline.errors import RedlineError

try:
    import resource  # POSIX: OS limits on a worker's memory and CPU time
except ImportError:  # pragma: no cover - Windows: the wall-clock timeout is the only bound
    resource = None  # type: ignore[assignment]
from redline.lve.checkers.registry import UnknownCheckerError, get_checker_class
from redline.lve.errors import CheckerError, CustomCodeRefused, LVEFormatError
from redline.lve.limits import CheckerLimits, configure_shared_pool, shared_pool_limits
from redline.lve.model import LVE, load_lve
from redline.lve.prompt import LVEMessage
from redline.lve.sandbox.safe_eval import LambdaLimitError

__all__ = [
    "CheckerIsolationError",
    "CheckerLimits",
    "CheckerPool",
    "CheckerUnavailable",
    "IsolatedChecker",
    "checker_for",
    "shared_pool_limits",
    "configure_shared_pool",
    "shared_pool",
]


class CheckerIsolationError(RedlineError, RuntimeError):
    """A checker failed in its worker: it raised, crashed, hung or exceeded a limit. Not a
    verdict: callers record it as an error on the instance being judged."""


class CheckerUnavailable(RedlineError, RuntimeError):
    """A checker in a worker could not load what it needs (a classifier, a NER model): the
    instance cannot be measured on this machine."""


# -- the worker process ------------------------------------------------------------------------

#: Exceptions a worker reports by kind; anything else is "raised".
_KINDS: dict[str, type[Exception]] = {
    "format": LVEFormatError,
    "refused": CustomCodeRefused,
    "checker": CheckerError,
    "limit": LambdaLimitError,
}
_UNAVAILABLE = ("ClassifierUnavailable", "PIIUnavailable", "CheckerUnavailable")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _quiet() -> None:
    """Send the worker's standard output and error to /dev/null (fds and ``sys`` streams)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the worker


def _own_session() -> None:
    """Put the worker in a session and process group of its own, so that a checker signalling its
    process group (``os.killpg(0, ...)``) reaches its own worker, not the scan."""
    try:
        os.setsid()
    except (AttributeError, OSError):  # pragma: no cover - Windows, or already a group leader
        pass


def _limit_memory(memory_mb: int) -> None:
    if resource is None:  # pragma: no cover - Windows
        return
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            start = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # not Linux: limit from zero
        start = 0
    limit = start + memory_mb * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
    except (ValueError, OSError):  # pragma: no cover - a platform that does not support it
        pass


def _limit_cpu(cpu_seconds: int) -> None:
    """Let the coming call use ``cpu_seconds`` more CPU time (SIGXCPU ends the worker after)."""
    if resource is None:  # pragma: no cover - Windows
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime) + cpu_seconds
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
    except (ValueError, OSError):  # pragma: no cover
        pass


def _error_reply(exc: BaseException) -> dict[str, Any]:
    name = type(exc).__name__
    if isinstance(exc, MemoryError):
        return {"kind": "memory", "message": "the checker exceeded its memory limit"}
    for kind, cls in _KINDS.items():
        if isinstance(exc, cls):
            return {"kind": kind, "message": str(exc)}
    if name in _UNAVAILABLE:
        return {"kind": "unavailable", "message": _first_line(exc) or name}
    detail = _first_line(exc)
    return {"kind": "raised", "message": f"the checker raised {name}" + (f": {detail}" if detail else "")}


def _serve(lve: LVE, trust_code: bool, request: tuple[Any, ...]) -> dict[str, Any]:
    op, args = request[0], request[1]
    checker = lve.checker(trust_code=trust_code, args=args)
    if op == "describe":
        return {
            "multi_run": bool(checker.multi_run),
            "postprocessing": bool(checker.postprocessing),
        }
    if op == "check":
        prompt_in, prompt_out, params = request[2:]
        safe, recorded = checker.invoke_check(prompt_in, prompt_out, params)
        return {"safe": bool(safe), "recorded": recorded}
    if op == "postprocess":
        return {"response": checker.postprocess_response(request[2])}
    raise CheckerError(f"unknown worker request {op!r}")


def _worker_main(conn: Connection, test_path: str, root: str | None, trust_code: bool, limits: CheckerLimits) -> None:
    """The loop of one worker: load the LVE, then answer requests until the pipe closes."""
    _own_session()
    _quiet()
    _limit_memory(limits.memory_mb)
    lve: LVE | None = None
    failure: dict[str, Any] | None = None
    try:
        lve = load_lve(Path(test_path), root=Path(root) if root is not None else None)
    except Exception as exc:
        failure = _error_reply(exc)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        _limit_cpu(limits.cpu_seconds)
        try:
            reply = failure if lve is None else {"ok": True, **_serve(lve, trust_code, request)}
            data = json.dumps(reply).encode()
        except BaseException as exc:  # everything a checker raises is its own error
            data = json.dumps(_error_reply(exc)).encode()
        if len(data) > limits.max_reply:
            data = json.dumps(
                {"kind": "raised", "message": f"the checker's reply is over {limits.max_reply} bytes"}
            ).encode()
        conn.send_bytes(data)


# -- the parent's side -------------------------------------------------------------------------


def _signal_name(code: int | None) -> str:
    if code is None or code >= 0:
        return f"exit status {code}"
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


_LAUNCH = threading.Lock()


@contextmanager
def _main_not_rerun() -> Iterator[None]:
    """While a worker starts: do not make it re-run the parent's ``__main__`` (the ``redline``
    script or pytest's would import the whole CLI into every worker, and a broken or hostile
    main module would be run there). The worker's target lives in this module, which the
    server has imported already."""
    original = mp_spawn.get_preparation_data

    def without_main(name: str) -> dict[str, Any]:
        data: dict[str, Any] = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    with _LAUNCH:
        mp_spawn.get_preparation_data = without_main
        try:
            yield
        finally:
            mp_spawn.get_preparation_data = original


class _Worker:
    """One worker process serving one LVE (``key``)."""

    def __init__(self, ctx: Any, key: tuple[str, bool], root: str | None, limits: CheckerLimits) -> None:
        self.key = key
        self.limits = limits
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_worker_main, args=(child, key[0], root, key[1], limits), daemon=True, name="redline-checker"
        )
        with _main_not_rerun():
            self.process.start()
        child.close()

    def call(self, request: tuple[Any, ...]) -> dict[str, Any]:
        """Send one request and wait for its reply; :class:`CheckerIsolationError` (and the
        worker killed) on a crash, a timeout or an oversized reply."""
        limits = self.limits
        try:
            self.conn.send(request)
            if not self.conn.poll(limits.timeout):
                self.kill()
                raise CheckerIsolationError(f"the checker did not answer within {limits.timeout:g} s (killed)")
            data = self.conn.recv_bytes(limits.max_reply + 1024)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise CheckerIsolationError(self._death()) from None
        except OSError:  # a reply over maxlength
            self.kill()
            raise CheckerIsolationError(f"the checker's reply is over {limits.max_reply} bytes") from None
        try:
            reply = json.loads(data)
        except ValueError:
            self.kill()
            raise CheckerIsolationError("the checker's worker sent an unreadable reply") from None
        if not isinstance(reply, dict):
            self.kill()
            raise CheckerIsolationError("the checker's worker sent an unreadable reply")
        return reply

    def _death(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        self.kill()
        if code == -signal.SIGXCPU:
            return f"the checker exceeded its CPU time limit ({self.limits.cpu_seconds} s) and was stopped"
        if code == -signal.SIGKILL:
            return "the checker's worker was killed (out of memory?)"
        return f"the checker crashed its worker ({_signal_name(code)})"

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        """Kill the process only (safe while another thread waits on its pipe: it sees EOF)."""
        if self.process.is_alive():
            self.process.kill()

    def retire(self) -> None:
        """Stop an idle worker without waiting for it (multiprocessing reaps it later)."""
        self.stop()
        self.conn.close()

    def kill(self) -> None:
        """Stop the worker and wait for it (its exit status is then known)."""
        self.stop()
        self.process.join(5)
        self.conn.close()


#: Every pool not yet closed: closed at exit, before the servers are stopped (:func:`_at_exit`).
_POOLS: weakref.WeakSet[CheckerPool] = weakref.WeakSet()
_AT_EXIT = {"registered": False}


def _at_exit() -> None:
    """At exit: close every pool not closed yet (each worker stopped and waited for)."""
    for pool in list(_POOLS):
        pool.close()


def _context() -> Any:
    if not _AT_EXIT["registered"]:
        _AT_EXIT["registered"] = True
        atexit.register(_at_exit)
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        # The server imports redline's LVE code once; each worker is a fork of it.
        ctx.set_forkserver_preload([__name__])
        return ctx
    return multiprocessing.get_context("spawn")  # pragma: no cover - Windows


class CheckerPool:
    """Worker processes for LVE checkers, at most ``limits.workers`` alive at once.

    Thread-safe: calls for different LVEs run in parallel in different workers; calls for one
    LVE reuse its idle worker (or start another one for the same LVE). When the pool is full,
    the least recently used idle worker is stopped to make room. Close it with :meth:`close`
    (or use it as a context manager).
    """

    def __init__(self, limits: CheckerLimits | None = None) -> None:
        self.limits = limits or CheckerLimits()
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []  # least recently used first
        self._busy = 0
        self._running: set[_Worker] = set()
        self._ctx: Any = None
        self._closed = False
        self._checkers: dict[tuple[str, bool, str], IsolatedChecker | RedlineError] = {}
        self._strikes: dict[tuple[str, bool], tuple[int, str]] = {}  # failures of a worker, by LVE
        self.started = 0  # workers started so far (for benchmarks and tests)
        _POOLS.add(self)

    def __enter__(self) -> CheckerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def checker(self, lve: LVE, trust_code: bool, args: dict[str, Any] | None, custom: bool) -> IsolatedChecker:
        """The :class:`IsolatedChecker` of ``lve`` for checker arguments filled from ``args``
        (one per distinct LVE, trust and arguments). A checker that cannot be built (a custom
        checker that fails to import) raises the same error again without a new worker."""
        key = (str(lve.test_path), trust_code, json.dumps(args or {}, sort_keys=True, default=str))
        with self._cond:
            found = self._checkers.get(key)
        if found is None:
            try:
                found = IsolatedChecker(self, lve, trust_code, args, custom)
            except RedlineError as exc:
                found = exc
            with self._cond:
                self._checkers[key] = found
        if isinstance(found, RedlineError):
            raise found.with_traceback(None)
        return found

    def call(self, lve: LVE, trust_code: bool, request: tuple[Any, ...]) -> dict[str, Any]:
        """Run ``request`` in a worker of ``lve``; the reply, or the error it reports raised
        here (:class:`CheckerIsolationError`, :class:`LVEFormatError`, :class:`CheckerError` …)."""
        key = (str(lve.test_path), trust_code)
        with self._cond:
            struck = self._strikes.get(key)
        if struck is not None and struck[0] >= self.limits.strikes:
            times = "once" if struck[0] == 1 else f"{struck[0]} times"
            raise CheckerIsolationError(f"not run: the checker already failed {times} on this LVE (last: {struck[1]})")
        root = str(lve.root) if lve.root is not None else None
        worker = self._acquire(key, root)
        healthy = False
        try:
            reply = worker.call(request)
            healthy = reply.get("kind") != "memory"
        except CheckerIsolationError as exc:
            self._strike(key, str(exc))
            raise
        finally:
            self._release(worker, healthy)
        if reply.get("ok"):
            return reply
        if not healthy:
            self._strike(key, str(reply.get("message")))
        raise _raised(reply)

    def _strike(self, key: tuple[str, bool], reason: str) -> None:
        with self._cond:
            count = self._strikes.get(key, (0, ""))[0] + 1
            self._strikes[key] = (count, reason)

    def _acquire(self, key: tuple[str, bool], root: str | None) -> _Worker:
        """An idle worker of ``key``, else a new one (in a free slot, or in the slot of the
        least recently used idle worker, which is stopped); waits while every slot is busy."""
        evicted: _Worker | None = None
        with self._cond:
            while True:
                if self._closed:
                    raise CheckerIsolationError("the checker pool is closed")
                mine = next((w for w in reversed(self._idle) if w.key == key), None)
                if mine is not None:
                    self._idle.remove(mine)
                    if mine.alive():
                        self._busy += 1
                        self._running.add(mine)
                        return mine
                    evicted = mine  # died while idle: a new one takes its slot
                    break
                if self._busy + len(self._idle) < self.limits.workers:
                    break
                if self._idle:
                    evicted = self._idle.pop(0)
                    break
                self._cond.wait()
            self._busy += 1
            if self._ctx is None:
                self._ctx = _context()
            ctx = self._ctx
        if evicted is not None:
            evicted.retire()
        try:
            worker = _Worker(ctx, key, root, self.limits)
        except BaseException:
            with self._cond:
                self._busy -= 1
                self._cond.notify()
            raise
        with self._cond:
            self.started += 1
            self._running.add(worker)
            closed = self._closed
        if closed:
            worker.stop()
        return worker

    def _release(self, worker: _Worker, healthy: bool) -> None:
        # A worker that just replied is alive; one that dies while idle is found by the
        # liveness check of _acquire (checking here too costs a system call per call).
        keep = healthy
        with self._cond:
            self._busy -= 1
            self._running.discard(worker)
            if keep and not self._closed:
                self._idle.append(worker)
            self._cond.notify()
        if not keep or self._closed:
            worker.retire()

    def close(self) -> None:
        """Stop every worker. A call waiting on a busy one ends at once with
        :class:`CheckerIsolationError` (how Ctrl-C stops a hung checker without waiting for its
        timeout)."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = list(self._running)
            self._cond.notify_all()
        for worker in idle:
            worker.kill()  # waited for: reaped before the forkserver that started it may exit
        for worker in busy:
            worker.stop()


def _raised(reply: dict[str, Any]) -> Exception:
    kind = reply.get("kind")
    message = str(reply.get("message") or "the checker failed")
    if kind in _KINDS:
        return _KINDS[str(kind)](message)
    if kind == "unavailable":
        return CheckerUnavailable(message)
    return CheckerIsolationError(message)


# -- the checker the runner sees ---------------------------------------------------------------


class IsolatedChecker:
    """Stands for an LVE's checker in the scanning process; every call runs in a worker.

    It has the attributes and methods callers use of a checker (``multi_run``,
    ``postprocessing``, ``custom``, :meth:`invoke_check`, :meth:`postprocess_response`) and
    raises what the worker reports: :class:`CheckerIsolationError` for a crash, hang, limit or
    exception, :class:`LambdaLimitError`/:class:`CheckerError` as the checker itself would.
    """

    isolated = True

    def __init__(
        self, pool: CheckerPool, lve: LVE, trust_code: bool, args: dict[str, Any] | None, custom: bool
    ) -> None:
        self.pool = pool
        self.lve = lve
        self.trust_code = trust_code
        self.args = dict(args or {})
        self.custom = custom
        info = self._call(("describe", self.args))
        self.multi_run = bool(info["multi_run"])
        self.postprocessing = bool(info["postprocessing"])

    def _call(self, request: tuple[Any, ...]) -> dict[str, Any]:
        return self.pool.call(self.lve, self.trust_code, request)

    def invoke_check(
        self, prompt_in: Any, prompt_out: Any, param_values: dict[str, Any] | None = None
    ) -> tuple[bool, Any]:
        """``(safe, recorded)`` as :meth:`BaseChecker.invoke_check` returns it, judged in a worker."""
        reply = self._call(("check", self.args, _plain(prompt_in), _plain(prompt_out), dict(param_values or {})))
        return bool(reply["safe"]), reply["recorded"]

    def postprocess_response(self, response: Any) -> Any:
        """The response as the checker stores it (unchanged when it does not post-process)."""
        if not self.postprocessing:
            return response
        return self._call(("postprocess", self.args, response))["response"]

    def __repr__(self) -> str:
        return f"IsolatedChecker({self.lve.checker_name!r} of {self.lve.name})"


def _plain(chats: Any) -> Any:
    """Chats as plain :class:`LVEMessage` lists (pickled to the worker)."""
    if chats and isinstance(chats[0], list):
        return [list(chat) for chat in chats]
    return [m for m in chats if isinstance(m, LVEMessage)] if chats else []


_SHARED: CheckerPool | None = None
_SHARED_LOCK = threading.Lock()
_SHARED_WITH: CheckerLimits | None = None  # the configured limits the shared pool was started with


def shared_pool() -> CheckerPool:
    """The process's checker pool (started on first use, closed at exit), with the limits of
    :func:`~redline.lve.limits.configure_shared_pool`: a pool started with other limits is
    closed and another started."""
    global _SHARED, _SHARED_WITH
    limits = shared_pool_limits()
    with _SHARED_LOCK:
        if _SHARED is not None and not _SHARED._closed and _SHARED_WITH is not limits:
            _SHARED.close()
        if _SHARED is None or _SHARED._closed:
            _SHARED = CheckerPool(limits)
            _SHARED_WITH = limits
            atexit.register(_SHARED.close)
        return _SHARED


def checker_for(
    lve: LVE, trust_code: bool = False, args: dict[str, Any] | None = None, pool: CheckerPool | None = None
) -> Any:
    """The checker of ``lve`` for an instance with ``args``.

    A class with ``isolated = False`` (redline's model-backed checkers) is built here, in
    process. Any other is checked here as far as that runs no untrusted code (the lambda's
    static checks, the arguments' names; a custom checker is not imported here) and returned
    as an :class:`IsolatedChecker` over ``pool`` (the shared pool by default).

    Raises :class:`CustomCodeRefused` (a custom checker without ``trust_code``),
    :class:`LVEFormatError` (unknown checker, bad arguments, a custom checker that fails to
    import), :class:`CheckerIsolationError` (its worker failed).
    """
    try:
        cls: type[Any] | None = get_checker_class(lve.checker_name)
    except UnknownCheckerError:
        cls = None
    if cls is None:
        if not trust_code or lve.custom_checker_file() is None:
            # Raises without importing anything: CustomCodeRefused, or the unknown name.
            lve.checker_class(trust_code=False)
        custom = True
    else:
        if not getattr(cls, "isolated", True):
            return lve.checker(trust_code=trust_code, args=args)
        lve.checker(trust_code=trust_code, args=args)  # static checks, here, before any worker
        custom = False
    kwargs_args = args if lve.is_templated() else None
    return (pool or shared_pool()).checker(lve, trust_code, kwargs_args, custom)
