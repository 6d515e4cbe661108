"""Custom checkers packaged with an LVE (``checker/checker.py``), run only when trusted.

A custom checker is arbitrary Python from a shared repository, so it is imported only when the
user passes ``--trust-code``; otherwise :class:`~redline.lve.errors.CustomCodeRefused` is raised
and callers skip the LVE with that reason.

Checkers written for the LVE tools import ``lve.checkers``, ``lve.checkers.base``,
``lve.prompt`` and ``lve.utils.importutils``; while ``checker.py`` is imported those module
names are mapped onto redline's own classes (and restored afterwards), so such files run
unchanged. Classes defined there are not added to the global checker registry.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from redline.lve import prompt
from redline.lve.checkers import base
from redline.lve.checkers.registry import BUILTIN_CHECKERS, CUSTOM_MODULE_PREFIX, get_checker_class
from redline.lve.errors import CustomCodeRefused, LVEFormatError

__all__ = ["CUSTOM_CHECKER_FILE", "CustomCodeRefused", "find_custom_checker", "load_custom_checker"]

CUSTOM_CHECKER_FILE = Path("checker") / "checker.py"


def find_custom_checker(lve_dir: Path, root: Path | None = None) -> Path | None:
    """``checker/checker.py`` in the LVE's folder, or in its parent (the folder shared by the
    LVE's per-model variants) when that is still inside ``root``."""
    folders = [lve_dir]
    parent = lve_dir.parent
    if root is None or parent.resolve().is_relative_to(root.resolve()):
        folders.append(parent)
    for folder in folders:
        candidate = folder / CUSTOM_CHECKER_FILE
        if candidate.is_file():
            return candidate
    return None


def ensure_installed(package: str, pip_name: str | None = None, version: str | None = None) -> None:
    """Stand-in for ``lve.utils.importutils.ensure_installed``: fail clearly instead of
    installing anything."""
    try:
        importlib.import_module(package)
    except ImportError:
        raise ImportError(
            f"the custom checker needs the package {pip_name or package!r}, which is not installed"
        ) from None


def _shim_modules() -> dict[str, types.ModuleType]:
    checkers = types.ModuleType("lve.checkers")
    for name in BUILTIN_CHECKERS:
        setattr(checkers, name, get_checker_class(name))
    checkers.BaseChecker = base.BaseChecker  # type: ignore[attr-defined]
    checkers.MultiRunBaseChecker = base.MultiRunBaseChecker  # type: ignore[attr-defined]
    checkers.base = base  # type: ignore[attr-defined]
    lve_prompt = types.ModuleType("lve.prompt")
    lve_prompt.Role = prompt.Role  # type: ignore[attr-defined]
    lve_prompt.Message = prompt.LVEMessage  # type: ignore[attr-defined]
    utils = types.ModuleType("lve.utils")
    importutils = types.ModuleType("lve.utils.importutils")
    importutils.ensure_installed = ensure_installed  # type: ignore[attr-defined]
    utils.importutils = importutils  # type: ignore[attr-defined]
    root = types.ModuleType("lve")
    root.checkers, root.prompt, root.utils = checkers, lve_prompt, utils  # type: ignore[attr-defined]
    return {
        "lve": root,
        "lve.checkers": checkers,
        "lve.checkers.base": base,
        "lve.prompt": lve_prompt,
        "lve.utils": utils,
        "lve.utils.importutils": importutils,
    }


@contextmanager
def _lve_modules() -> Iterator[None]:
    shims = _shim_modules()
    saved = {name: sys.modules.get(name) for name in shims}
    sys.modules.update(shims)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load_custom_checker(path: Path, name: str, trust_code: bool) -> type[Any]:
    """The class ``name`` defined in the custom checker file ``path``.

    Raises :class:`CustomCodeRefused` unless ``trust_code``; :class:`LVEFormatError` (one line
    naming the file) if the file fails to import or does not define ``name``.
    """
    if not trust_code:
        raise CustomCodeRefused(f"custom checker {name} ({path}) runs only with --trust-code")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"{CUSTOM_MODULE_PREFIX}{digest}"
    if module_name in sys.modules:
        module = sys.modules[module_name]
    else:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise LVEFormatError(f"{path}: cannot import the custom checker")
        module = importlib.util.module_from_spec(spec)
        try:
            with _lve_modules():
                spec.loader.exec_module(module)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise LVEFormatError(f"{path}: custom checker failed to import: {type(exc).__name__}: {first}") from None
        sys.modules[module_name] = module
    found = getattr(module, name, None)
    if not isinstance(found, type):
        raise LVEFormatError(f"{path}: defines no checker class {name!r}")
    cls: type[Any] = found  # a class of the LVE's own code: its attributes are not known here
    cls.custom = True
    return cls
