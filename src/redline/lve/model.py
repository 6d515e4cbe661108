"""The LVE repository format: ``test.json``, its prompt, its checker and recorded instances.

Layout (as in the public LVE repository)::

    <category>/<subcategory>/<name>/<model>/test.json
    <category>/<subcategory>/<name>/<model>/test.prompt        (optional, via "prompt_file")
    <category>/<subcategory>/<name>/<model>/instances/*.jsonl  (recorded instances)
    <category>/<subcategory>/<name>/checker/checker.py         (optional custom checker)

Every problem in a file raises :class:`LVEFormatError` with one line naming the file (and line)
and what is wrong.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from redline.lve.prompt import LVEMessage, Role, messages_from_json, substitute

__all__ = ["LVEFormatError", "CustomCodeRefused", "LVE", "Instance", "MultiRunPrompt", "find_lves", "load_lve"]

SAMPLING_ARGS = {"temperature", "top_p", "max_tokens", "top_k", "seed", "n", "presence_penalty", "frequency_penalty"}


class LVEFormatError(ValueError):
    """A malformed LVE file; the message names the file, line and problem on one line."""


class CustomCodeRefused(RuntimeError):
    """An LVE's own checker.py would have to run, and --trust-code was not given."""


@dataclass
class MultiRunPrompt:
    name: str
    prompt: list[LVEMessage]
    repetitions: int = 1


@dataclass
class Instance:
    """One recorded run of an LVE (a line of ``instances/*.jsonl``)."""

    file: Path
    line: int
    args: dict[str, Any]
    response: Any
    passed: bool
    author: str = ""
    run_info: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _where(path: Path, line: int | None = None) -> str:
    return f"{path}:{line}" if line else str(path)


@dataclass
class LVE:
    """One LVE test (``test.json``) with its prompt, checker arguments and metadata."""

    test_path: Path
    description: str = ""
    model: str = ""
    author: str = ""
    tags: list[dict] = field(default_factory=list)
    prompt_parameters: list[str] = field(default_factory=list)
    prompt: list[LVEMessage] | None = None
    multi_run_prompt: list[MultiRunPrompt] | None = None
    checker_args: dict[str, Any] = field(default_factory=dict)
    root: Path | None = None

    @property
    def directory(self) -> Path:
        return self.test_path.parent

    @property
    def name(self) -> str:
        """The LVE's path relative to the repository root, e.g. ``dummy/math/a_plus_b/openai--gpt-35-turbo``."""
        if self.root is not None:
            try:
                rel = self.directory.resolve().relative_to(self.root.resolve())
                if str(rel) != ".":
                    return rel.as_posix()
            except ValueError:
                pass
        return "/".join(self.directory.resolve().parts[-4:])

    @property
    def checker_name(self) -> str:
        return str(self.checker_args.get("checker_name", ""))

    @property
    def is_multi_run(self) -> bool:
        return self.multi_run_prompt is not None

    # -- prompts ---------------------------------------------------------------------------------
    def fill(self, messages: list[LVEMessage], params: dict[str, Any]) -> list[LVEMessage]:
        return [
            LVEMessage(m.role, substitute(m.content, params) if m.content is not None else None, m.variable,
                       substitute(m.image_url, params) if m.image_url else None)
            for m in messages
        ]

    def prompts_for(self, params: dict[str, Any]) -> list[list[LVEMessage]]:
        """The filled input chat(s): one for a single-run LVE, one per run for a multi-run one."""
        if self.multi_run_prompt is not None:
            return [self.fill(r.prompt, params) for r in self.multi_run_prompt for _ in range(r.repetitions)]
        assert self.prompt is not None
        return [self.fill(self.prompt, params)]

    def param_values(self, args: dict[str, Any], where: str) -> dict[str, Any]:
        """The prompt parameters out of an instance's ``args`` (sampling arguments dropped)."""
        missing = [p for p in self.prompt_parameters if p not in args]
        if missing:
            raise LVEFormatError(f"{where}: missing prompt parameter(s) {', '.join(missing)} in 'args'")
        if self.prompt_parameters:
            return {p: args[p] for p in self.prompt_parameters}
        return {k: v for k, v in args.items() if k not in SAMPLING_ARGS}

    # -- checker ---------------------------------------------------------------------------------
    def custom_checker_file(self) -> Path | None:
        """``checker/checker.py`` in the LVE folder or one of its parents (up to the root)."""
        folder = self.directory
        stop = self.root.resolve() if self.root else None
        for _ in range(4):
            candidate = folder / "checker" / "checker.py"
            if candidate.is_file():
                return candidate
            if stop is not None and folder.resolve() == stop:
                break
            folder = folder.parent
        return None

    def checker(self, trust_code: bool = False):
        """Instantiate this LVE's checker from ``checker_args``.

        Raises :class:`LVEFormatError` (unknown checker, bad arguments, bad regex, refused lambda)
        or :class:`CustomCodeRefused` (custom checker.py without ``trust_code``).
        """
        from redline.checkers.base import get_checker_class
        from redline.checkers.safe_eval import UnsafeLambdaError

        where = str(self.test_path)
        name = self.checker_name
        if not name:
            raise LVEFormatError(f"{where}: 'checker_args' needs a 'checker_name'")
        kwargs = {k: v for k, v in self.checker_args.items() if k != "checker_name"}
        custom = self.custom_checker_file()
        cls = None
        try:
            cls = get_checker_class(name)
        except KeyError:
            if custom is None:
                raise LVEFormatError(f"{where}: unknown checker {name!r}") from None
        if cls is None:
            if not trust_code:
                raise CustomCodeRefused(f"custom checker {name} in {custom} runs only with --trust-code")
            cls = _load_custom_checker(custom, name, where)
        try:
            return cls(**kwargs)
        except UnsafeLambdaError as exc:
            raise LVEFormatError(f"{where}: refused lambda: {exc}") from None
        except re.error as exc:
            raise LVEFormatError(f"{where}: bad regex in checker {name}: {exc}") from None
        except TypeError as exc:
            raise LVEFormatError(f"{where}: bad arguments for checker {name}: {exc}") from None
        except ValueError as exc:
            raise LVEFormatError(f"{where}: checker {name}: {exc}") from None

    # -- instances -------------------------------------------------------------------------------
    def instance_files(self) -> list[Path]:
        folder = self.directory / "instances"
        return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []

    def instances(self) -> Iterator[Instance | LVEFormatError]:
        """Every recorded instance; a malformed line yields an :class:`LVEFormatError` in its
        place so callers can report it and go on."""
        for path in self.instance_files():
            with path.open(encoding="utf-8") as handle:
                for number, raw in enumerate(handle, start=1):
                    if not raw.strip():
                        continue
                    try:
                        yield parse_instance(raw, path, number)
                    except LVEFormatError as exc:
                        yield exc


