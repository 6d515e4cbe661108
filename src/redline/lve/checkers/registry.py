"""Find LVE checker classes by the name ``checker_args.checker_name`` uses (``"RegexChecker"``).

Three sources, in order:

1. the built-in checkers (imported on first use, so listing names stays fast);
2. every other :class:`~redline.lve.checkers.base.BaseChecker` subclass defined in the process
   (registered by class name when the class is created, as the LVE tools do);
3. third-party checkers from the ``redline.checkers`` entry-point group, looked up (and
   imported) only when a name is not found otherwise. A package adds one with::

       [project.entry-points."redline.checkers"]
       MyChecker = "my_package.checkers:MyChecker"

Classes loaded from an LVE's own ``checker/checker.py`` are not registered: they belong to
that LVE only (see :mod:`redline.lve.checkers.custom`).
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from redline.errors import RedlineError

__all__ = [
    "BUILTIN_CHECKERS",
    "ENTRY_POINT_GROUP",
    "UnknownCheckerError",
    "checker_names",
    "get_checker_class",
    "register_checker",
    "register_subclass",
]

ENTRY_POINT_GROUP = "redline.checkers"
CUSTOM_MODULE_PREFIX = "redline_lve_custom_"

#: Built-in checkers by name → ``"module:Class"``.
BUILTIN_CHECKERS: dict[str, str] = {
    "LambdaChecker": "redline.lve.checkers.lambdas:LambdaChecker",
    "NumberChecker": "redline.lve.checkers.lambdas:NumberChecker",
    "MultiRunLambdaChecker": "redline.lve.checkers.lambdas:MultiRunLambdaChecker",
    "RegexChecker": "redline.lve.checkers.regex:RegexChecker",
    "ExactMatchChecker": "redline.lve.checkers.match:ExactMatchChecker",
    "FuzzyMatchChecker": "redline.lve.checkers.match:FuzzyMatchChecker",
    "RefuseChecker": "redline.lve.checkers.match:RefuseChecker",
    "MonotonicityChecker": "redline.lve.checkers.consistency:MonotonicityChecker",
    "MonotoncityChecker": "redline.lve.checkers.consistency:MonotoncityChecker",
    "ToxicityChecker": "redline.lve.checkers.classifier:ToxicityChecker",
    "BiasChecker": "redline.lve.checkers.classifier:BiasChecker",
    "PII_Checker": "redline.lve.checkers.pii:PII_Checker",
}

_REGISTERED: dict[str, type[Any]] = {}
_ENTRY_POINTS: dict[str, Any] | None = None


class UnknownCheckerError(RedlineError, LookupError):
    """No checker has this name; the message suggests close names."""


def register_checker(name: str, cls: type[Any]) -> None:
    """Register ``cls`` under ``name`` (replacing a previous registration of that name)."""
    _REGISTERED[name] = cls


def register_subclass(cls: type[Any]) -> None:
    """Called for every new checker class: register it by class name unless it is a base class,
    private, a custom LVE checker, or would shadow a built-in."""
    name = cls.__name__
    if "BaseChecker" in name or name.startswith("_") or cls.__module__.startswith(CUSTOM_MODULE_PREFIX):
        return
    builtin = BUILTIN_CHECKERS.get(name)
    if builtin is not None and builtin != f"{cls.__module__}:{cls.__qualname__}":
        return
    _REGISTERED.setdefault(name, cls)


def _entry_points() -> dict[str, Any]:
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        # read (and importlib.metadata imported) only when a name is not a built-in one
        from importlib.metadata import entry_points

        _ENTRY_POINTS = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return _ENTRY_POINTS


def checker_names() -> list[str]:
    """Every known checker name: built-ins, then other registered classes and entry points."""
    others = (set(_REGISTERED) | set(_entry_points())) - set(BUILTIN_CHECKERS)
    return sorted(BUILTIN_CHECKERS) + sorted(others)


def get_checker_class(name: str) -> type[Any]:
    """The checker class named ``name``; :class:`UnknownCheckerError` if there is none, or if a
    third-party entry point fails to import (the message names it)."""
    target = BUILTIN_CHECKERS.get(name)
    if target is not None:
        module, _, attr = target.partition(":")
        cls: Any = getattr(importlib.import_module(module), attr)
        return cls
    if name in _REGISTERED:
        return _REGISTERED[name]
    ep = _entry_points().get(name)
    if ep is not None:
        try:
            cls = ep.load()
        except Exception as exc:
            raise UnknownCheckerError(f"checker {name!r} (entry point {ep.value}) failed to load: {exc}") from None
        _REGISTERED[name] = cls
        return cls
    close = difflib.get_close_matches(name, checker_names(), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownCheckerError(f"unknown checker {name!r}{hint}")
