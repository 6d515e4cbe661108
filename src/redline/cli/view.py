"""``redline view``: browse the store in a local web app (:mod:`redline.view`).

Mounted by :mod:`redline.cli.main` through :func:`register`. The port is taken before anything
is printed, so a port in use or a missing store is one ``error:`` line (exit 1); the first line on
stdout is the address to open. Listening on another address than loopback prints a warning: whoever
reaches it can read the runs and write labels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from redline.cli.common import DEFAULT_STORE, err_console, out_console
from redline.errors import UsageError
from redline.textsafety import visible
from redline.view import allowed_hosts, bind, create_app, serve
from redline.view.server import is_loopback, url_of

__all__ = ["register", "view"]

STORE_OPTION = typer.Option(DEFAULT_STORE, "--store", help="SQLite store file.", envvar="REDLINE_STORE")


def view(
    store: Path = STORE_OPTION,
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on (0 picks a free one)."),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Address to listen on. Anything but loopback lets other machines read the runs and write labels.",
    ),
) -> None:
    """Browse the runs in a local web app: summaries, attempts with filters, label outputs, compare runs.
    It updates while a scan is running; Ctrl-C stops it."""
    if not store.is_file():
        raise UsageError(f"no store at {store} (run 'redline scan' first, or pass --store PATH)")
    app = create_app(store, host_names=allowed_hosts(host))
    sock = bind(host, port)
    try:
        url = url_of(sock, host)
        out_console.print(
            f"redline view: serving {visible(str(store))} at {url} (Ctrl-C stops it)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        sys.stdout.flush()
        if not is_loopback(host):
            err_console.print(
                f"warning: listening on {visible(host)}: anyone who can reach this machine on port "
                f"{sock.getsockname()[1]} can read the runs and write labels",
                markup=False,
                highlight=False,
            )
        serve(app, sock)
    finally:
        sock.close()


def register(app: typer.Typer) -> None:
    """Add the ``view`` command to the ``redline`` app."""
    app.command("view")(view)
