"""The response cache: an identical request is answered from the store, so a re-run spends
nothing twice.

:class:`CachedGenerator` wraps any generator. Each output of a request has its own key, the
SHA-256 of:

* the generator's name (``openai:gpt-4o-mini``) and its settings that change answers (transport
  settings such as ``timeout``, ``concurrency`` or ``rpm`` are left out, see
  :data:`TRANSPORT_SETTINGS`);
* the messages (role, text and attachment checksum of every turn; tool calls and the tools
  offered, for a conversation that has them);
* the generation index ``i`` (0 … n-1) and the *scope*, which the harness sets to the attempt's
  repetition number (:data:`CACHE_SCOPE`), so repetitions of a prompt remain independent samples.

So a run with ``generations=3`` after one with ``generations=1`` reuses the first output and asks
the model for two more, and repeating a scan asks for nothing. Errors are never cached. The
wrapper is created by the harness unless the scan runs with ``--no-cache``. An output answered
from the cache carries ``notes["cached"] = True``; the attempt counts them in its own
``notes["cached"]``, which the run summary adds up.

Secrets: a remote generator masks its outputs (the key, ``${VAR}`` header values, a URL's
password) before they are cached; outputs answered from the cache are masked again with the
generator's current secrets, so a store filled before masking existed leaks nothing either.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from contextvars import ContextVar
from typing import Any, Protocol

from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorWrapper
from redline.generators.output import cache_scope
from redline.generators.transport.remote import RemoteGenerator
from redline.generators.usage import report_model_outputs

__all__ = [
    "CACHED_NOTE",
    "CACHE_SCOPE",
    "TRANSPORT_SETTINGS",
    "CacheBackend",
    "CachedGenerator",
    "key_text",
    "request_keys",
]

#: The note an output answered from the cache carries (``message.notes["cached"] = True``).
CACHED_NOTE = "cached"

CACHE_SCOPE: ContextVar[str] = ContextVar("redline_cache_scope", default="")
"""Set by the harness for each attempt (its repetition number): part of every cache key."""

TRANSPORT_SETTINGS = frozenset(
    {
        "concurrency",
        "timeout",
        "max_retries",
        "backoff_base",
        "backoff_cap",
        "max_retry_after",
        "rpm",
        "tpm",
        "batch_size",
        "batch_wait",
        "device",
        "n_threads",
        "n_gpu_layers",
        "delay",
        "api_key_env",
        "ca_bundle",
        "client_cert",
        "client_key",
    }
)
"""Settings that change how a request travels, not what the model answers."""


class CacheBackend(Protocol):
    """Where cached outputs live: a :class:`~redline.store.Store` or its ``BatchWriter``."""

    def cache_get(self, key: str) -> list[Any] | None: ...

    def cache_put(self, key: str, outputs: list[Any]) -> None: ...


def _identity(generator: Generator) -> dict:
    settings = {k: v for k, v in generator.settings().items() if k not in TRANSPORT_SETTINGS}
    return {"generator": generator.name, "settings": settings}


def request_keys(identity: str, conversation: Conversation, n: int, scope: str = "") -> list[str]:
    """The cache key of each of the ``n`` outputs of ``conversation``: the SHA-256 of the
    :func:`key_text` of the request and the output's index. ``identity`` is the :func:`key_text`
    of the generator's name and answer-changing settings."""
    turns: list[list[Any]] = []
    for t in conversation.turns:
        entry: list[Any] = [t.role, t.content.text, t.content.data_checksum or t.content.data_path]
        if t.content.tool_calls:  # only then (old keys stay valid); call ids are left out, servers draw them
            entry.append([[c.name, c.arguments] for c in t.content.tool_calls])
        turns.append(entry)
    parts: list[Any] = [identity, turns, scope]
    if conversation.tools:  # the tools offered change the answer (keys without tools are as before)
        parts.append([tool.as_dict() for tool in conversation.tools])
    prefix = key_text(parts)
    return [hashlib.sha256(f"{prefix}|{i}".encode()).hexdigest() for i in range(n)]


#: The encoder of :func:`key_text`, made once.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def key_text(value: Any) -> str:
    """The JSON text a cache key is computed from: :func:`json.dumps` with sorted keys (the keys
    of stores written by earlier versions depend on this exact text)."""
    return _KEY_ENCODER.encode(value)


class CachedGenerator(GeneratorWrapper):
    """``inner`` with its answers cached in ``backend`` (see the module docstring).

    Behaves as ``inner`` (same name, settings, option values, ``local``); it overrides
    :meth:`generate` itself, so each cached output is looked up on its own and only the missing
    ones are asked of ``inner.generate``. ``start``/``aclose`` are passed on,
    and ``inner`` is started before its first request if nobody started it, so a scan answered
    wholly from the cache need not load a local model at all. ``hits`` and ``misses`` count
    outputs answered from the cache and by the model.
    """

    def __init__(self, inner: Generator, backend: CacheBackend) -> None:
        super().__init__(inner)
        self.backend = backend
        self.hits = 0
        self.misses = 0
        self._identity: str | None = None
        self._started = False
        self._start_lock: asyncio.Lock | None = None

    async def start(self) -> None:
        await self.inner.start()
        self._started = True

    async def _ensure_started(self) -> None:
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if not self._started:
                await self.start()

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        if self._identity is None:
            self._identity = key_text(_identity(self.inner))
        keys = request_keys(self._identity, conversation, n, CACHE_SCOPE.get() + cache_scope(self.inner))
        outputs: list[Message | None] = [None] * n
        missing: list[int] = []
        for i, key in enumerate(keys):
            hit = self.backend.cache_get(key)
            if hit is None or len(hit) != 1:
                missing.append(i)
            else:
                cached = Message.from_dict(hit[0]) if hit[0] is not None else None
                if cached is not None:
                    cached.notes = {**(cached.notes or {}), CACHED_NOTE: True}  # the attempt counts these
                outputs[i] = cached
        self.hits += n - len(missing)
        if len(missing) < n and isinstance(self.inner, RemoteGenerator):
            self.inner.redact_outputs(outputs)  # a store written before masking may hold an echoed key
        if not missing:
            return outputs
        report_model_outputs(len(missing))  # for a scan's budget: these are asked of the model
        await self._ensure_started()
        fresh = await self.inner.generate(conversation, len(missing))
        if len(fresh) != len(missing):
            raise GeneratorError(f"{self.name} returned {len(fresh)} outputs, expected {len(missing)}")
        self.misses += len(missing)
        for i, message in zip(missing, fresh):
            outputs[i] = message
            self.backend.cache_put(keys[i], [message.as_dict() if message is not None else None])
        return outputs
