"""What a stored run reaches outside this process (endpoints, headers, environment variables), and
the decision to resume it: only what the resuming caller confirmed is sent, and checker code runs
only on its word.

A run's settings are stored with it, and a store may come from someone else: resuming must not
send to an endpoint, or read an environment variable into a request, that the resuming command
did not confirm. A run reaches out when a model it uses (the model under test, or an attacker,
judge or converter model) is not run in this process. Such a run is confirmed by
``--trust-settings`` (``trust_settings=True`` in :func:`redline.engine.scan`), or on the command
line by giving again every setting that says where requests go and what they carry
(:attr:`Reach.flags`); see ``docs/scanning.md``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from redline.detectors.specs import judge_model_of
from redline.engine.config import ScanConfig
from redline.errors import RedlineError, UsageError
from redline.generators import BUILTIN_GENERATORS, generators, split_spec
from redline.generators.transport.remote import RemoteGenerator
from redline.generators.transport.secrets import ENV_REFERENCE, mask_url
from redline.store import Store
from redline.textsafety import visible

__all__ = [
    "CONFIRM_FLAG",
    "Reach",
    "UntrustedRun",
    "check_resume",
    "confirm_flags",
    "describe",
    "option_flag",
    "refusal",
    "resume_flags",
    "run_reach",
    "unconfirmed",
]

#: The flag that confirms a resumed run's stored endpoints, headers and environment variables.
CONFIRM_FLAG = "--trust-settings"

#: The flag of each generator option that has one (the others are given with ``--gen-opt KEY=``).
_OPTION_FLAGS = {"base_url": "--base-url", "api_key_env": "--api-key-env"}
#: Generator options that say where requests go or what they carry, whatever their value.
_REACH_OPTIONS = ("base_url", "url", "api_key_env", "headers")
#: The auxiliary models of a run, with their flags.
_ROLES = (
    ("attacker_model", "attacker model", "--attacker-model"),
    ("judge_model", "judge model", "--judge-model"),
    ("converter_model", "converter model", "--converter-model"),
)


class UntrustedRun(UsageError):
    """A stored run was not resumed: the resuming caller did not confirm what it reaches outside
    this process, or the checker code it runs."""


@dataclass(frozen=True)
class Reach:
    """One model of a run that is not run in this process: where it sends and what it reads."""

    #: ``model``, ``attacker model``, ``judge model``, ``converter model`` or ``judge``.
    role: str
    #: The generator spec (``openai:gpt-4o-mini``).
    spec: str
    #: The URL requests go to (a password masked), or what is known of it.
    endpoint: str
    #: Extra headers by name, each with the environment variables its value reads.
    headers: dict[str, list[str]] = field(default_factory=dict)
    #: Every environment variable read into a request (the key's, the headers', the URL's).
    variables: list[str] = field(default_factory=list)
    #: The options that set this reach, as flags: given again with the run's values, they confirm it.
    flags: list[str] = field(default_factory=list)


def _shown(value: Any) -> str:
    """``value`` (from a store) printable on one line."""
    return visible(str(value)).replace("\n", "\\n")


def _references(value: Any) -> list[str]:
    """The ``${VAR}`` names in every string of ``value`` (nested lists and mappings included)."""
    found: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            found.extend(ENV_REFERENCE.findall(node))
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return found


def option_flag(key: str) -> str:
    """The flag that gives the generator option ``key`` (``--gen-opt KEY`` for one without its own)."""
    return _OPTION_FLAGS.get(key, f"--gen-opt {key}")


def _model_reach(role: str, spec: str, options: dict[str, Any], flags: list[str]) -> Reach | None:
    """The :class:`Reach` of the model ``spec`` built with ``options``; ``None`` for a model run
    in this process (a local or test family) or a family the registry does not know (the scan
    refuses it before anything is sent)."""
    family = split_spec(spec)[0]
    try:
        cls = generators.load(family)
    except Exception:
        return None
    remote = isinstance(cls, type) and issubclass(cls, RemoteGenerator)
    if getattr(cls, "local", False) or (not remote and family in BUILTIN_GENERATORS):
        return None
    options = options if isinstance(options, dict) else {}
    url = options.get("url") or options.get("base_url") or (getattr(cls, "default_base_url", None) if remote else None)
    if url:
        endpoint = mask_url(str(url))
    elif remote:
        endpoint = f"the {family} provider's own endpoint"
    else:
        endpoint = f"unknown (the third-party family {family})"
    variables: list[str] = []
    key_env = options.get("api_key_env") or getattr(cls, "default_key_env", None)
    if key_env:
        variables.append(str(key_env))
    elif family == "litellm":
        variables.append("the provider's own key variable")
    raw_headers = options.get("headers")
    headers = (
        {str(name): _references(value) for name, value in raw_headers.items()} if isinstance(raw_headers, dict) else {}
    )
    variables += _references(options)
    referring = [key for key, value in options.items() if key not in _REACH_OPTIONS and _references(value)]
    own = [option_flag(key) for key in (*_REACH_OPTIONS, *referring) if options.get(key) is not None]
    unique = list(dict.fromkeys(variables))
    return Reach(role, spec, endpoint, headers, unique, list(dict.fromkeys([*flags, *own])))


def _judge_specs(config: ScanConfig) -> list[tuple[str, str]]:
    """The models of the LLM judges (``llm:SPEC``, ``llm-harm:SPEC``) of ``config`` (``--judge``,
    ``--harm-judge``, probes' ``detectors`` options) as (generator spec, flag)."""
    found: list[tuple[str, str]] = []
    sources: list[tuple[Any, str]] = [(config.judge, "--judge"), (config.harm_judge, "--harm-judge")]
    if isinstance(config.probe_options, dict):
        for options in config.probe_options.values():
            if isinstance(options, dict):
                detectors = options.get("detectors")
                for item in detectors if isinstance(detectors, list) else [detectors]:
                    sources.append((item, "--probe-opt"))
    for value, flag in sources:
        if not isinstance(value, str):
            continue
        for part in value.split("+"):
            model = judge_model_of(part)
            if model is not None:
                found.append((model, flag))
    return found


def run_reach(config: ScanConfig) -> list[Reach]:
    """Every model of the run ``config`` that is not run in this process, with where it sends
    and what it reads (none: the run stays on this machine). An auxiliary model of the target's
    family is built with the target's options, as the scan builds it."""
    target = str(config.model or "")
    options = config.generator_options if isinstance(config.generator_options, dict) else {}
    target_family = split_spec(target)[0]
    found: list[Reach] = []
    reach = _model_reach("model", target, options, ["-m/--model"])
    if reach is not None:
        found.append(reach)
    aux = [(getattr(config, key), role, flag) for key, role, flag in _ROLES]
    aux += [(spec, "judge", flag) for spec, flag in _judge_specs(config)]
    for spec, role, flag in aux:
        if not isinstance(spec, str) or not spec.strip() or spec == target:
            continue
        same_family = split_spec(spec)[0] == target_family
        reach = _model_reach(role, spec, options if same_family else {}, [flag])
        if reach is not None:
            found.append(reach)
    return found


def confirm_flags(config: ScanConfig) -> list[str]:
    """The flags a ``redline scan --resume`` of the run ``config`` needs to run as printed:
    :data:`CONFIRM_FLAG` when the run reaches outside this process, ``--trust-code`` when it runs
    LVE checker code (none: the run stays on this machine)."""
    flags = [CONFIRM_FLAG] if run_reach(config) else []
    if config.trust_code:  # any true value: the engine reads it as one, and a resume asks for the flag
        flags.append("--trust-code")
    return flags


def resume_flags(store: Store, run_id: str) -> list[str]:
    """:func:`confirm_flags` of the run ``run_id`` of ``store``, read from its stored settings; none
    when they cannot be read (the resume then says what it needs)."""
    try:
        return confirm_flags(ScanConfig.from_dict(store.get_run(run_id).scan))
    except (RedlineError, TypeError, ValueError):
        return []


def describe(reaches: list[Reach]) -> str:
    """``reaches`` in words, on one line: each model's endpoint and headers (names, and the
    variables they read; never a value), then every variable read."""
    parts = []
    for reach in reaches:
        text = f"{_shown(reach.role)} {_shown(reach.spec)} sends to {_shown(reach.endpoint)}"
        if reach.headers:
            listed = ", ".join(
                _shown(name) + (f" (reads {', '.join('$' + _shown(v) for v in names)})" if names else "")
                for name, names in reach.headers.items()
            )
            text += f" with headers {listed}"
        parts.append(text)
    variables = list(dict.fromkeys(v for reach in reaches for v in reach.variables))
    read = f"; it reads the environment variables {', '.join(_shown(v) for v in variables)}" if variables else ""
    return "; ".join(parts) + read


def unconfirmed(reaches: list[Reach], given: set[str]) -> list[str]:
    """The flags of ``reaches`` that the resuming command did not give again (none: confirmed)."""
    return list(dict.fromkeys(flag for reach in reaches for flag in reach.flags if flag not in given))


def refusal(run_id: str, reaches: list[Reach], missing: list[str]) -> str:
    """The one line that refuses to resume an unconfirmed run, saying what to confirm (``missing``:
    the flags that would confirm it given again; none: only :data:`CONFIRM_FLAG` is named)."""
    again = f" (or give {', '.join(missing)} again with the run's values)" if missing else ""
    return (
        f"run {_shown(run_id)} was not resumed, nothing was sent: its stored settings reach outside this "
        f"process ({describe(reaches)}); if they are yours, add {CONFIRM_FLAG} "
        f"(trust_settings=True in the Python API){again}"
    )


def check_resume(
    run_id: str,
    stored: ScanConfig,
    *,
    trust_settings: bool,
    trust_code: bool,
    given: Collection[str] = (),
    own_model: bool = False,
) -> list[Reach]:
    """What the stored run ``run_id`` (its settings ``stored``) reaches outside this process, once
    the resuming caller confirmed it; nothing is sent before.

    Args:
        trust_settings: the caller confirms every endpoint, header and variable the run reaches.
        trust_code: the caller allows the run's LVE checker code to run.
        given: the reach flags the command line gave again (:attr:`Reach.flags`): when they cover
            every reach, the run is confirmed without ``trust_settings``.
        own_model: the caller gives the model under test itself: only the others are checked.

    Raises :class:`UntrustedRun` when the run runs checker code without ``trust_code``, or reaches
    out unconfirmed."""
    if stored.trust_code and not trust_code:  # any true value: the engine reads it as one
        raise UntrustedRun(
            f"run {_shown(run_id)} was not resumed: it runs the custom checker code of its LVEs, which runs only "
            "with --trust-code on the command line that runs it (trust_code=True in the Python API); "
            "add --trust-code if you trust that code"
        )
    reaches = [r for r in run_reach(stored) if not (own_model and r.role == "model")]
    missing = unconfirmed(reaches, set(given))
    if missing and not trust_settings:
        raise UntrustedRun(refusal(run_id, reaches, missing))
    return reaches
