"""``ollama:MODEL`` — a model served by a local Ollama, through its OpenAI-compatible API.

Same options as ``openai:`` (see :mod:`redline.generators.openai`); the base URL defaults to
``http://127.0.0.1:11434/v1`` and no key is needed (``api_key_env`` names one for a proxy that
wants it, default ``OLLAMA_API_KEY``). Ollama answers one output per request, so ``generations``
above 1 are asked for one by one, concurrently.
"""

from __future__ import annotations

from redline.generators.openai import OpenAIGenerator

__all__ = ["OLLAMA_BASE_URL", "OllamaGenerator"]

OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"


class OllamaGenerator(OpenAIGenerator):
    """A model pulled into Ollama (``ollama pull MODEL``), e.g. ``ollama:llama3.2:1b``."""

    family = "ollama"
    description = "a model served by Ollama (default http://127.0.0.1:11434/v1)"
    default_base_url = OLLAMA_BASE_URL
    default_key_env = "OLLAMA_API_KEY"
    key_required_for_default = False
    supports_n = False  # Ollama ignores n: every output is a request of its own
    #: Ollama's OpenAI-compatible API takes base64 images, not audio.
    attachment_types = ("image/*",)

    def _unreachable_hint(self) -> str:
        if self.base_url == OLLAMA_BASE_URL:
            return "is 'ollama serve' running? or pass --base-url"
        return "check --base-url"
