"""A scan of a remote model on every core: phases 2 and 3 in worker processes.

One Python process spends about 0.2 ms of CPU on each attempt of a scan over HTTP (the request
and its answer, the detectors, the attempt's record and its commit), so against a fast endpoint
one core is the limit. :class:`ShardExecutor` starts ``count`` worker processes
(:mod:`redline.engine.shard_worker`); each builds the run's probes, generator and detectors from
the run's :class:`~redline.engine.config.ScanConfig` and runs the attempts it claims from the
run's :class:`WorkQueue` (stretches of positions in the run's deterministic order, each claimed
by one worker, taken as it needs more: a worker that the system runs slower takes fewer, and
none waits for another at the end), with its share of the scan's concurrency, and commits them
to the store itself through a :class:`~redline.store.BatchWriter` of its own. The process that started the scan
holds the run's lock, relays the workers' progress, and runs phase 4 from the store once they are
done: the stored attempts, the summary and ``--resume`` are the same as in one process.

**Limits split.** The scan's ``concurrency`` and the endpoint's own limits (``concurrency``,
``rpm`` and ``tpm`` generator options) are divided among the workers, so that together they
send no more than one process would.

**Stopping.** The workers run in a session of their own (a Ctrl-C on the terminal reaches only
this process) and stop when this process tells them (``SIGTERM``) or goes away (their standard
input closes): each commits the attempts it finished and exits. A worker that fails reports its
error, which stops the scan with that error; one that dies without a word stops it with
:class:`ScanWorkerError`. Either way the run can be resumed.

**Forked, not started.** A new interpreter importing redline costs a worker about 0.25 s of CPU,
on the cores the scan needs. On Linux the console script forks its workers instead
(:class:`Preforked`), before its event loop, its store and any thread exist, so that they start
with what it has imported; elsewhere, and where :class:`ShardExecutor` is given none, each is a new
``python -P -c "from redline.engine.shard_worker import main; main()"``. Both run the same code.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from redline.detectors import DetectorUnavailable
from redline.engine.config import ScanConfig
from redline.engine.executors import ExecutorConfig, ExecutorError
from redline.errors import RedlineError, UsageError
from redline.generators import Generator, GeneratorUnavailable
from redline.generators.transport.remote import RemoteGenerator
from redline.lve.limits import shared_pool_limits
from redline.plugins import UnknownPluginError
from redline.store import StoreError

__all__ = [
    "AUTO_MIN_ATTEMPTS",
    "AUTO_MAX_PROCESSES",
    "MAX_STRETCHES",
    "MIN_STRETCH",
    "Preforked",
    "ScanWorkerError",
    "ShardExecutor",
    "WorkQueue",
    "choose_processes",
    "claimed",
    "config_key",
    "shard_config",
]

#: A scan runs in worker processes on its own (``processes`` not given) only when it has at least
#: this many attempts to run: starting them costs about 0.15 s more than it saves on a short run
#: (1,260 attempts at 200 ms and concurrency 256), and saves at most 0.1 s below this at 0 ms.
AUTO_MIN_ATTEMPTS = 2000

#: The most worker processes chosen on their own (``--processes`` may ask for more).
AUTO_MAX_PROCESSES = 4

#: Each worker chosen on its own has at least this many of the scan's attempts in flight.
AUTO_MIN_CONCURRENCY = 8

#: Seconds a worker has to commit what it finished once told to stop, before it is killed.
STOP_GRACE = 10.0

#: The errors a worker reports that stop the scan with the same class (others: ScanWorkerError).
_SAME_ERRORS: dict[str, type[RedlineError]] = {
    cls.__name__: cls for cls in (GeneratorUnavailable, DetectorUnavailable, StoreError, UnknownPluginError, UsageError)
}


class ScanWorkerError(RedlineError):
    """A scan's worker process failed or died; the run is stored as interrupted and can be resumed."""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def choose_processes(
    executor: ExecutorConfig, generator: Generator, concurrency: int, to_run: int | None, *, shareable: bool
) -> int:
    """How many worker processes run a scan's attempts (``1``: this process runs them).

    ``executor.processes`` when given (at most ``concurrency``, or the endpoint's own
    ``concurrency`` option when lower: each worker has one attempt in flight at least;
    :class:`~redline.engine.executors.ExecutorError` above 1 for a local model or a run that is
    not ``shareable``). Otherwise several only for a remote model (a local one already uses
    every core in one process), with at least :data:`AUTO_MIN_ATTEMPTS` attempts to run, on a machine
    with more than one core: one per core, at most :data:`AUTO_MAX_PROCESSES`, each with at least
    :data:`AUTO_MIN_CONCURRENCY` attempts in flight. Never for a run that is not ``shareable``
    (a generator object given to the scan, or a budget: they live in this process). ``to_run``
    ``None``: not known yet, the most it could be."""
    if executor.kind != "local":
        return 1
    cap = getattr(generator, "concurrency", None)  # the endpoint's own limit (a remote model's option)
    if isinstance(cap, int) and cap > 0:
        concurrency = min(concurrency, cap)  # each worker keeps one request of it at least
    if executor.processes is not None and executor.processes > 1:
        if generator.local:
            raise ExecutorError("--processes is for a remote model: a local model uses every core in one process")
        if sys.platform == "win32":
            raise ExecutorError("--processes above 1 needs a POSIX system (Linux, macOS)")
        if not shareable:
            raise ExecutorError(
                "--processes needs the scan's own generator and no budget (--budget-usd and --max-requests "
                "are kept by one process)"
            )
        return max(1, min(executor.processes, concurrency))
    if not shareable or generator.local or executor.processes is not None:
        return 1
    few = to_run is not None and to_run < AUTO_MIN_ATTEMPTS
    if not isinstance(generator, RemoteGenerator) or few or sys.platform == "win32":
        return 1
    return max(1, min(_cores(), AUTO_MAX_PROCESSES, concurrency // AUTO_MIN_CONCURRENCY))


def _share(total: float, index: int, count: int, whole: bool) -> float:
    """Worker ``index``'s part of a limit ``total`` split among ``count`` workers."""
    if not whole:
        return total / count
    part, extra = divmod(int(total), count)
    return max(1, part + (1 if index < extra else 0))


def shard_config(config: ScanConfig, concurrency: int, index: int, count: int) -> tuple[dict[str, Any], int]:
    """The configuration worker ``index`` of ``count`` runs with (the endpoint's own limits
    divided: generator options ``concurrency``, ``rpm``, ``tpm``) and its share of the scan's
    ``concurrency``."""
    options = dict(config.generator_options)
    for key, whole in (("concurrency", True), ("rpm", False), ("tpm", False)):
        value = options.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            options[key] = _share(value, index, count, whole)
    data = config.as_dict()
    data["generator_options"] = options
    return data, int(_share(concurrency, index, count, whole=True))


#: A run's positions are claimed in stretches of at least this many attempts...
MIN_STRETCH = 16
#: ... and in this many stretches at most (4 bytes each: all of them fit in a pipe's buffer).
MAX_STRETCHES = 2048


class WorkQueue:
    """The positions of a run's attempts, in stretches that the scan's workers claim as they go:
    a pipe holding the stretches' numbers (4 bytes each), read without blocking by every worker.
    A read of 4 bytes from a pipe takes them whole, so each stretch goes to one worker; an
    empty pipe means the run has none left. :meth:`fill` writes them all before the workers
    are told the run, so that none finds the pipe empty early."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)  # the workers' end (a property of the pipe, shared)

    def fill(self, positions: int) -> int:
        """Write the stretches covering ``positions`` positions; their length (each worker is told it)."""
        size = max(MIN_STRETCH, -(-positions // MAX_STRETCHES))
        data = memoryview(b"".join(i.to_bytes(4, "little") for i in range(-(-positions // size))))
        while data:
            data = data[os.write(self.write_fd, data[:4096]) :]
        return size

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.read_fd = self.write_fd = -1


def claimed(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """A worker's side of a :class:`WorkQueue` (its read end ``fd``, stretches of ``size``):
    the ``(start, stop)`` positions of each stretch it claims, one claimed each time the next
    is asked for, until none is left."""
    while True:
        try:
            record = os.read(fd, 4)
        except BlockingIOError:  # empty: the others have claimed the rest
            return
        if len(record) < 4:
            return
        start = int.from_bytes(record, "little") * size
        yield start, start + size


def config_key(data: dict[str, Any]) -> str:
    """The key of a scan configuration (:meth:`ScanConfig.as_dict`) that probes built from it are
    kept under (:attr:`Preforked.built`)."""
    return json.dumps(data, sort_keys=True)


class _Forked:
    """A worker forked by :meth:`Preforked.fork`, with what :class:`ShardExecutor` uses of an
    :class:`asyncio.subprocess.Process` (``pid``, ``returncode``, ``stdin``, ``stdout``, ``wait``,
    ``send_signal``, ``kill``) once :meth:`attach` has put its pipes on the running loop."""

    def __init__(self, pid: int, to_child: int, from_child: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: Any = None  # a write transport: write() and close()
        self.stdout: asyncio.StreamReader | None = None
        self._to_child, self._from_child = to_child, from_child
        self._waiting: asyncio.Future[int] | None = None

    async def attach(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self._from_child, "rb", 0))
        self.stdin, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, os.fdopen(self._to_child, "wb", 0))
        self.stdout = reader

    def close_pipes(self) -> None:
        """Close this end of the pipes of a worker that was never attached."""
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)

    def send_signal(self, number: int) -> None:
        if self.returncode is None:  # not reaped: the process id is still its own
            os.kill(self.pid, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def reap(self) -> int:
        """Wait for the process to end (blocking); its exit code (``-N``: signal N)."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    async def wait(self) -> int:
        if self._waiting is None:
            self._waiting = asyncio.ensure_future(asyncio.to_thread(self.reap))
        return await asyncio.shield(self._waiting)


def one_thread() -> bool:
    """Whether this process runs one thread only: Python's own count, and on Linux the kernel's
    (a library's native threads count too)."""
    if threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # not Linux
        return True


def _run_forked(entry: Callable[[], None], stdin: int, stdout: int, others: list[int]) -> NoReturn:
    """The forked worker: its pipes as standard input and output, a session of its own, then
    ``entry``; it never returns into the code that forked it, and runs none of its exit handlers."""
    code = 70
    try:
        os.setsid()  # a Ctrl-C on the terminal goes to the scan's process, which stops it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        for fd in {stdin, stdout, *others}:  # the other workers' pipes (their input must close with the
            # scan) and the work queue's writing end
            os.close(fd)
        try:
            entry()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


class Preforked:
    """Worker processes forked from the scan's process before its event loop, its store and any
    thread exist (the console script on Linux: :func:`redline.engine.shard_worker.prefork`). Each
    waits for its order as a started worker does; :class:`ShardExecutor` takes them in place of
    starting new interpreters, and :meth:`discard` kills and reaps those not taken."""

    def __init__(self, children: list[_Forked], queue: WorkQueue | None = None) -> None:
        self._children = children
        #: The run's work queue, whose read end the workers hold (the executor that takes them
        #: takes it too).
        self.queue = queue
        #: The probes built before the fork, with the :func:`config_key` of the configuration
        #: they were built from (the workers hold copies): the scan uses them for that configuration.
        self.built: tuple[str, list[Any]] | None = None

    @classmethod
    def fork(cls, count: int, entry: Callable[[], None]) -> Preforked:
        """Fork ``count`` processes that run ``entry`` (a worker's ``main``) with a pipe as standard
        input and one as standard output. Only from a process with one thread (``RuntimeError``
        otherwise): a fork copies the calling thread alone, and a lock another thread held would
        stay held in the child. ``OSError`` when the system forks no more, with none left behind."""
        if not one_thread():
            raise RuntimeError("Preforked.fork needs a process with one thread")
        sys.stdout.flush()
        sys.stderr.flush()
        forked = cls([], WorkQueue())
        assert forked.queue is not None
        ours: list[int] = [forked.queue.write_fd]  # the children claim work; they never add any
        for _ in range(count):
            child_in, to_child = os.pipe()
            from_child, child_out = os.pipe()
            try:
                pid = os.fork()
            except OSError:  # no more processes: none of these is left behind
                for fd in (child_in, to_child, from_child, child_out):
                    os.close(fd)
                forked.discard()
                raise
            if pid == 0:  # pragma: no cover - the child (tested through the console script)
                _run_forked(entry, child_in, child_out, [to_child, from_child, *ours])
            os.close(child_in)
            os.close(child_out)
            ours += [to_child, from_child]
            forked._children.append(_Forked(pid, to_child, from_child))
        return forked

    def take(self, count: int) -> tuple[list[_Forked], WorkQueue | None]:
        """Up to ``count`` of the workers, and with any the work queue they read, no longer this
        object's to discard."""
        taken, self._children = self._children[:count], self._children[count:]
        queue = None
        if taken:
            queue, self.queue = self.queue, None
        return taken, queue

    def discard(self) -> None:
        """Kill and reap the workers not taken (a scan that ran in one process, or stopped early),
        and close the work queue unless it was taken."""
        if self.queue is not None:
            self.queue.close()
            self.queue = None
        children, self._children = self._children, []
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            child.close_pipes()
        for child in children:
            with contextlib.suppress(ChildProcessError):
                child.reap()


class _Worker:
    """One worker process and the lines it sends."""

    def __init__(self, index: int, process: asyncio.subprocess.Process | _Forked) -> None:
        self.index = index
        self.process = process
        self.finished = False

    def stop(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)


class ShardExecutor:
    """Phases 2 and 3 of a run in worker processes (see the module docstring).

    ``await spawn(count, config)`` starts ``count`` worker processes and gives each the run's
    configuration and its place: they build the probes, generator and detectors while this process
    goes on (building its own probes, counting the attempts, creating the run); ``await
    keep(count)``, once the attempts are counted, keeps them (``count`` the same) or stops them
    all (``count`` 1: this process runs the scan); ``begin(run_id)`` tells them the run; ``await wait(on_advance)`` returns when
    every worker has run out of work, calling ``on_advance(n)`` as workers commit ``n`` more attempts, and raises the first error a worker
    reports; ``await stop()`` stops the workers still running (each commits what it finished),
    and does nothing when none runs; ``await ended()`` waits for the processes of the workers
    that finished to end (the scan went on meanwhile).
    """

    def __init__(
        self, *, store_path: str, concurrency: int, retry_errors: bool = False, preforked: Preforked | None = None
    ) -> None:
        self.preforked = preforked
        self.count = 0
        self.store_path = store_path
        self.concurrency = concurrency
        self.retry_errors = retry_errors
        self._workers: list[_Worker] = []
        self._unused: list[_Worker] = []  # spawned, not needed: exiting
        self._config: ScanConfig | None = None
        #: The run's work queue while workers run and the run is not begun.
        self.queue: WorkQueue | None = None
        self._on_advance: Callable[[int], None] | None = None
        #: The ends of the workers that finished (reaped as they come; not waited for).
        self._ending: list[asyncio.Future[int]] = []

    @property
    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [w.process.pid for w in self._workers]

    async def spawn(self, count: int, config: ScanConfig) -> None:
        """Start ``count`` worker processes (none when ``count`` is 1: this process runs the scan),
        the :class:`Preforked` ones first, the others as new interpreters, and give worker ``i``
        its order: ``config``, its place ``i`` of ``count`` (its share of the limits) and its end
        of the work queue. Forked workers not needed are discarded now."""
        wanted = count if count > 1 else 0
        forked, queue = self.preforked.take(wanted) if self.preforked is not None else ([], None)
        if self.preforked is not None:
            self.preforked.discard()
        if wanted and self.queue is None:
            self.queue = queue or WorkQueue()
        command = [sys.executable, "-P", "-c", "from redline.engine.shard_worker import main; main()"]
        for index in range(wanted):
            process: asyncio.subprocess.Process | _Forked
            if index < len(forked):
                process = forked[index]
                await process.attach()
            else:
                process = await asyncio.create_subprocess_exec(
                    *command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    start_new_session=True,  # a Ctrl-C on the terminal goes to this process, which stops them
                    limit=1 << 20,
                    pass_fds=(self._queue().read_fd,),
                )
            self._workers.append(_Worker(index, process))
        self.count = len(self._workers)
        self._config = config
        for index, worker in enumerate(self._workers):
            assert worker.process.stdin is not None  # stays open: its end tells the worker to stop
            worker.process.stdin.write(json.dumps(self.order(config, index, self.count)).encode() + b"\n")

    async def keep(self, count: int) -> None:
        """Once the attempts are counted: keep the workers when ``count`` is as many, stop them all
        when it is 1 or less (they have only built what a scan needs: nothing to lose), and start
        ``count`` others, each told its new place and share of the limits, for any other ``count``."""
        if count == self.count:
            return
        unused, self._workers = self._workers, []
        for worker in unused:
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
        self._unused += unused
        self.count = 0
        if count > 1 and self._config is not None:
            await self.spawn(count, self._config)
        elif self.queue is not None:
            self.queue.close()
            self.queue = None

    def _queue(self) -> WorkQueue:
        assert self.queue is not None
        return self.queue

    def order(self, config: ScanConfig, index: int, count: int) -> dict[str, Any]:
        """What worker ``index`` of ``count`` is told: the store, the run's configuration with
        its share of the limits (its place ``index`` of ``count``), its concurrency, the descriptor of
        its end of the work queue, and the LVE checkers' limits of this process (``--checker-timeout``,
        ``--checker-memory``)."""
        config_data, concurrency = shard_config(config, self.concurrency, index, count)
        limits = shared_pool_limits()
        return {
            "checker_limits": dataclasses.asdict(limits) if limits is not None else None,
            "store": self.store_path,
            "config": config_data,
            "concurrency": concurrency,
            "queue": self.queue.read_fd if self.queue is not None else None,
            "retry_errors": self.retry_errors,
        }

    def begin(self, run_id: str, positions: int) -> None:
        """Once the run is created: put its ``positions`` (its attempts, stored or not, in the
        run's order) in the work queue, then tell the workers the run and the stretches' length."""
        if not self._workers or self.queue is None:
            return
        stretch = self.queue.fill(positions)
        self.queue.close()  # the workers hold their own ends
        self.queue = None
        for worker in self._workers:
            assert worker.process.stdin is not None
            worker.process.stdin.write(json.dumps({"run_id": run_id, "stretch": stretch}).encode() + b"\n")

    async def wait(self, on_advance: Callable[[int], None]) -> None:
        self._on_advance = on_advance
        tasks = [asyncio.ensure_future(self._follow(worker, on_advance)) for worker in self._workers]
        try:
            for done in asyncio.as_completed(tasks):
                await done  # the first error raises here
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _follow(self, worker: _Worker, on_advance: Callable[[int], None]) -> None:
        stdout = worker.process.stdout
        assert stdout is not None
        error: RedlineError | None = None
        async for line in stdout:
            message = json.loads(line)
            if "advance" in message:
                on_advance(int(message["advance"]))
            if message.get("finished"):
                worker.finished = True
            if "error" in message:
                kind = _SAME_ERRORS.get(str(message.get("type")), ScanWorkerError)
                error = kind(str(message["error"]))
        if worker.finished and error is None:
            # every attempt it claimed is committed: the scan goes on while the process ends (the
            # end of a process that shares the scan's memory takes milliseconds)
            self._ending.append(asyncio.ensure_future(worker.process.wait()))
            return
        code = await worker.process.wait()
        if error is not None:
            raise error
        if not worker.finished:
            raise ScanWorkerError(
                f"scan worker {worker.index + 1} of {self.count} (process {worker.process.pid}) stopped "
                f"unexpectedly ({_exit_reason(code)}); the run can be resumed"
            )

    async def stop(self) -> None:
        """Tell every worker still running to stop, and wait until each has committed what it
        finished and exited (killed after :data:`STOP_GRACE` seconds). A worker that said it
        finished has committed every attempt it claimed: its process is left to end (and is
        reaped) while the scan goes on."""
        workers, self._workers, self._unused = self._workers + self._unused, [], []
        if self.queue is not None:
            self.queue.close()
            self.queue = None
        for worker in workers:
            if not worker.finished:
                worker.stop()
        for worker in workers:
            if worker.finished:  # said so, then closed its output: ending, as _follow saw
                if worker.process.stdin is not None:
                    worker.process.stdin.close()
                continue
            try:
                await asyncio.wait_for(asyncio.shield(worker.process.wait()), STOP_GRACE)
            except (TimeoutError, asyncio.CancelledError):
                with contextlib.suppress(ProcessLookupError):
                    worker.process.kill()
                await worker.process.wait()
            if worker.process.stdin is not None:
                worker.process.stdin.close()
            if worker.process.stdout is not None and self._on_advance is not None:
                self._relay_rest(await worker.process.stdout.read())

    async def ended(self) -> None:
        """Wait until the processes of the workers that finished have ended (a scan returns with
        its workers gone). Their ends were not waited for when they finished."""
        ending, self._ending = self._ending, []
        await asyncio.gather(*ending, return_exceptions=True)

    def _relay_rest(self, lines: bytes) -> None:
        """The progress a stopped worker reported after this process stopped reading it (the
        attempts it committed while stopping): counted, so that the progress matches the store."""
        assert self._on_advance is not None
        for line in lines.splitlines():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and isinstance(message.get("advance"), int):
                self._on_advance(message["advance"])


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"
