"""Generators: the models under test (and attacker/judge models).

``get_generator("openai:gpt-4o-mini", base_url=...)`` builds a generator from a spec
``FAMILY[:MODEL]``. Built-in families: ``smollm2`` (the embedded default model), ``hf``
(any local transformers model), ``openai`` / ``openai-completions`` (any OpenAI-compatible chat
or completions endpoint), ``ollama``, ``rest`` (any JSON endpoint), ``litellm`` and ``llamacpp``
(optional extras), ``test.echo``, ``test.blank`` and ``test.repeat``. Third parties add families
through the ``redline.generators`` entry-point group.
"""

from __future__ import annotations

from typing import Any

from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.plugins import PluginRegistry, UnknownPluginError

__all__ = [
    "DEFAULT_GENERATOR",
    "Generator",
    "GeneratorError",
    "GeneratorUnavailable",
    "generators",
    "get_generator",
]

DEFAULT_GENERATOR = "smollm2"

generators = PluginRegistry(
    "generator",
    "redline.generators",
    {
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
    },
)


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
    cls = generators.load(family)
    return cls(model, **{k: v for k, v in options.items() if v is not None})
