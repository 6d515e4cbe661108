"""The ``redline scan --resume`` command that every report prints for a stored run (the terminal,
the HTML report, the Markdown export and ``redline view``), as arguments and as one shell line.

It names the store when it is not :data:`DEFAULT_STORE` and ends with the flags that confirm the
run's stored settings (``--trust-settings``, ``--trust-code``: :func:`redline.engine.trust.confirm_flags`,
which the caller reads from the run's stored settings), so that it runs as printed. It never holds a
secret: the settings it confirms are the stored ones, not given again."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DEFAULT_STORE", "resume_args", "resume_command", "store_args"]

#: The store the commands use when neither ``--store`` nor ``$REDLINE_STORE`` names one.
DEFAULT_STORE = "redline.db"


def store_args(store: str | os.PathLike[str] | None) -> list[str]:
    """``["--store", STORE]``, or nothing when ``store`` is ``None`` or :data:`DEFAULT_STORE`."""
    if store is None or Path(store) == Path(DEFAULT_STORE):
        return []
    return ["--store", str(store)]


def resume_args(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    retry_errors: bool = False,
    confirm: Sequence[str] = (),
) -> list[str]:
    """The arguments after ``redline`` that resume run ``run_id``.

    Args:
        store: the run's store (``--store`` is left out for ``None`` and :data:`DEFAULT_STORE`).
        retry_errors: ask the model again for the attempts that errored (``--retry-errors``).
        confirm: the flags that confirm the run's stored settings, last."""
    args = ["scan", "--resume", run_id]
    if retry_errors:
        args.append("--retry-errors")
    return args + store_args(store) + list(confirm)


def resume_command(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    retry_errors: bool = False,
    confirm: Sequence[str] = (),
) -> str:
    """:func:`resume_args` as one shell line starting with ``redline``, each argument quoted for
    the shell where it needs it."""
    return shlex.join(["redline", *resume_args(run_id, store=store, retry_errors=retry_errors, confirm=confirm)])
