"""Group commit for a scan: :class:`BatchWriter` writes many attempts per transaction.

An attempt counts as finished (progress, ``on_done``) only once its transaction has committed, so
a scan killed at any moment (``kill -9`` included) loses at most the requests in flight, never an
attempt reported as finished; see :mod:`redline.store.sqlite` for the durability settings.

The transactions are written on the event loop's thread by default. A thread of their own (``thread=True``)
keeps the loop running while a slow disk syncs, but costs more CPU than it saves on a busy loop:
Python's sqlite3 lets go of the interpreter's lock around every row it steps, and taking it back
from the loop is a thread switch each time (measured in ``bench/bench_store_writer.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import threading
from collections.abc import Callable
from typing import Any, Literal

from redline.attempt import Attempt
from redline.store.errors import StoreError
from redline.store.sqlite import Store

__all__ = ["BatchWriter"]


#: The most cache keys a :class:`BatchWriter` loads (as hashes, about 60 bytes each) to answer a
#: lookup of a key the store does not hold without asking SQLite; above it every lookup asks.
KNOWN_KEYS_LIMIT = 250_000


class BatchWriter:
    """Group commit for a scan: many attempts (and cache entries) per transaction.

    ``await writer.save_attempt(run_id, attempt)`` returns once the attempt is committed; every
    attempt saved while the previous transaction is being written, or less than ``interval``
    seconds after it, shares the next one: a busy scan commits in batches (at most one
    transaction per ``interval``, at most ``max_batch`` attempts each) while a quiet one commits
    each attempt at once. ``cache_put`` queues a cache entry without waiting; the queued entries
    join a transaction once there are ``cache_batch`` of them (the next one, by default), when
    :meth:`hurry` is called and when the writer closes, in key order. ``cache_batch`` trades what
    a kill loses (queued cache entries, never an attempt: at worst a later run asks the model
    again) for fewer pages written: a cache key is a hash, so entries written a few at a time land
    on as many pages of the key's index, and written many at a time, in order, share them.
    ``cache_get`` also sees queued entries and those being written, and answers a key
    that is neither in the store when it first looks (up to :data:`KNOWN_KEYS_LIMIT` keys) nor put
    since without asking SQLite (an entry another process adds meanwhile is not seen). Use as
    ``async with BatchWriter(store) as writer``: leaving the block (normally, by an exception or
    by a cancellation) commits whatever is still queued.

    Without ``thread`` (the default) the transactions are written by the event loop's thread
    through ``store``; with it, by a thread of the writer's own through a second connection to
    ``store``'s file (see the module docstring for the cost). A failed commit raises
    :class:`StoreError` in every ``save_attempt`` waiting on it.
    ``on_commit(n)`` is called (on the event loop's thread) for every transaction committed with
    its ``n`` attempts, those whose ``save_attempt`` was cancelled meanwhile included.
    """

    def __init__(
        self,
        store: Store,
        max_batch: int = 1000,
        interval: float = 0.0,
        thread: bool = False,
        on_commit: Callable[[int], None] | None = None,
        cache_batch: int = 1,
    ) -> None:
        self.store = store
        self.on_commit = on_commit
        self.max_batch = max(1, max_batch)
        self.interval = max(0.0, interval)
        self.cache_batch = max(1, cache_batch)
        self.thread = thread
        self._rows: list[tuple] = []
        self._waiters: list[asyncio.Future] = []
        self._cache: dict[str, list[Any]] = {}
        self._writing: dict[str, list[Any]] = {}  # cache entries of the transaction being written
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._own = threading.local()  # the writing thread's connection
        self._own_stores: list[Store] = []
        self._inflight: tuple[concurrent.futures.Future, tuple] | None = None  # being written
        self._pause: asyncio.Future | None = None  # the wait for ``interval`` to pass, if any
        # hashes of the cache keys in the store (and put since): a miss is answered without a
        # query; False when the store holds too many to load
        self._known: set[int] | Literal[False] | None = None
        #: Transactions committed so far (for tests and benchmarks).
        self.commits = 0

    async def __aenter__(self) -> BatchWriter:
        self._wake = asyncio.Event()
        if self.thread:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="redline-store")
        self._task = asyncio.create_task(self._run(), name="redline store writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def save_attempt(self, run_id: str, attempt: Attempt) -> None:
        """Queue ``attempt`` and wait until the transaction holding it has committed."""
        row = Store.attempt_row(run_id, attempt)
        if self._task is None:
            self.store.write_batch([row])
            if self.on_commit is not None:
                self.on_commit(1)
            return
        future = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        self._waiters.append(future)
        assert self._wake is not None
        self._wake.set()
        await future

    def cache_get(self, key: str) -> list[Any] | None:
        found = self._cache.get(key)
        if found is None:
            found = self._writing.get(key)
        if found is not None:
            return found
        if self._known is None:  # first lookup: the keys the store holds now
            keys = self.store.cache_keys(KNOWN_KEYS_LIMIT)
            self._known = {hash(k) for k in keys} if keys is not None else False
        if self._known is not False and hash(key) not in self._known:
            return None  # neither in the store when the scan started nor put since
        return self.store.cache_get(key)

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        if isinstance(self._known, set):
            self._known.add(hash(key))
        if self._task is None:
            self.store.cache_put(key, outputs)
            return
        self._cache[key] = outputs
        if len(self._cache) >= self.cache_batch:
            assert self._wake is not None
            self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        last = -math.inf  # when the last transaction ended
        while True:
            await self._wake.wait()
            self._wake.clear()
            # Let every attempt that is ready on this turn of the loop join the transaction, and
            # those that finish before ``interval`` has passed since the last one.
            pause = last + self.interval - loop.time()
            if pause > 0:
                self._pause = loop.create_future()
                timer = loop.call_later(pause, _end_pause, self._pause)
                try:
                    await self._pause
                finally:
                    timer.cancel()
                    self._pause = None
            else:
                await asyncio.sleep(0)
            while self._rows or self._cache_due():
                batch = self._take()
                if self._executor is None:
                    error = self._write_here(batch)
                else:
                    written = self._executor.submit(self._write_there, batch)
                    self._inflight = (written, batch)
                    error = await asyncio.wrap_future(written, loop=loop)
                    self._inflight = None
                last = loop.time()
                self._settle(batch, error)

    def hurry(self) -> None:
        """Stop holding transactions for ``interval`` and cache entries for ``cache_batch``: the
        next transaction, and every later one, is written as soon as its attempts or entries are
        queued (for a runner that has sent its last request: nothing that could share the
        transaction is coming)."""
        self.interval = 0.0
        self.cache_batch = 1
        _end_pause(self._pause)
        if self._cache and self._wake is not None:
            self._wake.set()

    def _cache_due(self) -> bool:
        """Whether the queued cache entries are to be written with the next transaction."""
        return len(self._cache) >= self.cache_batch or (bool(self._cache) and self._task is None)

    def _take(self) -> tuple[list[tuple], list[asyncio.Future], dict[str, list[Any]]]:
        """The next transaction's rows (at most :attr:`max_batch`), their waiters, and the
        queued cache entries (visible to :meth:`cache_get` until they are written)."""
        rows, waiters = self._rows[: self.max_batch], self._waiters[: self.max_batch]
        del self._rows[: self.max_batch], self._waiters[: self.max_batch]
        if self._cache_due():
            cache, self._cache = self._cache, {}
            self._writing = cache
        else:
            cache = {}
        return rows, waiters, cache

    def _write_here(self, batch: tuple, store: Store | None = None) -> BaseException | None:
        """The transaction of ``batch`` through ``store`` (:attr:`store` by default); the error
        it raised, if any."""
        rows, _, cache = batch
        try:
            (store or self.store).write_batch(rows, cache)
        except Exception as exc:
            return exc
        return None

    def _write_there(self, batch: tuple) -> BaseException | None:
        """:meth:`_write_here` in the writing thread, on that thread's own connection (opened on
        first use; SQLite connections stay in the thread that opened them)."""
        own = getattr(self._own, "store", None)
        if own is None:
            try:
                own = self._own.store = Store(self.store.path)
            except Exception as exc:
                return exc
            self._own_stores.append(own)
        return self._write_here(batch, own)

    def _settle(self, batch: tuple, error: BaseException | None) -> None:
        """Wake the waiters of ``batch``: committed, or :class:`StoreError` for ``error``."""
        _, waiters, cache = batch
        if self._writing is cache:
            self._writing = {}
        if error is not None:
            failure = error if isinstance(error, StoreError) else StoreError(f"cannot write to store: {error}")
            for future in waiters:
                if not future.done():
                    future.set_exception(failure)
            return
        self.commits += 1
        if self.on_commit is not None and waiters:
            self.on_commit(len(waiters))
        for future in waiters:
            if not future.done():
                future.set_result(None)

    async def aclose(self) -> None:
        """Commit what is queued and stop; later saves commit one by one. Waits (blocking) for a
        transaction being written: nothing below may stop queued attempts from being written."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        inflight, self._inflight = self._inflight, None
        executor, self._executor = self._executor, None
        try:
            if inflight is not None:  # the cancelled loop's transaction: its result, or written now
                written, batch = inflight
                concurrent.futures.wait([written])
                if written.cancelled():  # it had not started
                    assert executor is not None
                    written = executor.submit(self._write_there, batch)
                self._settle(batch, written.result())
            while self._rows or self._cache:
                batch = self._take()
                if executor is None:
                    self._settle(batch, self._write_here(batch))
                else:
                    self._settle(batch, executor.submit(self._write_there, batch).result())
        finally:
            if executor is not None:
                for own in self._own_stores:  # closed in their thread
                    executor.submit(own.close).result()
                self._own_stores.clear()
                executor.shutdown(wait=True)
        if task is not None:
            try:
                await task
            except asyncio.CancelledError:
                pass


def _end_pause(pause: asyncio.Future | None) -> None:
    if pause is not None and not pause.done():
        pause.set_result(None)
