"""Scan configuration files (YAML) and generator options from the command line.

``redline scan --config scan.yaml`` reads a file like::

    model: openai:gpt-4o-mini
    generator:                 # options of the generator (see each family's docstring)
      base_url: https://api.openai.com/v1
      api_key_env: OPENAI_API_KEY
      max_tokens: 200
      temperature: 0.7
      timeout: 30
      max_retries: 4
      rpm: 500
    probes: [harmful, encoding]  # or "harmful,encoding"
    generations: 3
    concurrency: 32
    sample: 10
    seed: 0
    repetitions: 2
    cache: true
    lve: [lves/]                 # relative to the file's folder
    probe_options: {bias.ForcedChoice: {sample: 5}}
    judge: hf:./compliance-judge   # replaces refusal.Compliance (hf:PATH, llm[:MODEL], A+B)
    harm_judge: llm-harm           # replaces harm.Substance in the harm probes (same specs)
    executor: ray                # how attempts run: local (the default) or ray
    ray_address: 10.0.0.1:6379   # with executor: ray; left out: Ray starts on this machine
    workers: 4                   # with executor: ray: the Ray actors
    gpus_per_worker: 1           # with executor: ray: GPUs each actor holds

``trust_code`` is not read from a file (``true`` is refused; ``false`` changes nothing): LVE
checker code runs only with ``--trust-code`` on the command line that runs it.

Command-line flags override the file (``--gen-opt key=value`` and the generator flags override
``generator:``). Every mistake is one :class:`ConfigError` line naming the file (or flag) and the
key. The executor keys (``executor``, ``ray_address``, ``workers``, ``gpus_per_worker``) say how
the run executes, not what it measures: :func:`build_executor_config` makes them an
:class:`~redline.engine.executors.ExecutorConfig`, which is never part of the
:class:`~redline.engine.config.ScanConfig` or stored with the run. Secrets never go in a file:
keys go in environment variables named by ``api_key_env``, and headers refer to them as ``${VAR}``.

A configuration file comes from anyone, so it is read within bounds: at most
:data:`MAX_CONFIG_BYTES`, UTF-8, and YAML that builds only JSON-like values, nests at most 64
levels and stands for at most 100,000 values once its anchors and aliases are expanded (see
:mod:`redline.untrusted`). ``probe_options`` names known probes and only the options each takes.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from redline.datasets import FIELDS
from redline.detectors import check_detector_spec
from redline.engine.config import ScanConfig
from redline.engine.executors import (
    EXECUTORS,
    MAX_GPUS_PER_WORKER,
    MAX_WORKERS,
    ExecutorConfig,
    check_gpus_per_worker,
    check_workers,
)
from redline.errors import RedlineError, UsageError
from redline.generators import generators, known_generator_options, split_spec
from redline.probes import probes as probe_registry
from redline.untrusted import MIB, UntrustedInputError, load_yaml, option_value, read_text

__all__ = [
    "MAX_CONFIG_BYTES",
    "SCAN_KEYS",
    "ConfigError",
    "MAX_GPUS_PER_WORKER",
    "MAX_WORKERS",
    "RAY_OPTIONS",
    "build_executor_config",
    "build_scan_config",
    "check_family_options",
    "check_probe_options",
    "load_config",
    "parse_gen_opts",
    "parse_probe_options",
    "validate_generator_options",
]


class ConfigError(UsageError):
    """A configuration file or option that cannot be used (one line: where, which key, why)."""


MAX_CONFIG_BYTES = 1 * MIB
"""The largest configuration file read (a real one is a few hundred bytes)."""


def _shown(value: Any, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` characters, for messages about a value from a file."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


# -- value checks -----------------------------------------------------------------------------------
def _int(minimum: int | None = None) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer{'' if minimum is None else f' >= {minimum}'}")
        if minimum is not None and value < minimum:
            raise ValueError(f"must be an integer >= {minimum}")
        return value

    return check


def _bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _str(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value.strip()


def _executor(value: Any) -> Any:
    if value not in EXECUTORS:
        raise ValueError(f"must be {' or '.join(EXECUTORS)}")
    return value


def _mapping(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError("must be a mapping")
    return value


def _names(value: Any) -> Any:
    """A comma-separated string or a list of strings → one comma-separated string."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return ",".join(v.strip() for v in value)
    raise ValueError("must be a name, a comma-separated string or a list of names")


