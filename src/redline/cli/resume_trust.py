"""The command line's side of resuming a stored run: which reach flags (:attr:`Reach.flags`) a
``redline scan --resume`` gives again. What a run reaches and the decision to resume it are the
engine's (:mod:`redline.engine.trust`); they are re-exported here for the commands."""

from __future__ import annotations

from typing import Any

from redline.engine.trust import (
    CONFIRM_FLAG,
    Reach,
    UntrustedRun,
    check_resume,
    confirm_flags,
    describe,
    option_flag,
    refusal,
    run_reach,
    unconfirmed,
)

__all__ = [
    "CONFIRM_FLAG",
    "Reach",
    "UntrustedRun",
    "check_resume",
    "confirm_flags",
    "describe",
    "given_flags",
    "refusal",
    "run_reach",
    "unconfirmed",
]


def given_flags(
    *,
    model: str | None,
    generator_options: dict[str, Any],
    aux: dict[str, Any],
) -> set[str]:
    """The reach flags (:attr:`Reach.flags`) the command gives: ``-m`` when ``model`` is given,
    one per generator option given (``generator_options``: the flags' and ``--gen-opt``'s, not
    given ones left out) and the auxiliary flags of ``aux`` (flag → value, ``None``: not given)."""
    flags = {option_flag(key) for key, value in generator_options.items() if value is not None}
    flags |= {flag for flag, value in aux.items() if value}
    if model is not None:
        flags.add("-m/--model")
    return flags
