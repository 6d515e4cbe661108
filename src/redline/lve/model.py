"""The LVE repository format: ``test.json``, its prompt, its checker and recorded instances.

Layout (as in the public LVE repository)::

    <category>/<subcategory>/<name>/<model>/test.json
    <category>/<subcategory>/<name>/<model>/test.prompt          (optional, "prompt_file")
    <category>/<subcategory>/<name>/<model>/instances/*.jsonl    (recorded instances)
    <category>/<subcategory>/<name>/<model>/checker/checker.py   (optional custom checker)

``test.json`` fields: ``description`` and ``model`` (strings), ``checker_args`` (an object with
``checker_name`` and the checker's arguments), exactly one of ``prompt`` (a string or a list of
messages), ``prompt_file`` (a file next to test.json) or ``multi_run_prompt`` (a list of
``{name, prompt, repetitions}``), and optionally ``prompt_parameters`` (names substituted as
``{name}``), ``author``, ``tags`` (``[{name, value}]``) and ``default_model_args``.

String checker arguments are templates like the prompt: for each instance, ``{name}`` takes the
instance's argument and ``{{``/``}}`` stand for literal braces.

Every problem in a file raises :class:`LVEFormatError`, one line naming the file, the line when
known, and what is wrong.

An LVE repository may come from anyone, so its files are read within bounds
(:mod:`redline.untrusted`): ``test.json`` and prompt files at most :data:`MAX_LVE_FILE_BYTES`, an
instances file at most :data:`MAX_INSTANCES_FILE_BYTES` and each of its lines at most
:data:`MAX_INSTANCE_LINE_BYTES`; UTF-8 text; JSON nested at most 64 levels. A prompt file must lie
in the LVE's folder. A bad instance line is an error on that line only: the others still load.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.lve.checkers.custom import find_custom_checker, load_custom_checker
from redline.lve.checkers.registry import UnknownCheckerError, get_checker_class
from redline.lve.errors import CustomCodeRefused, LVEFormatError, where
from redline.lve.prompt import (
    LVEMessage,
    Role,
    fill_prompt,
    parse_messages,
    parse_prompt_text,
    placeholders,
    substitute,
)
from redline.lve.sandbox.safe_eval import UnsafeLambdaError
from redline.untrusted import (
    MIB,
    NotJSONObjectError,
    UntrustedInputError,
    iter_lines,
    json_object,
    load_json,
    read_text,
)

__all__ = [
    "LVE",
    "CustomCodeRefused",
    "Instance",
    "LVEFormatError",
    "MAX_INSTANCES_FILE_BYTES",
    "MAX_INSTANCE_LINE_BYTES",
    "MAX_LVE_FILE_BYTES",
    "MultiRunPrompt",
    "find_lves",
    "load_lve",
    "parse_instance",
]


MAX_LVE_FILE_BYTES = 4 * MIB
"""The largest ``test.json`` or prompt file (the public repository's are a few kilobytes)."""

MAX_INSTANCES_FILE_BYTES = 256 * MIB
"""The largest ``instances/*.jsonl`` file."""

MAX_INSTANCE_LINE_BYTES = 16 * MIB
"""The largest instance (one line of an instances file: arguments, response, run info)."""


@dataclass
class MultiRunPrompt:
    """One prompt of a multi-run LVE, run ``repetitions`` times."""

    name: str
    prompt: list[LVEMessage]
    repetitions: int = 1


@dataclass
class Instance:
    """One recorded run of an LVE (one line of ``instances/*.jsonl``)."""

    file: Path
    line: int
    args: dict[str, Any]
    response: Any
    passed: bool
    author: str = ""
    run_info: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return where(self.file, self.line)


def parse_instance(raw: str, path: Path, line: int) -> Instance:
    """Parse one instance line; :class:`LVEFormatError` naming ``path:line`` if malformed."""
    at = where(path, line)
    try:
        data = json_object(raw)
    except NotJSONObjectError as exc:
        if exc.found is None:
            raise LVEFormatError(f"{at}: bad JSON: {exc.detail} (column {exc.column})") from None
        raise LVEFormatError(f"{at}: an instance must be a JSON object, not {exc.found}") from None
    except UntrustedInputError as exc:  # nested too deeply, a number Python refuses
        raise LVEFormatError(f"{at}: {exc.problem}") from None
    for key in ("response", "passed"):
        if key not in data:
            raise LVEFormatError(f"{at}: missing field '{key}'")
    args = data.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise LVEFormatError(f"{at}: 'args' must be an object, not {type(args).__name__}")
    if not isinstance(data["passed"], bool):
        raise LVEFormatError(f"{at}: 'passed' must be true or false, not {data['passed']!r}")
    response = data["response"]
    if not isinstance(response, (str, list, dict)):
        raise LVEFormatError(f"{at}: 'response' must be a string, a list or an object, not {type(response).__name__}")
    run_info = data.get("run_info") or {}
    if not isinstance(run_info, dict):
        raise LVEFormatError(f"{at}: 'run_info' must be an object")
    author = data.get("author")
    if author is not None and not isinstance(author, str):
        raise LVEFormatError(f"{at}: 'author' must be a string")
    return Instance(path, line, args, response, data["passed"], author or "", run_info)


@dataclass
class LVE:
    """One LVE test (a ``test.json``) with its prompt, checker arguments and metadata."""

    test_path: Path
    description: str = ""
    model: str = ""
    author: str = ""
    tags: list[dict[str, Any]] = field(default_factory=list)
    prompt_parameters: list[str] = field(default_factory=list)
    prompt: list[LVEMessage] | None = None
    multi_run_prompt: list[MultiRunPrompt] | None = None
    checker_args: dict[str, Any] = field(default_factory=dict)
    default_model_args: dict[str, Any] = field(default_factory=dict)
    root: Path | None = None
    source: str = field(default="", repr=False)
    _checker_cls: Any = field(default=None, repr=False)
    _checkers: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- identity ---------------------------------------------------------------------------------
    @property
    def directory(self) -> Path:
        return self.test_path.parent

    @property
    def name(self) -> str:
        """The LVE's path below the repository root, e.g. ``dummy/math/a_plus_b/openai--gpt-35-turbo``."""
        if self.root is not None:
            try:
                rel = self.directory.resolve().relative_to(self.root.resolve())
                if rel.parts:
                    return rel.as_posix()
            except ValueError:
                pass
        return Path(*self.directory.resolve().parts[-4:]).as_posix()

    @property
    def checker_name(self) -> str:
        return str(self.checker_args.get("checker_name", ""))

    @property
    def is_multi_run(self) -> bool:
        return self.multi_run_prompt is not None

    def line_of(self, key: str) -> int | None:
        """The line of ``test.json`` where ``"key"`` first appears (for error messages)."""
        needle = json.dumps(key)
        for number, text in enumerate(self.source.splitlines(), start=1):
            if needle in text:
                return number
        return None

    def error(self, problem: str, key: str | None = None) -> LVEFormatError:
        """An :class:`LVEFormatError` about this test.json, at the line of ``key`` (line 1, where
        the object starts, when there is no such line, e.g. for a missing field)."""
        line = (self.line_of(key) if key else None) or 1
        return LVEFormatError(f"{where(self.test_path, line)}: {problem}")

    # -- parameters and prompts -------------------------------------------------------------------
    def split_args(self, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """An instance's ``args`` split into (prompt parameters, model arguments)."""
        params = {k: v for k, v in args.items() if k in self.prompt_parameters}
        model_args = {k: v for k, v in args.items() if k not in self.prompt_parameters}
        return params, model_args

    def param_values(self, args: dict[str, Any], at: str) -> dict[str, Any]:
        """The prompt parameters out of ``args``; :class:`LVEFormatError` at ``at`` if one is missing."""
        missing = [p for p in self.prompt_parameters if p not in args]
        if missing:
            raise LVEFormatError(f"{at}: missing prompt parameter(s) {', '.join(missing)} in 'args'")
        return self.split_args(args)[0]

    def prompts_for(self, params: dict[str, Any]) -> list[list[LVEMessage]]:
        """The filled input chat(s): one for a single-run LVE, one per run (repetitions
        expanded, in order) for a multi-run LVE."""
        if self.multi_run_prompt is not None:
            return [fill_prompt(run.prompt, params) for run in self.multi_run_prompt for _ in range(run.repetitions)]
        assert self.prompt is not None
        return [fill_prompt(self.prompt, params)]

    # -- checker ----------------------------------------------------------------------------------
    def custom_checker_file(self) -> Path | None:
        return find_custom_checker(self.directory, self.root)

    def checker_class(self, trust_code: bool = False) -> type[Any]:
        """The checker class: built-in/registered, else the LVE's own ``checker/checker.py``
        (:class:`CustomCodeRefused` unless ``trust_code``)."""
        if self._checker_cls is not None:
            return self._checker_cls
        try:
            cls = get_checker_class(self.checker_name)
        except UnknownCheckerError as exc:
            custom = self.custom_checker_file()
            if custom is None:
                raise self.error(str(exc), "checker_name") from None
            cls = load_custom_checker(custom, self.checker_name, trust_code)
        self._checker_cls = cls
        return cls

    def checker_kwargs(self, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """The checker's keyword arguments, string templates filled with ``args``."""
        values = dict(args or {})
        return {
            k: substitute(v, values) if isinstance(v, str) else v
            for k, v in self.checker_args.items()
            if k != "checker_name"
        }

    def is_templated(self) -> bool:
        """Whether some string checker argument takes ``{name}`` fields from the instance."""
        return any(isinstance(v, str) and placeholders(v) for k, v in self.checker_args.items() if k != "checker_name")

    def checker(self, trust_code: bool = False, args: dict[str, Any] | None = None) -> Any:
        """The checker for an instance with ``args`` (cached per distinct arguments).

        Raises :class:`CustomCodeRefused`, or :class:`LVEFormatError` naming test.json and the
        line of the offending argument (unsafe lambda, bad regex, missing/unknown argument).
        """
        cls = self.checker_class(trust_code)
        kwargs = self.checker_kwargs(args if self.is_templated() else None)
        key = json.dumps(kwargs, sort_keys=True, default=str)
        if key not in self._checkers:
            self._checkers[key] = self._instantiate(cls, kwargs)
        return self._checkers[key]

    def _instantiate(self, cls: type[Any], kwargs: dict[str, Any]) -> Any:
        self._check_signature(cls, kwargs)
        try:
            return cls(**kwargs)
        except UnsafeLambdaError as exc:
            key = next(
                (k for k, v in kwargs.items() if isinstance(v, str) and v.lstrip().startswith("lambda")), "checker_args"
            )
            raise self.error(f"checker {self.checker_name}: refused lambda in '{key}': {exc}", key) from None
        except re.error as exc:
            key = next((k for k in kwargs if "pattern" in k or "regex" in k), "checker_args")
            raise self.error(f"checker {self.checker_name}: bad regex in '{key}': {exc}", key) from None
        except (TypeError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise self.error(f"checker {self.checker_name}: {first}", "checker_args") from None

    def _check_signature(self, cls: type[Any], kwargs: dict[str, Any]) -> None:
        try:
            params = inspect.signature(cls).parameters
        except (TypeError, ValueError):
            return
        accepts_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        required = [
            n for n, p in params.items() if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        missing = [n for n in required if n not in kwargs]
        if missing:
            raise self.error(
                f"checker {self.checker_name} needs argument(s) {', '.join(missing)} in 'checker_args'", "checker_args"
            )
        unknown = [k for k in kwargs if k not in params]
        if unknown and not accepts_any:
            raise self.error(f"checker {self.checker_name} has no argument(s) {', '.join(unknown)}", unknown[0])

    def validate_checker(self) -> None:
        """Check the checker's name and arguments without running custom code: build it now
        unless its arguments take values from instances (then each instance builds its own)."""
        try:
            cls = self.checker_class(trust_code=False)
        except CustomCodeRefused:
            return
        if not self.is_templated():
            self.checker()
        else:
            self._check_signature(cls, self.checker_kwargs())

    # -- instances --------------------------------------------------------------------------------
    def instance_files(self) -> list[Path]:
        folder = self.directory / "instances"
        return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []

    def instances(self) -> Iterator[Instance | LVEFormatError]:
        """Every recorded instance in file and line order; a malformed line yields its
        :class:`LVEFormatError` in its place so callers can report it and go on."""
        for path in self.instance_files():
            try:
                for number, raw in iter_lines(
                    path, max_line=MAX_INSTANCE_LINE_BYTES, max_file=MAX_INSTANCES_FILE_BYTES
                ):
                    if isinstance(raw, UntrustedInputError):  # too long, not UTF-8, a NUL byte
                        yield LVEFormatError(f"{where(path, number)}: {raw.problem}")
                    elif raw.strip():
                        try:
                            yield parse_instance(raw, path, number)
                        except LVEFormatError as exc:
                            yield exc
            except UntrustedInputError as exc:  # the file is too large: its later lines are not read
                yield LVEFormatError(f"{path}: {exc}")
            except OSError as exc:
                yield LVEFormatError(f"{path}: cannot read: {exc.strerror or exc}")


# -- loading ------------------------------------------------------------------------------------


def _read_json(path: Path) -> tuple[Any, str]:
    try:
        text = read_text(path, MAX_LVE_FILE_BYTES)
        return load_json(text), text
    except FileNotFoundError:
        raise LVEFormatError(f"{path}: no such file") from None
    except OSError as exc:
        raise LVEFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise LVEFormatError(f"{path}:{exc.lineno}: bad JSON: {exc.msg} (column {exc.colno})") from None
    except UntrustedInputError as exc:  # too large, not UTF-8, a NUL byte, nested too deeply
        raise LVEFormatError(f"{where(path, exc.line)}: {exc.problem}") from None


def _field(lve: LVE, data: dict[str, Any], key: str, kind: type | tuple[type, ...], required: bool = False) -> Any:
    if key not in data or data[key] is None:
        if required:
            raise lve.error(f"missing field '{key}'")
        return None
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        names = names.replace("str", "a string").replace("dict", "an object").replace("list", "a list")
        raise lve.error(f"'{key}' must be {names}, not {type(value).__name__}", key)
    return value


def _prompt(lve: LVE, value: Any, key: str) -> list[LVEMessage]:
    at = where(lve.test_path, lve.line_of(key))
    if isinstance(value, str):
        return [LVEMessage(Role.user, value)]
    return parse_messages(value, f"{at}: '{key}'")


def _prompt_file(lve: LVE, name: str, key: str) -> list[LVEMessage]:
    path = lve.directory / name
    try:  # a file of the LVE's own folder, not any file of the machine (links followed)
        inside = path.resolve().is_relative_to(lve.directory.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        inside = False
    if not inside:
        raise lve.error(f"{key} {name!r}: the prompt file must be in the LVE's folder", key)
    try:
        text = read_text(path, MAX_LVE_FILE_BYTES)
    except OSError as exc:
        reason = "no such file" if isinstance(exc, FileNotFoundError) else (exc.strerror or str(exc))
        raise lve.error(f"{key} {name!r}: {reason}", key) from None
    except UntrustedInputError as exc:  # too large, not UTF-8
        raise LVEFormatError(f"{where(path, exc.line)}: {exc.problem}") from None
    return parse_prompt_text(text, path)


def _multi_run(lve: LVE, value: Any) -> list[MultiRunPrompt]:
    runs = value if isinstance(value, list) else [value]
    if not runs:
        raise lve.error("'multi_run_prompt' is empty", "multi_run_prompt")
    result = []
    for number, run in enumerate(runs, start=1):
        if not isinstance(run, dict):
            raise lve.error(f"multi_run_prompt entry {number} must be an object", "multi_run_prompt")
        reps = run.get("repetitions", run.get("repetition", 1))
        if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
            raise lve.error(f"multi_run_prompt entry {number}: 'repetitions' must be a positive integer", "repetitions")
        if (run.get("prompt") is None) == (run.get("prompt_file") is None):
            raise lve.error(
                f"multi_run_prompt entry {number} needs exactly one of 'prompt', 'prompt_file'", "multi_run_prompt"
            )
        if run.get("prompt_file") is not None:
            if not isinstance(run["prompt_file"], str):
                raise lve.error(f"multi_run_prompt entry {number}: 'prompt_file' must be a string", "prompt_file")
            messages = _prompt_file(lve, run["prompt_file"], "prompt_file")
        else:
            messages = _prompt(lve, run["prompt"], "multi_run_prompt")
        result.append(MultiRunPrompt(str(run.get("name", number)), messages, reps))
    return result


def load_lve(test_path: str | Path, root: Path | None = None) -> LVE:
    """Parse and validate one ``test.json`` (or the folder holding it), including its prompt
    file and its checker's name and arguments. Custom checker code is not imported here.

    Raises :class:`LVEFormatError` for any problem.
    """
    path = Path(test_path)
    if path.is_dir():
        path = path / "test.json"
    data, text = _read_json(path)
    lve = LVE(test_path=path, root=root, source=text)
    if not isinstance(data, dict):
        raise lve.error(f"test.json must hold a JSON object, not {type(data).__name__}")
    lve.description = _field(lve, data, "description", str, required=True)
    lve.model = _field(lve, data, "model", str, required=True)
    lve.author = _field(lve, data, "author", str) or ""
    lve.tags = _field(lve, data, "tags", list) or []
    if not all(isinstance(t, dict) for t in lve.tags):
        raise lve.error('\'tags\' must be a list of objects like {"name": ..., "value": ...}', "tags")
    params = _field(lve, data, "prompt_parameters", list) or []
    if not all(isinstance(p, str) and p for p in params):
        raise lve.error("'prompt_parameters' must be a list of names", "prompt_parameters")
    if params == ["<please fill in>"]:
        raise lve.error("'prompt_parameters' has not been filled in", "prompt_parameters")
    lve.prompt_parameters = list(params)
    lve.default_model_args = _field(lve, data, "default_model_args", dict) or {}
    checker_args = _field(lve, data, "checker_args", dict, required=True)
    name = checker_args.get("checker_name")
    if not isinstance(name, str) or not name or name == "<please fill in>":
        raise lve.error("'checker_args' needs a 'checker_name'", "checker_args")
    lve.checker_args = dict(checker_args)

    sources = [k for k in ("prompt", "prompt_file", "multi_run_prompt") if data.get(k) is not None]
    if len(sources) != 1:
        found = ", ".join(sources) if sources else "none"
        raise lve.error(
            f"needs exactly one of 'prompt', 'prompt_file', 'multi_run_prompt' (found {found})",
            sources[1] if len(sources) > 1 else None,
        )
    source = sources[0]
    if source == "prompt":
        if not isinstance(data["prompt"], (str, list)):
            raise lve.error(
                f"'prompt' must be a string or a list of messages, not {type(data['prompt']).__name__}", "prompt"
            )
        lve.prompt = _prompt(lve, data["prompt"], "prompt")
    elif source == "prompt_file":
        lve.prompt = _prompt_file(lve, _field(lve, data, "prompt_file", str), "prompt_file")
    else:
        lve.multi_run_prompt = _multi_run(lve, data["multi_run_prompt"])
    lve.validate_checker()
    return lve


def find_lves(path: str | Path) -> list[Path]:
    """Every ``test.json`` at or below ``path`` (a test.json, an LVE folder or a repository),
    sorted; hidden folders (``.git``) are skipped."""
    root = Path(path)
    if not root.exists():
        raise LVEFormatError(f"{root}: no such file or folder")
    if root.is_file():
        return [root]
    return sorted(
        p for p in root.rglob("test.json") if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