def _paths(value: Any) -> Any:
    if isinstance(value, str) and value.strip():
        return [value.strip()]
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        return [v.strip() for v in value]
    raise ValueError("must be a path or a list of paths")


SCAN_KEYS: dict[str, Callable[[Any], Any]] = {
    "model": _str,
    "generator": _mapping,
    "probes": _names,
    "generations": _int(1),
    "concurrency": _int(1),
    "sample": _int(1),
    "seed": _int(),
    "repetitions": _int(1),
    "cache": _bool,
    "lve": _paths,
    "trust_code": _bool,
    "probe_options": _mapping,
    "judge": _str,
    "harm_judge": _str,
    "executor": _executor,
    "ray_address": _str,
    "workers": check_workers,
    "gpus_per_worker": check_gpus_per_worker,
}
_ALIASES = {"num_repetitions": "repetitions", "generator_options": "generator", "lve_paths": "lve"}

#: Keys that were removed, each with what to write instead (one line, not "unknown key").
REMOVED_KEYS = {"processes": "use executor: ray with workers: N"}

#: The options of the Ray executor, each with its flag; they need ``executor: ray`` (``--executor ray``).
RAY_OPTIONS = {"ray_address": "--ray-address", "workers": "--workers", "gpus_per_worker": "--gpus-per-worker"}

_GENERATOR_FLAGS = frozenset(
    {"base_url", "api_key_env", "max_tokens", "temperature", "timeout", "max_retries", "rpm", "tpm"}
)
"""Generator options that ``redline scan`` also takes as flags of their own (``--base-url``...)."""

_SECRET = re.compile(r"(api[_-]?key|secret|passw(or)?d|authorization|bearer|(^|[_-])token$|credential)", re.I)
_ENV_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
#: Query parameters that carry a key although their names do not say so (Google's ``key``, an
#: Azure SAS ``sig``, an Azure Functions ``code``).
_SECRET_QUERY_NAMES = frozenset({"key", "sig", "signature", "code", "auth"})
#: The generator options that hold the endpoint's URL.
_URL_OPTIONS = ("base_url", "url")


def check_url_secrets(value: Any, where: str) -> None:
    """Raise :class:`ConfigError` when the URL ``value`` carries a secret-looking query parameter
    in the clear: the URL is stored with the run and shown in reports."""
    if not isinstance(value, str) or "?" not in value:
        return
    try:
        query = urlsplit(value).query
    except ValueError:
        return  # not a URL at all: the option's own check names the problem
    for name, item in parse_qsl(query, keep_blank_values=True):
        secret = _SECRET.search(name) or name.lower() in _SECRET_QUERY_NAMES
        if secret and item and not _ENV_REF.fullmatch(item):
            raise ConfigError(
                f"{where}: the query parameter {name!r} of the URL looks like a secret, and the URL is stored with "
                "the run: send the key in a header written as ${ENV_VAR} (or, for rest, write it as ${ENV_VAR})"
            )


