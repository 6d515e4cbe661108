"""Run locks: which runs of a store a process is scanning right now.

A scan holds the lock of its run from the moment it creates (or resumes) it until it records how
the run ended. The lock is an operating-system advisory lock (``flock``) on a small file
``<store>.locks/<run_id>.lock`` next to the store, holding the scanning process's id. The
operating system drops it when that process ends, however it ends (``kill -9`` included), so a
lock is never stale: a run whose stored status is still ``running`` while nobody holds its lock
is a dead run, shown as ``interrupted`` and resumable.

- :func:`acquire` takes the lock for a scan; a second scan of the same run (another process, or
  the same one) gets :class:`RunLocked`, whose message names the process holding it.
- :func:`is_held` tells whether some scan holds it. It takes a shared lock for an instant, so a
  scan's exclusive lock can meet readers: :func:`acquire` then asks for a shared lock itself,
  which only readers let through. Readers are waited out (for :data:`PATIENCE` at most); a scan is
  refused at once. So a reader never blocks a scan, and two scans never hold one run.

The lock file is removed when the lock is released (and the folder when it is empty); a file
left by a killed scan is reused by the next one. Where ``fcntl`` does not exist (Windows), or the
file system refuses locks (some network mounts), no lock is taken: :func:`acquire` returns a lock
that holds nothing and :func:`is_held` answers True, so a run is shown with its stored status and
two scans of one run are not kept apart.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from redline.store.errors import StoreError

try:  # POSIX only: on Windows runs are not locked (see the module docstring)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCKING", "RunLock", "RunLocked", "acquire", "is_held", "lock_folder"]

#: Whether runs are locked on this platform.
LOCKING = fcntl is not None

#: Seconds :func:`acquire` waits for readers (each holds a shared lock for an instant) to let go.
PATIENCE = 1.0


class RunLocked(StoreError):
    """The run is being scanned by another process (or another scan of this one)."""


def lock_folder(store_path: str | os.PathLike) -> Path:
    """The folder of the lock files of the store at ``store_path``: ``<store>.locks``."""
    path = Path(store_path).expanduser().resolve()
    return path.with_name(path.name + ".locks")


def _lock_file(store_path: str | os.PathLike, run_id: str) -> Path:
    # run ids are ours (date-time-hex), but a name from the command line must not leave the folder
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id).lstrip(".") or "_"
    return lock_folder(store_path) / f"{safe}.lock"


class RunLock:
    """A held run lock; :meth:`release` (or leaving a ``with`` block) lets it go."""

    def __init__(self, path: Path | None, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file, then drop the lock (removing it first means a scan that opens the
        path next gets a new file and a lock of its own). Safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is None or self.path is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(fd)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()  # only when empty: other runs' locks stay

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(path: Path) -> str:
    """``process PID`` from the lock file (``another process`` when it cannot be read yet)."""
    try:
        pid = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid.isdigit() else "another process"


def _shared_lock_free(fd: int) -> bool:
    """Whether a shared lock on ``fd`` can be had now: only readers hold the file, no scan (the
    lock taken here goes with ``fd`` when it is closed)."""
    assert fcntl is not None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _at_path(fd: int, path: Path) -> bool:
    """Whether the file open as ``fd`` is still the one at ``path`` (a released lock's file is
    removed, and the next scan creates a new one there)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def acquire(store_path: str | os.PathLike, run_id: str, patience: float = PATIENCE) -> RunLock:
    """Take the lock of run ``run_id`` of the store at ``store_path`` and write this process's id
    in it. Raises :class:`RunLocked` at once when a scan holds it, naming that scan's process
    (readers looking at the run are waited for, up to ``patience`` seconds), and
    :class:`StoreError` when the lock file cannot be created."""
    if fcntl is None:  # pragma: no cover - Windows
        return RunLock(None, None)
    path = _lock_file(store_path, run_id)
    deadline = time.monotonic() + patience
    while True:
        try:
            path.parent.mkdir(exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the folder was removed by a scan that just ended: again
            continue
        except OSError as exc:
            raise StoreError(f"cannot lock run {run_id}: cannot create {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            readers_only = _shared_lock_free(fd)  # readers share; a scan's exclusive lock does not
            released = not _at_path(fd, path)  # the scan holding it removed the file: it just ended
            os.close(fd)
            if released:
                continue
            if not readers_only or time.monotonic() >= deadline:
                raise RunLocked(
                    f"run {run_id} is being scanned by {_holder(path)} (store {store_path}): "
                    "wait for that scan to end, or stop it and resume again"
                ) from None
            time.sleep(0.02)
            continue
        except OSError:  # a file system without locks (some network mounts): scan unlocked, as on Windows
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
                path.parent.rmdir()
            return RunLock(None, None)
        if not _at_path(fd, path):  # removed by the scan that held it before us: lock the one at the path
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        return RunLock(path, fd)


def is_held(store_path: str | os.PathLike, run_id: str) -> bool:
    """Whether a scan holds the lock of run ``run_id`` (always True where runs are not locked)."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    path = _lock_file(store_path, run_id)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: show the stored status
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held (BlockingIOError), or a file system without locks: show the stored status
        return True
    finally:
        os.close(fd)  # also drops the shared lock taken above
    return False
