"""A scan's worker process (see :mod:`redline.engine.shards`): runs its part of a run's attempts.

Started by :class:`~redline.engine.shards.ShardExecutor` as
``python -P -c "from redline.engine.shard_worker import main; main()"``, or forked by
:func:`prefork` to run :func:`main`. It reads a JSON line
on its standard input (the store's path, the run's configuration with its share of the limits, its concurrency,
the descriptor of its end of the run's :class:`~redline.engine.shards.WorkQueue`), builds the
probes, generator and detectors, reads a second line (``{"run_id": …, "stretch": N}``: the
run, created meanwhile, and the length of the queue's stretches), runs the stretches of
attempts it claims from the queue with :func:`redline.engine.pipeline.run_shard` until none is
left, and writes JSON lines on its standard output for the process that started it:

- ``{"advance": N}``: N more attempts committed to the store (sent at most every
  :data:`REPORT_EVERY` seconds);
- ``{"error": MESSAGE, "type": CLASS}``: the worker stopped on this error;
- ``{"finished": true}``: every attempt it claimed is committed.

It stops, committing what it finished, on ``SIGTERM`` or when its standard input closes. Its
standard output carries only these lines (anything else printed goes to standard error).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import signal
import sys
from collections.abc import Iterator
from typing import IO, Any

from redline.detectors import detectors
from redline.engine.config import ScanConfig
from redline.engine.executors import ExecutorConfig
from redline.engine.pipeline import build_probes, get_probe_class, run_shard, selected_probe_names
from redline.engine.shards import Preforked, choose_processes, claimed, config_key, one_thread
from redline.errors import RedlineError
from redline.eventloop import loop_factory, run_async
from redline.generators import get_generator
from redline.lve.limits import CheckerLimits, configure_shared_pool
from redline.probes import Probe
from redline.probes.runner import AttemptRunner
from redline.store import Store

__all__ = ["REPORT_EVERY", "main", "prefork"]


#: Seconds between two progress lines.
REPORT_EVERY = 0.05


class _Channel:
    """The worker's lines to the process that started it."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.pending = 0

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message).encode() + b"\n")
        self.out.flush()

    def advance(self, count: int) -> None:
        self.pending += count

    def flush(self) -> None:
        if self.pending:
            count, self.pending = self.pending, 0
            self.send({"advance": count})

    async def report(self) -> None:
        while True:
            await asyncio.sleep(REPORT_EVERY)
            self.flush()


async def _shard(channel: _Channel, built: tuple[str, list[Probe]] | None = None) -> None:
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    assert main_task is not None
    loop.add_signal_handler(signal.SIGTERM, main_task.cancel)
    reader = asyncio.StreamReader(limit=1 << 24)
    # descriptor 0, not sys.stdin: a forked worker's sys.stdin is the scan process's (None when closed)
    stdin = open(0, "rb", 0, closefd=False)  # noqa: SIM115 - its transport closes it
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    line = await reader.readline()
    if not line:
        raise asyncio.CancelledError  # the scan's process is gone already
    order: dict[str, Any] = json.loads(line)
    if order.get("checker_limits") is not None:  # the scan's --checker-timeout and --checker-memory
        configure_shared_pool(CheckerLimits(**order["checker_limits"]))

    begun: asyncio.Future[tuple[str, Iterator[tuple[int, int]]]] = loop.create_future()
    queue = int(order["queue"])

    async def watch_input() -> None:  # then the end of the input (the scan's process is gone): stop
        line = await reader.readline()
        if line:
            run = json.loads(line)
            begun.set_result((str(run["run_id"]), claimed(queue, int(run["stretch"]))))
            await reader.read()
        main_task.cancel()

    watcher = asyncio.ensure_future(watch_input())
    reporter = asyncio.ensure_future(channel.report())
    store = Store(order["store"])
    # probes built before the fork (prefork) for the configuration it is told: run, not built again
    probes = built[1] if built is not None and built[0] == config_key(order["config"]) else None
    try:
        await run_shard(
            ScanConfig.from_dict(order["config"]),
            store,
            begun,
            probes=probes,
            concurrency=int(order["concurrency"]),
            retry_errors=bool(order.get("retry_errors")),
            on_commit=channel.advance,
        )
    finally:
        for task in (watcher, reporter):
            task.cancel()
        store.close()
        os.close(queue)
        channel.flush()


def main(built: tuple[str, list[Probe]] | None = None) -> None:
    """The worker process: its part of a run (see the module docstring). ``built``: in a forked
    worker, the probes :func:`prefork` built before the fork, with the
    :func:`~redline.engine.shards.config_key` of their configuration."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the scan's process decides when to stop
    channel = _Channel(os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)  # a stray print must not mix with the lines
    code = 0
    try:
        run_async(_shard(channel, built))
        channel.send({"finished": True})
    except asyncio.CancelledError:  # told to stop: what it finished is committed
        pass
    except RedlineError as exc:
        channel.send(
            {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__, "type": type(exc).__name__}
        )
        code = 1
    except BaseException as exc:  # a bug: said in one line, the scan stops with it
        channel.send({"error": f"internal error {type(exc).__name__}: {exc}", "type": "internal"})
        code = 70
    with contextlib.suppress(OSError):
        channel.out.close()
    sys.exit(code)


def prefork(config: ScanConfig | None, executor: ExecutorConfig | None, *, shareable: bool) -> Preforked | None:
    """Fork now the worker processes a scan of ``config`` would start (see
    :mod:`redline.engine.shards`): as many as :func:`~redline.engine.shards.choose_processes`
    chooses before the attempts are counted; a scan that turns out small discards them.

    For the console script, before it opens the store and starts its event loop: ``None`` (the
    workers, if any, are started as new interpreters) off Linux, in a process with more than one
    thread, without a ``config`` (a resumed run), or where the model cannot be built (the scan
    then says why)."""
    if config is None or not sys.platform.startswith("linux") or not one_thread():
        return None
    try:
        generator = get_generator(config.model, **config.generator_options)
        concurrency = config.concurrency or AttemptRunner.default_concurrency(generator)
        count = choose_processes(executor or ExecutorConfig(), generator, concurrency, None, shareable=shareable)
        if count > 1:
            _import_detectors(config)
    except Exception:  # the scan builds it again and reports the error in its own words
        return None
    if count <= 1:
        return None
    try:  # built once, here: the workers start with copies, and the scan uses these
        probes = build_probes(config)
    except Exception:  # the scan builds them again and reports the error in its own words
        return None
    built = (config_key(config.as_dict()), probes)  # (building may normalise the configuration: the key after)
    loop_factory()  # its module imported once, for them all
    try:
        forked = Preforked.fork(count, functools.partial(main, built))
    except (OSError, RuntimeError):  # no more processes, or building started a thread: the scan
        return None  # starts its workers itself, or says why not
    forked.built = built
    return forked


def _import_detectors(config: ScanConfig) -> None:
    """Import the modules of the detectors the selected probes recommend, so that forked workers
    start with them: a detector's module may build large tables when imported, which each
    worker would otherwise build again."""
    for name in selected_probe_names(config) or []:
        for detector in get_probe_class(name).recommended_detectors:
            if detector in detectors:
                detectors.load(detector)
