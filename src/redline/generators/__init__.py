"""Generators: the models under test (and attacker/judge models).

``get_generator("openai:gpt-4o-mini", base_url=...)`` builds a generator from a spec
``FAMILY[:MODEL]``. Built-in families: ``smollm2`` (the embedded default model), ``hf``
(any local transformers model), ``openai`` / ``openai-completions`` (any OpenAI-compatible chat
or completions endpoint), ``ollama``, ``rest`` (any JSON endpoint), ``litellm`` and ``llamacpp``
(optional extras), ``test.echo``, ``test.blank``, ``test.repeat`` and ``test.agent`` (a scripted
tool-calling agent). Third parties add families through the ``redline.generators`` entry-point group.

Each family declares its options as :class:`GeneratorOption` specs (``option_specs``);
:func:`known_generator_options` gathers those of the built-in families.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.generators.options import GeneratorOption
from redline.plugins import PluginRegistry, UnknownPluginError

__all__ = [
    "BUILTIN_GENERATORS",
    "DEFAULT_GENERATOR",
    "Generator",
    "GeneratorError",
    "GeneratorOption",
    "GeneratorUnavailable",
    "generators",
    "get_generator",
    "known_generator_options",
]

DEFAULT_GENERATOR = "smollm2"

BUILTIN_GENERATORS: dict[str, str] = {
    "smollm2": "redline.generators.huggingface:SmolLM2Generator",
    "hf": "redline.generators.huggingface:TransformersGenerator",
    "openai": "redline.generators.openai:OpenAIGenerator",
    "openai-completions": "redline.generators.openai:OpenAICompletionsGenerator",
    "ollama": "redline.generators.ollama:OllamaGenerator",
    "rest": "redline.generators.rest:RestGenerator",
    "litellm": "redline.generators.litellm:LiteLLMGenerator",
    "llamacpp": "redline.generators.llamacpp:LlamaCppGenerator",
    "test.echo": "redline.generators.test:EchoGenerator",
    "test.blank": "redline.generators.test:BlankGenerator",
    "test.repeat": "redline.generators.test:RepeatGenerator",
    "test.agent": "redline.generators.test:AgentGenerator",
}
"""The built-in families: name → ``"module:class"`` (imported when first used)."""

generators = PluginRegistry("generator", "redline.generators", BUILTIN_GENERATORS)


def split_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` → ``("openai", "gpt-4o")``; ``"smollm2"`` → ``("smollm2", "")``."""
    family, _, model = spec.strip().partition(":")
    return family, model


def get_generator(spec: str, **options: Any) -> Generator:
    """Create the generator named by ``spec`` (``FAMILY[:MODEL]``) with ``options``.

    Options a family does not use are ignored; ``None`` values are dropped. Raises
    :class:`~redline.plugins.UnknownPluginError` for an unknown family.
    """
    family, model = split_spec(spec)
    if not family:
        raise UnknownPluginError("empty model spec: use FAMILY[:MODEL], e.g. openai:gpt-4o-mini")
    if not model and family not in generators.names():
        raise UnknownPluginError(
            f"unknown generator {family!r}; {_family_hint(family)} (see 'redline list generators')"
        )
    cls = generators.load(family)
    return cls(model, **{k: v for k, v in options.items() if v is not None})


def _family_hint(name: str) -> str:
    """What to write instead of a bare model name: its family guessed from the name's form."""
    lowered = name.lower()
    if lowered.startswith(("gpt-", "gpt4", "o1", "o3", "o4", "chatgpt", "text-davinci")):
        return f"did you mean openai:{name}? A model name follows its family"
    if lowered.startswith(("claude", "gemini", "command", "bedrock/", "vertex_ai/")):
        return f"did you mean litellm:{name}? A model name follows its family"
    if "/" in name:
        return f"did you mean hf:{name} (a local Hugging Face model), or openai:{name} with --base-url?"
    if any(c.isdigit() for c in name):
        return f"a model name follows its family: ollama:{name}, or openai:{name} with --base-url"
    close = difflib.get_close_matches(name, generators.names(), n=3, cutoff=0.5)
    if close:
        return f"did you mean {', '.join(close)}?"
    return f"a model is FAMILY:MODEL, e.g. openai:{name} with --base-url, or ollama:{name}"


@functools.cache
def known_generator_options() -> dict[str, GeneratorOption]:
    """Every option a built-in family declares, by name: what a scan configuration's values are
    checked against before the family is known. Imports each built-in family's module (none of
    them imports an optional package when imported). Where several families declare an option,
    they declare the same kind and bounds (a test holds them to it); the first one is returned."""
    table: dict[str, GeneratorOption] = {}
    for name in BUILTIN_GENERATORS:
        for spec in generators.load(name).option_specs:
            table.setdefault(spec.name, spec)
    return table
