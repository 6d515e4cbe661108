"""``llamacpp:PATH.gguf`` — a GGUF model run in this process by llama.cpp, through
llama-cpp-python (optional extra: ``pip install 'redline[llamacpp]'``; imported only when the
generator starts). ``llamacpp`` alone runs the embedded SmolLM2 GGUF file.

Options: ``max_tokens`` (default 150), ``temperature`` (0.7), ``top_p`` (0.95), ``seed`` (0),
``n_ctx`` (context length, default 2048), ``n_threads`` (default: every core), ``n_gpu_layers``
(default 0: CPU only), ``chat_format`` (llama-cpp-python's name for the chat template; default:
the template stored in the GGUF file).

llama.cpp evaluates one sequence at a time, so requests are served one after another on a worker
thread (the event loop stays free); the harness's concurrency only queues them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.generators.huggingface import smollm2_gguf_path
from redline.generators.options import SAMPLING_OPTIONS, SEED_OPTION, GeneratorOption, with_defaults

__all__ = ["LlamaCppGenerator"]

_MISSING = (
    "llama-cpp-python is not installed: pip install 'redline[llamacpp]' "
    "(or use hf:PATH.gguf, which reads GGUF files with transformers)"
)


class LlamaCppGenerator(Generator):
    """A local GGUF model through llama-cpp-python."""

    family = "llamacpp"
    description = "a local GGUF file through llama.cpp (needs the optional extra: llamacpp)"
    local = True
    #: One request gives all ``n`` outputs (sampled one after another on the worker thread).
    supports_n = True
    takes_other_options = False
    option_specs = with_defaults(SAMPLING_OPTIONS, max_tokens=150, temperature=0.7, top_p=0.95) + (
        SEED_OPTION.with_default(0),
        GeneratorOption("n_ctx", "int", 2048, "the context length in tokens", minimum=16),
        GeneratorOption("n_threads", "int", None, "CPU threads (default: every core)", minimum=1),
        GeneratorOption("n_gpu_layers", "int", 0, "layers offloaded to the GPU (0: CPU only; -1: all)"),
        GeneratorOption("chat_format", "text", help="llama-cpp-python's chat template name (default: the file's)"),
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        values = self.option_values
        self.max_tokens: int = values["max_tokens"]
        self.temperature: float = values["temperature"]
        self.top_p: float = values["top_p"]
        self.seed: int = values["seed"]
        self.n_ctx: int = values["n_ctx"]
        self.n_threads: int = values["n_threads"] or os.cpu_count() or 1
        self.n_gpu_layers: int = values["n_gpu_layers"]
        self.chat_format: str | None = values["chat_format"]
        self._llama: Any = None
        self._lock = asyncio.Lock()

    def _path(self) -> Path:
        if not self.model:
            return smollm2_gguf_path()
        path = Path(self.model).expanduser()
        if not path.is_file():
            raise GeneratorUnavailable(f"llamacpp: no GGUF file at {self.model}")
        return path

    def preflight(self) -> None:
        """The package first (the install command is the fix that matters most), then the file;
        neither is imported nor read here."""
        try:
            found = sys.modules.get("llama_cpp") is not None or importlib.util.find_spec("llama_cpp") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise GeneratorUnavailable(_MISSING)
        self._path()

    def _load(self) -> Any:
        path = self._path()
        try:
            from llama_cpp import Llama
        except ImportError:
            raise GeneratorUnavailable(_MISSING) from None
        kwargs: dict[str, Any] = {
            "model_path": str(path),
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "n_gpu_layers": self.n_gpu_layers,
            "seed": self.seed,
            "verbose": False,
        }
        if self.chat_format:
            kwargs["chat_format"] = self.chat_format
        try:
            return Llama(**kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise GeneratorUnavailable(f"llamacpp: cannot load {path}: {first}") from None

    async def start(self) -> None:
        async with self._lock:
            if self._llama is None:
                self._llama = await asyncio.to_thread(self._load)

    def _complete(self, messages: list[dict], n: int) -> list[Message | None]:
        outputs: list[Message | None] = []
        for _ in range(n):
            try:
                result = self._llama.create_chat_completion(
                    messages=messages,
                    max_tokens=self.max_tokens,
                    temperature=self.temperature,
                    top_p=self.top_p,
                )
                content = result["choices"][0]["message"].get("content")
            except (KeyError, IndexError, TypeError, AttributeError):
                raise GeneratorError(f"llamacpp: malformed completion for {self.name}") from None
            except (ValueError, RuntimeError) as exc:  # e.g. the prompt exceeds n_ctx
                raise GeneratorError(
                    f"llamacpp: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                ) from None
            outputs.append(Message(text=content.strip()) if isinstance(content, str) else None)
        return outputs

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        async with self._lock:  # one sequence at a time; the event loop stays free
            return await asyncio.to_thread(self._complete, conversation.to_openai(), n)

    async def aclose(self) -> None:
        llama, self._llama = self._llama, None
        close = getattr(llama, "close", None)
        if callable(close):
            close()

    def settings(self) -> dict:
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "n_ctx": self.n_ctx,
            "n_gpu_layers": self.n_gpu_layers,
            **({"chat_format": self.chat_format} if self.chat_format else {}),
        }