def validate_generator_options(options: dict[str, Any], where: str) -> dict[str, Any]:
    """Check generator options (from ``where``: a file's ``generator:`` or ``--gen-opt``).

    The options redline knows are those the built-in families declare
    (:func:`redline.generators.known_generator_options`); each is checked by its declaration
    (:meth:`~redline.generators.GeneratorOption.check`). Other keys pass through to the generator
    (third-party families have their own), unless they look like a typo of a known one. Whether
    the chosen family takes an option is checked later, by :func:`check_family_options`.

    Raises :class:`ConfigError` for a bad value, a likely typo of a known option, a secret
    written in the clear, or a secret-looking header that is not a ``${VAR}`` reference.
    """
    if not options:  # nothing to check: the families' modules stay unimported
        return {}
    known = known_generator_options()
    checked: dict[str, Any] = {}
    for key, value in options.items():
        name = str(key)
        if _SECRET.search(name) and not name.endswith("_env"):
            raise ConfigError(
                f"{where}: {name}: secrets do not belong in configuration; put the key in an "
                "environment variable and name it with api_key_env"
            )
        spec = known.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
            if close:
                raise ConfigError(f"{where}: unknown generator option {name!r} (did you mean {close[0]!r}?)")
            checked[name] = value
            continue
        try:
            checked[name] = spec.check(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {name} {exc}, not {_shown(value)}") from None
        if name in _URL_OPTIONS:
            check_url_secrets(checked[name], f"{where}: {name}")
    for header, value in (checked.get("headers") or {}).items():
        if not isinstance(value, (str, int, float)):
            raise ConfigError(f"{where}: headers.{header} must be a string")
        if _SECRET.search(str(header)) and not _ENV_REF.search(str(value)):
            raise ConfigError(
                f"{where}: headers.{header} looks like a secret: write it as ${{ENV_VAR}} and set the variable"
            )
    return checked


def check_family_options(model: str, options: dict[str, Any], where: str) -> None:
    """Raise :class:`ConfigError` for an option the family of ``model`` does not read (built-in
    families declare theirs in ``accepted_options``; third-party families take anything), rather
    than let a misspelt or misplaced option be silently ignored. An unknown family is left to
    the generator registry to report."""
    family = split_spec(model)[0]
    try:
        accepted = getattr(generators.load(family), "accepted_options", None)
    except Exception:
        return
    if accepted is None:
        return
    for name in options:
        if name in accepted:
            continue
        close = difflib.get_close_matches(str(name), sorted(accepted), n=1, cutoff=0.75)
        hint = f"did you mean {close[0]!r}? " if close else ""
        extra = "; other request fields go in extra_body" if "extra_body" in accepted else ""
        raise ConfigError(
            f"{where}: the {family} generator does not take option {name!r} ({hint}it takes: "
            f"{', '.join(sorted(accepted))}{extra})"
        )


# -- probe options ----------------------------------------------------------------------------------
_INTERNAL_PROBE_OPTIONS = frozenset({"evaluator", "metric_calculators", "mark_definitions"})
"""Probe constructor arguments that take Python objects: not settable from a file."""


def _detector_names(value: Any) -> Any:
    names = _names(value)
    return [n.strip() for n in names.split(",") if n.strip()]


def _dataset_columns(value: Any) -> Any:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError("must be a mapping of field: column")
    unknown = [k for k in value if k not in FIELDS]
    if unknown:
        raise ValueError(f"has an unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})")
    return dict(value)


_PROBE_OPTION_CHECKS: dict[str, Callable[[Any], Any]] = {
    "sample": _int(1),
    "seed": _int(),
    "num_repetitions": _int(1),
    "detectors": _detector_names,
    "dataset": _str,
    "dataset_columns": _dataset_columns,
    "path": _str,
}
"""Options many probes share, checked here so that a wrong value is a line about the file."""


def _probe_option_names(cls: type) -> set[str] | None:
    """The keyword options the probe class takes: its ``__init__`` and, while that passes
    ``**kwargs`` on, its bases' (``None``: it takes any, as a third-party probe may)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if klass is object:
            return None
        try:
            params = inspect.signature(init).parameters
        except (TypeError, ValueError):
            return None
        names.update(
            n for n, p in params.items() if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return names
    return None


def check_probe_options(value: dict[Any, Any], where: str, base: Path | None = None) -> dict[str, dict[str, Any]]:
    """Check a configuration's ``probe_options`` (``{probe name: {option: value}}``): every name a
    known probe, every option one that probe takes, the options many probes share of the right
    kind (``detectors`` normalised to a list, judge paths and a ``path`` option relative to
    ``base``, an ``hf:`` name kept as it is). Raises
    :class:`ConfigError` naming ``where``, the probe and the option, with the closest names."""
    checked: dict[str, dict[str, Any]] = {}
    for raw_name, options in value.items():
        name = str(raw_name)
        if raw_name not in probe_registry:
            close = difflib.get_close_matches(name, probe_registry.names(), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else "see 'redline list probes'"
            raise ConfigError(f"{where}: probe_options: unknown probe {_shown(raw_name)} ({hint})")
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: probe_options.{name} must be a mapping of options, not {_shown(options)}")
        try:
            accepted = _probe_option_names(probe_registry.load(name))
        except RedlineError as exc:
            raise ConfigError(f"{where}: probe_options.{name}: {exc}") from None
        choices = sorted((accepted or set()) - _INTERNAL_PROBE_OPTIONS)
        result: dict[str, Any] = {}
        for key, option in options.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ConfigError(f"{where}: probe_options.{name}: {_shown(key)} is not an option name")
            if key in _INTERNAL_PROBE_OPTIONS or (accepted is not None and key not in accepted):
                close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigError(
                    f"{where}: probe_options.{name}: unknown option {key!r} "
                    f"({hint}options: {', '.join(choices) or 'none'})"
                )
            check = _PROBE_OPTION_CHECKS.get(key)
            if check is not None and option is not None:
                try:
                    option = check(option)
                except ValueError as exc:
                    raise ConfigError(f"{where}: probe_options.{name}.{key} {exc}, not {_shown(option)}") from None
            if key == "path" and isinstance(option, str) and base is not None and not option.startswith("hf:"):
                option = str((base / Path(option).expanduser()).resolve())  # a file a resumed run finds again
            if key == "detectors" and option is not None:
                try:
                    option = [check_detector_spec(d, base=base, check_paths=True) for d in option]
                except RedlineError as exc:
                    raise ConfigError(f"{where}: probe_options.{name}.detectors: {exc}") from None
            result[key] = option
        checked[name] = result
    return checked


def parse_probe_options(items: list[str], base: Path | None = None) -> dict[str, dict[str, Any]]:
    """``--probe-opt PROBE.KEY=VALUE`` items (``benchmark.HarmBench.path=FILE``) as
    ``{probe name: {key: value}}``, checked as a configuration's ``probe_options`` are (values
    read as YAML scalars; a ``path`` made absolute from ``base``, by default the working folder).
    Raises :class:`ConfigError` naming the item."""
    values: dict[str, dict[str, Any]] = {}
    for item in items:
        target, sep, raw = item.partition("=")
        name, dot, key = target.strip().rpartition(".")
        if not sep or not dot or not name or not key.isidentifier():
            raise ConfigError(f"--probe-opt {item!r}: expected PROBE.KEY=VALUE, e.g. benchmark.HarmBench.path=FILE")
        try:
            value = option_value(raw)
        except UntrustedInputError as exc:
            raise ConfigError(f"--probe-opt {target.strip()}: {exc}") from None
        values.setdefault(name, {})[key] = value
    return check_probe_options(values, "--probe-opt", base=base or Path.cwd())


# -- files ------------------------------------------------------------------------------------------
def load_config(path: str | Path) -> dict[str, Any]:
    """Read and check a scan configuration file; returns the scan keys it sets (``probes`` as one
    comma-separated string, ``lve`` paths made absolute from the file's folder)."""
    import yaml  # loaded when a config file is read, not at CLI start

    file = Path(path)
    try:
        text = read_text(file, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read it: {exc.strerror or exc}") from None
    except UntrustedInputError as exc:  # too large, not UTF-8, a NUL byte
        raise ConfigError(f"{file}: {exc}") from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{file}: {line}invalid YAML: {problem}") from None
    except UntrustedInputError as exc:  # nested too deeply, an alias bomb, a recursive alias
        raise ConfigError(f"{file}: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be a mapping of keys (model:, probes:, ...)")
    values: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = _ALIASES.get(str(raw_key), str(raw_key))
        check = SCAN_KEYS.get(key)
        if key in REMOVED_KEYS:
            raise ConfigError(f"{file}: {raw_key}: was removed; {REMOVED_KEYS[key]}")
        if check is None:
            close = difflib.get_close_matches(key, list(SCAN_KEYS), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(SCAN_KEYS)})"
            raise ConfigError(f"{file}: unknown key {raw_key!r}{hint}")
        if value is None:
            continue
        if key == "trust_code" and value is not False:  # code runs only on the word of the command line
            raise ConfigError(
                f"{file}: {raw_key}: is not read from a file: LVE checker code runs only with --trust-code "
                "on the command line; remove it from the file"
            )
        try:
            values[key] = check(value)
        except ValueError as exc:
            raise ConfigError(f"{file}: {raw_key} {exc}, not {_shown(value)}") from None
    ray_keys = [key for key in RAY_OPTIONS if key in values]
    if ray_keys and values.get("executor") != "ray":
        raise ConfigError(f"{file}: {', '.join(ray_keys)} {'needs' if len(ray_keys) == 1 else 'need'} executor: ray")
    if "generator" in values:
        values["generator"] = validate_generator_options(values["generator"], f"{file}: generator")
    if "probe_options" in values:
        values["probe_options"] = check_probe_options(values["probe_options"], str(file), base=file.parent)
    if "lve" in values:
        values["lve"] = [str((file.parent / p).resolve()) for p in values["lve"]]
    for key in ("judge", "harm_judge"):  # checked now; a local model path is relative to the file's folder
        if key in values:
            try:
                values[key] = check_detector_spec(values[key], base=file.parent, check_paths=True)
            except RedlineError as exc:
                raise ConfigError(f"{file}: {key}: {exc}") from None
    if values.get("generator"):
        values["_source"] = str(file)  # names the file in build_scan_config's messages
    return values


def parse_gen_opts(items: list[str]) -> dict[str, Any]:
    """``["temperature=0", "stop=[END]"]`` → ``{"temperature": 0, "stop": ["END"]}``: each value is
    read as YAML (numbers, booleans, lists, mappings), else kept as text."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ConfigError(f"--gen-opt {_shown(item)}: expected KEY=VALUE, e.g. --gen-opt temperature=0")
        try:
            options[key] = option_value(raw)
        except UntrustedInputError as exc:  # YAML past the bounds (an alias bomb): refused
            raise ConfigError(f"--gen-opt {key}: {exc}") from None
    return validate_generator_options(options, "--gen-opt")


# -- merging ----------------------------------------------------------------------------------------
def build_scan_config(
    file_values: dict[str, Any], cli_values: dict[str, Any], cli_generator: dict[str, Any]
) -> ScanConfig:
    """The :class:`~redline.engine.config.ScanConfig` of a new run: defaults, then the file, then the
    command line (``None`` in ``cli_values`` / ``cli_generator`` means "not given")."""
    merged = {**file_values, **{k: v for k, v in cli_values.items() if v is not None}}
    model = merged.get("model") or "smollm2"
    seed = merged.get("seed", 0)
    from_file = dict(file_values.get("generator") or {})
    from_cli = {k: v for k, v in cli_generator.items() if v is not None}
    check_family_options(
        model,
        {k: v for k, v in from_file.items() if k not in from_cli},
        f"{file_values.get('_source', 'configuration file')}: generator",
    )
    for name, value in from_cli.items():  # name the flag the option came from
        flag = f"--{name.replace('_', '-')}" if name in _GENERATOR_FLAGS else "--gen-opt"
        check_family_options(model, {name: value}, flag)
        if name in _GENERATOR_FLAGS:  # a --gen-opt value was checked when it was parsed
            from_cli[name] = validate_generator_options({name: value}, flag)[name]
    generator = {**from_file, **from_cli}
    family = model.split(":")[0]
    if family in ("smollm2", "hf", "llamacpp") and "seed" not in generator:
        generator["seed"] = seed
    return ScanConfig(
        model=model,
        probes=merged.get("probes"),
        generations=merged.get("generations", 1),
        concurrency=merged.get("concurrency"),
        sample=merged.get("sample"),
        seed=seed,
        generator_options=generator,
        probe_options=dict(merged.get("probe_options") or {}),
        lve_paths=list(merged.get("lve") or []),
        trust_code=cli_values.get("trust_code") is True,  # the command line's word only, never a file's
        num_repetitions=merged.get("repetitions"),
        cache=bool(merged.get("cache", True)),
        judge=merged.get("judge"),
        harm_judge=merged.get("harm_judge"),
    )


def build_executor_config(file_values: dict[str, Any], cli_values: dict[str, Any]) -> ExecutorConfig:
    """How the run executes (:class:`~redline.engine.executors.ExecutorConfig`): the file's
    ``executor`` keys, then the command line's (``cli_values``: ``executor`` and the keys of
    :data:`RAY_OPTIONS`, ``None`` meaning "not given"). A file's Ray keys come with its
    ``executor: ray`` (:func:`load_config` checks it) and are dropped when ``--executor local``
    overrides it; a Ray flag without Ray as the executor raises :class:`UsageError` naming it."""
    given = {key: value for key, value in cli_values.items() if value is not None}
    if "ray_address" in given:
        given["ray_address"] = str(given["ray_address"]).strip()
        if not given["ray_address"]:
            raise UsageError("--ray-address is empty: give HOST:PORT of a Ray cluster, or leave it out")
    kind = given.get("executor") or file_values.get("executor") or "local"
    if kind != "ray":
        flags = [flag for key, flag in RAY_OPTIONS.items() if key in given]
        if flags:
            raise UsageError(f"{', '.join(flags)} {'needs' if len(flags) == 1 else 'need'} --executor ray")
        return ExecutorConfig()
    ray = {key: file_values[key] for key in RAY_OPTIONS if key in file_values and file_values.get("executor") == "ray"}
    ray.update({key: given[key] for key in RAY_OPTIONS if key in given})
    return ExecutorConfig(kind="ray", **ray)  # checks the flags' values (the file's are checked already)
