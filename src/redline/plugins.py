"""Plugin discovery: built-in plugins by name, third-party ones through entry points.

Each plugin kind has an entry-point group (``redline.probes``, ``redline.detectors``,
``redline.generators``, ``redline.checkers``). A third party adds a plugin with, in its own
``pyproject.toml``::

    [project.entry-points."redline.probes"]
    "mycorp.Leaks" = "mycorp_redline.probes:Leaks"

Built-ins are listed as ``"module:attribute"`` strings and imported only when used, so listing
names stays fast.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from redline.errors import RedlineError

__all__ = ["PluginRegistry", "UnknownPluginError"]


class UnknownPluginError(RedlineError, LookupError):
    """An unknown plugin name. The message names the kind and suggests close names."""


class PluginRegistry:
    """Names → lazily imported objects, for one kind of plugin."""

    def __init__(self, kind: str, group: str, builtins: dict[str, str]) -> None:
        self.kind = kind
        self.group = group
        # "module:attr" strings until first loaded, then the loaded object itself.
        self._builtins: dict[str, Any] = dict(builtins)
        self._external: dict[str, Any] | None = None

    def _entry_points(self) -> dict[str, Any]:
        if self._external is None:
            # read (and importlib.metadata imported) only when a name is not a built-in one
            from importlib.metadata import entry_points

            self._external = {ep.name: ep for ep in entry_points(group=self.group)}
        return self._external

    def register(self, name: str, target: str | Any) -> None:
        """Register ``target`` (an object or ``"module:attr"``) under ``name``."""
        self._builtins[name] = target

    def names(self) -> list[str]:
        """Every known name: built-ins first, then entry points, each sorted."""
        builtin = sorted(self._builtins)
        external = sorted(n for n in self._entry_points() if n not in self._builtins)
        return builtin + external

    def __contains__(self, name: str) -> bool:
        return name in self._builtins or name in self._entry_points()

    def load(self, name: str) -> Any:
        """The object registered as ``name``; :class:`UnknownPluginError` if there is none."""
        target = self._builtins.get(name)
        if target is None:
            ep = self._entry_points().get(name)
            if ep is None:
                raise UnknownPluginError(self.unknown_message(name))
            try:
                return ep.load()
            except Exception as exc:  # a broken third-party plugin
                raise UnknownPluginError(
                    f"{self.kind} {name!r} (entry point {ep.value}) failed to load: {exc}"
                ) from None
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
            self._builtins[name] = obj
            return obj
        return target

    def unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"unknown {self.kind} {name!r}{hint} (see 'redline list {self.kind}s')"
