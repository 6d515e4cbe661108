"""The LVE repository format: load, run, record and verify LVEs (language model
vulnerabilities and exposures, github.com/lve-org/lve).

* :mod:`redline.lve.model` — ``test.json`` and instances (:func:`load_lve`, :func:`find_lves`);
* :mod:`redline.lve.prompt` — messages and ``{name}`` substitution;
* :mod:`redline.lve.runner` — run an LVE against a generator and record instances;
* :mod:`redline.lve.verify` — re-check recorded instances;
* :mod:`redline.lve.isolation` — checkers in worker processes, within :mod:`redline.lve.limits`.

The names below are those modules' (``from redline.lve import load_lve``), each loaded when first
used: a module of the package (the checker limits a scan sets, say) is imported without loading
the format and its checkers.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each name the package gives, and the module that defines it.
_EXPORTS = {
    "CustomCodeRefused": "redline.lve.errors",
    "LVEFormatError": "redline.lve.errors",
    "LVE": "redline.lve.model",
    "Instance": "redline.lve.model",
    "MultiRunPrompt": "redline.lve.model",
    "find_lves": "redline.lve.model",
    "load_lve": "redline.lve.model",
    "parse_instance": "redline.lve.model",
    "LVEMessage": "redline.lve.prompt",
    "Role": "redline.lve.prompt",
    "substitute": "redline.lve.prompt",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'redline.lve' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