def parse_instance(raw: str, path: Path, line: int) -> Instance:
    where = _where(path, line)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LVEFormatError(f"{where}: bad JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise LVEFormatError(f"{where}: an instance must be a JSON object")
    for key in ("response", "passed"):
        if key not in data:
            raise LVEFormatError(f"{where}: missing field {key!r}")
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise LVEFormatError(f"{where}: 'args' must be an object")
    if not isinstance(data["passed"], bool):
        raise LVEFormatError(f"{where}: 'passed' must be true or false")
    response = data["response"]
    if not isinstance(response, (str, list, dict)):
        raise LVEFormatError(f"{where}: 'response' must be a string, a list or an object")
    return Instance(path, line, args, response, data["passed"], str(data.get("author") or ""), data.get("run_info") or {})


def _read_prompt_file(path: Path, where: str) -> list[LVEMessage]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LVEFormatError(f"{where}: cannot read prompt_file {path.name}: {exc.strerror}") from None
    lines = [l for l in text.splitlines() if l.strip()]
    try:
        items = [json.loads(l) for l in lines]
        if items and all(isinstance(i, dict) for i in items):
            return messages_from_json(items, str(path))
    except json.JSONDecodeError:
        pass
    try:
        whole = json.loads(text)
        if isinstance(whole, dict):
            return messages_from_json([whole], str(path))
        if isinstance(whole, list):
            return messages_from_json(whole, str(path))
    except json.JSONDecodeError:
        pass
    return [LVEMessage(Role.user, text)]


def load_lve(test_path: str | Path, root: Path | None = None) -> LVE:
    """Parse and validate one ``test.json``."""
    path = Path(test_path)
    if path.is_dir():
        path = path / "test.json"
    where = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LVEFormatError(f"{where}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise LVEFormatError(f"{where}:{exc.lineno}: bad JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise LVEFormatError(f"{where}: test.json must hold a JSON object")

    def typed(key: str, kind: type | tuple, default: Any) -> Any:
        value = data.get(key, default)
        if value is not None and not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise LVEFormatError(f"{where}: '{key}' must be {names}, not {type(value).__name__}")
        return value

    checker_args = typed("checker_args", dict, None)
    if checker_args is None:
        raise LVEFormatError(f"{where}: missing field 'checker_args'")
    params = typed("prompt_parameters", list, []) or []
    if not all(isinstance(p, str) for p in params):
        raise LVEFormatError(f"{where}: 'prompt_parameters' must be a list of strings")
    lve = LVE(
        test_path=path,
        description=typed("description", str, "") or "",
        model=typed("model", str, "") or "",
        author=typed("author", str, "") or "",
        tags=typed("tags", list, []) or [],
        prompt_parameters=params,
        checker_args=copy.deepcopy(checker_args),
        root=root,
    )
    sources = [k for k in ("prompt", "prompt_file", "multi_run_prompt") if data.get(k) is not None]
    if len(sources) != 1:
        raise LVEFormatError(f"{where}: needs exactly one of 'prompt', 'prompt_file', 'multi_run_prompt' (found {', '.join(sources) or 'none'})")
    if "prompt" in sources:
        prompt = data["prompt"]
        if isinstance(prompt, str):
            lve.prompt = [LVEMessage(Role.user, prompt)]
        elif isinstance(prompt, list):
            lve.prompt = messages_from_json(prompt, where)
        else:
            raise LVEFormatError(f"{where}: 'prompt' must be a list of messages or a string")
    elif "prompt_file" in sources:
        name = typed("prompt_file", str, None)
        lve.prompt = _read_prompt_file(path.parent / name, where)
    else:
        runs = typed("multi_run_prompt", list, None)
        lve.multi_run_prompt = []
        for i, run in enumerate(runs):
            if not isinstance(run, dict) or "prompt" not in run:
                raise LVEFormatError(f"{where}: multi_run_prompt entry {i + 1} needs a 'prompt'")
            reps = run.get("repetitions", 1)
            if not isinstance(reps, int) or reps < 1:
                raise LVEFormatError(f"{where}: multi_run_prompt entry {i + 1}: 'repetitions' must be a positive integer")
            prompt = run["prompt"]
            messages = [LVEMessage(Role.user, prompt)] if isinstance(prompt, str) else messages_from_json(prompt, f"{where} (multi_run_prompt {i + 1})")
            lve.multi_run_prompt.append(MultiRunPrompt(str(run.get("name", i)), messages, reps))
    if lve.prompt is not None and not lve.prompt:
        raise LVEFormatError(f"{where}: the prompt is empty")
    return lve


def find_lves(path: str | Path) -> list[Path]:
    """Every ``test.json`` at or below ``path`` (a test.json, an LVE folder or a repository)."""
    root = Path(path)
    if not root.exists():
        raise LVEFormatError(f"{root}: no such file or folder")
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("test.json") if ".git" not in p.parts)


def _load_custom_checker(path: Path, name: str, where: str):
    """Import ``checker.py`` (only with --trust-code). Checkers written for the LVE tools import
    ``lve.checkers``/``lve.prompt``: those names are mapped onto redline's classes."""
    from redline.checkers import base as checker_base
    from redline.checkers import lve_checkers
    from redline.lve import prompt as lve_prompt

    shim_checkers = types.ModuleType("lve.checkers")
    shim_checkers.__dict__.update({k: getattr(lve_checkers, k) for k in lve_checkers.__all__})
    shim_checkers.BaseChecker = checker_base.BaseChecker
    shim_checkers.MultiRunBaseChecker = checker_base.MultiRunBaseChecker
    shim_checkers.base = checker_base
    modules = {"lve": types.ModuleType("lve"), "lve.checkers": shim_checkers, "lve.checkers.base": checker_base, "lve.prompt": lve_prompt}
    for key, module in modules.items():
        sys.modules.setdefault(key, module)
    spec = importlib.util.spec_from_file_location(f"redline_lve_custom_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as exc:
        raise LVEFormatError(f"{path}: custom checker failed to load: {type(exc).__name__}: {exc}") from None
    cls = getattr(module, name, None)
    if cls is None:
        raise LVEFormatError(f"{where}: checker {name!r} is not defined in {path}")
    return cls
