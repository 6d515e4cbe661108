"""The ``redline`` command line run in the test's own process: :func:`cli_runner`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from redline.cli.main import main

#: ``run(*args)`` → (exit status, stdout, the non-empty lines of stderr) of ``redline ARGS``.
CliRun = Callable[..., tuple[int, str, list[str]]]


def cli_runner(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CliRun:
    """A :data:`CliRun` for a test's ``monkeypatch`` and ``capsys`` fixtures. Without
    ``REDLINE_DEBUG`` (an error is one line, not a traceback); ``TQDM_DISABLE`` and
    ``OMP_WAIT_POLICY``, which ``main()`` sets otherwise for the rest of the session, are set for
    the test only."""
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")

    def run(*args: str) -> tuple[int, str, list[str]]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        captured = capsys.readouterr()
        code = exit_info.value.code
        assert isinstance(code, int)
        return code, captured.out, [line for line in captured.err.splitlines() if line.strip()]

    return run
