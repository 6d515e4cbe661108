"""Group commit for a scan: :class:`BatchWriter` writes many attempts per transaction.

An attempt counts as finished (progress, ``on_done``) only once its transaction has committed, so
a scan killed at any moment (``kill -9`` included) loses at most the requests in flight, never an
attempt reported as finished; see :mod:`redline.store.sqlite` for the durability settings.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redline.attempt import Attempt
from redline.store.errors import StoreError
from redline.store.sqlite import Store

__all__ = ["BatchWriter"]


class BatchWriter:
    """Group commit for a scan: many attempts (and cache entries) per transaction.

    ``await writer.save_attempt(run_id, attempt)`` returns once the attempt is committed; every
    attempt saved while the writer waits for its turn on the event loop shares that transaction,
    so a busy scan commits in batches while a quiet one commits each attempt almost at once.
    ``cache_put`` queues a cache entry for the next transaction without waiting; ``cache_get``
    also sees queued entries. Use as ``async with BatchWriter(store) as writer``: leaving the block
    (normally, by an exception or by a cancellation) commits whatever is still queued.

    A failed commit raises :class:`StoreError` in every ``save_attempt`` waiting on it.
    """

    def __init__(self, store: Store, max_batch: int = 1000, max_delay: float = 0.0) -> None:
        self.store = store
        self.max_batch = max(1, max_batch)
        self.max_delay = max(0.0, max_delay)
        self._rows: list[tuple] = []
        self._waiters: list[asyncio.Future] = []
        self._cache: dict[str, list[Any]] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        #: Transactions committed so far (for tests and benchmarks).
        self.commits = 0

    async def __aenter__(self) -> BatchWriter:
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="redline store writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def save_attempt(self, run_id: str, attempt: Attempt) -> None:
        """Queue ``attempt`` and wait until the transaction holding it has committed."""
        row = Store.attempt_row(run_id, attempt)
        if self._task is None:
            self.store.write_batch([row])
            return
        future = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        self._waiters.append(future)
        if len(self._rows) >= self.max_batch:
            self._commit()
        else:
            assert self._wake is not None
            self._wake.set()
        await future

    def cache_get(self, key: str) -> list[Any] | None:
        if key in self._cache:
            return self._cache[key]
        return self.store.cache_get(key)

    def cache_put(self, key: str, outputs: list[Any]) -> None:
        if self._task is None:
            self.store.cache_put(key, outputs)
            return
        self._cache[key] = outputs
        assert self._wake is not None
        self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            # Let every attempt that is ready on this turn of the loop join the transaction.
            await asyncio.sleep(self.max_delay)
            self._commit()

    def _commit(self) -> None:
        rows, waiters, cache = self._rows, self._waiters, self._cache
        self._rows, self._waiters, self._cache = [], [], {}
        if not rows and not cache:
            return
        try:
            self.store.write_batch(rows, cache)
        except Exception as exc:
            error = exc if isinstance(exc, StoreError) else StoreError(f"cannot write to store: {exc}")
            for future in waiters:
                if not future.done():
                    future.set_exception(error)
            return
        self.commits += 1
        for future in waiters:
            if not future.done():
                future.set_result(None)

    async def aclose(self) -> None:
        """Commit what is queued and stop; later saves commit one by one."""
        task, self._task = self._task, None
        self._commit()  # first: nothing below may stop the queued attempts from being written
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
