"""``litellm:MODEL`` — the hosted providers LiteLLM speaks to (``litellm:anthropic/claude-3-haiku``,
``litellm:gemini/gemini-1.5-flash``, ``litellm:bedrock/...``). Needs the optional extra:
``pip install 'redline[litellm]'``; litellm is imported only when the generator starts.

LiteLLM reads each provider's key from that provider's usual environment variable; ``api_key_env``
names another variable to pass as the key, ``base_url`` becomes LiteLLM's ``api_base``. Options
``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``seed``, ``presence_penalty``,
``frequency_penalty``, ``extra_body`` (extra keyword arguments for ``litellm.acompletion``) and
the transport options of the OpenAI generator (``timeout``, ``max_retries``, ``backoff_base``,
``backoff_cap``, ``max_retry_after``, ``rpm``, ``tpm``, ``concurrency``). Retries are
redline's own (LiteLLM's are turned off) so every backend handles faults the same way.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.generators.transport.options import read_transport_options
from redline.generators.transport.ratelimit import estimate_tokens
from redline.generators.transport.retry import RETRY_STATUSES, parse_retry_after, retry_delay

__all__ = ["LiteLLMGenerator"]

_FATAL = {
    "AuthenticationError": "refused the key",
    "PermissionDeniedError": "refused the key",
    "NotFoundError": "does not know the model",
}
_TRANSIENT = {
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "ServiceUnavailableError",
    "InternalServerError",
    "APIError",
    "BadGatewayError",
}


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` for a dict, ``obj.name`` otherwise (LiteLLM responses support both)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


class LiteLLMGenerator(Generator):
    """Any model LiteLLM can call, with redline's retries, timeouts and rate limits."""

    family = "litellm"
    description = "hosted providers through LiteLLM (needs the optional extra: litellm)"
    PASSTHROUGH = ("stop", "seed", "presence_penalty", "frequency_penalty")
    accepted_options = frozenset(
        {
            "base_url",
            "api_key_env",
            "max_tokens",
            "temperature",
            "top_p",
            "timeout",
            "max_retries",
            "backoff_base",
            "backoff_cap",
            "max_retry_after",
            "concurrency",
            "rpm",
            "tpm",
            "extra_body",
            *PASSTHROUGH,
        }
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.base_url = options.get("base_url")
        self.api_key_env = options.get("api_key_env")
        read_transport_options(self, options)
        extra = options.get("extra_body") or {}
        if not isinstance(extra, dict):
            raise GeneratorUnavailable("litellm: option extra_body must be a mapping")
        self.extra: dict[str, Any] = dict(extra)
        self._litellm: Any = None
        self._semaphore = asyncio.Semaphore(self.concurrency) if self.concurrency else None

    async def start(self) -> None:
        if self._litellm is not None:
            return
        if not self.model:
            raise GeneratorUnavailable("the litellm generator needs a model: litellm:PROVIDER/MODEL")
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise GeneratorUnavailable(f"missing API key: set the environment variable {self.api_key_env}")
        try:
            import litellm
        except ImportError:
            raise GeneratorUnavailable("litellm is not installed: pip install 'redline[litellm]'") from None
        self._litellm = litellm

    def _redact(self, text: str) -> str:
        """``text`` without the key redline passes (provider errors may quote it)."""
        key = (os.environ.get(self.api_key_env) or "").strip() if self.api_key_env else ""
        return text.replace(key, "***") if len(key) >= 4 else text

    def _kwargs(self, conversation: Conversation, n: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": conversation.to_openai(attachments=True),
            "timeout": self.timeout,
            "num_retries": 0,
        }
        if n > 1:
            kwargs["n"] = n
        for name in ("max_tokens", "temperature", "top_p"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        for name in self.PASSTHROUGH:
            if self.options.get(name) is not None:
                kwargs[name] = self.options[name]
        if self.base_url:
            kwargs["api_base"] = self.base_url
        if self.api_key_env:
            kwargs["api_key"] = (os.environ.get(self.api_key_env) or "").strip()
        kwargs.update(self.extra)
        return kwargs

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        estimate = 0
        if self.limiter.limits_tokens:
            chars = sum(len(m["content"]) for m in kwargs["messages"])
            estimate = estimate_tokens(chars, self.max_tokens, kwargs.get("n", 1))
        last_error = "no response"
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            await self.limiter.acquire(estimate)
            try:
                if self._semaphore is not None:
                    async with self._semaphore:
                        response = await asyncio.wait_for(self._litellm.acompletion(**kwargs), self.timeout)
                else:
                    response = await asyncio.wait_for(self._litellm.acompletion(**kwargs), self.timeout)
            except TimeoutError:
                last_error = f"no answer from {self.model} within {self.timeout:g} s"
            except Exception as exc:  # LiteLLM raises its own (OpenAI-style) exception classes
                kind = type(exc).__name__
                status = getattr(exc, "status_code", None)
                text = self._redact(str(exc).strip().splitlines()[0] if str(exc).strip() else kind)
                if kind in _FATAL or status in (401, 403, 404):
                    reason = _FATAL.get(kind, f"answered HTTP {status}")
                    raise GeneratorUnavailable(f"litellm: {self.model} {reason}: {text[:200]}") from None
                last_error = f"{kind} from {self.model}: {text[:200]}"
                if kind not in _TRANSIENT and status not in RETRY_STATUSES:
                    raise GeneratorError(last_error) from None
                headers = _field(getattr(exc, "response", None), "headers")
                if headers is not None and hasattr(headers, "get"):
                    wait = parse_retry_after(headers)
                    if wait is not None:
                        wait = min(wait, self.max_retry_after)
                    if wait is not None and (kind == "RateLimitError" or status == 429):
                        self.limiter.pause(wait)
            else:
                usage = _field(response, "usage")
                self.limiter.settle(estimate, _field(usage, "total_tokens") if usage is not None else None)
                return response
            if attempt < self.max_retries:
                await asyncio.sleep(retry_delay(attempt, wait, self.backoff_base, self.backoff_cap))
        raise GeneratorError(f"{last_error} (after {self.max_retries + 1} tries)")

    def _parse(self, response: Any) -> list[Message | None]:
        choices = _field(response, "choices")
        if not isinstance(choices, (list, tuple)):
            raise GeneratorError(f"malformed response from litellm {self.model}: no choices")
        outputs: list[Message | None] = []
        for choice in choices:
            content = _field(_field(choice, "message"), "content")
            if content is not None and not isinstance(content, str):
                raise GeneratorError(f"malformed response from litellm {self.model}: content is not text")
            outputs.append(Message(text=content) if content is not None else None)
        return outputs

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        await self.start()
        outputs = self._parse(await self._call(self._kwargs(conversation, n)))
        while len(outputs) < n:  # providers without n: one call per missing output
            missing = n - len(outputs)
            batch = await asyncio.gather(*(self._call(self._kwargs(conversation, 1)) for _ in range(missing)))
            for response in batch:
                parsed = self._parse(response)
                outputs.append(parsed[0] if parsed else None)
        return outputs[:n]

    def settings(self) -> dict:
        values = {
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "rpm": self.limiter.rpm,
            "tpm": self.limiter.tpm,
            "extra_body": self.extra or None,
            **{name: self.options[name] for name in self.PASSTHROUGH if self.options.get(name) is not None},
        }
        return {k: v for k, v in values.items() if v is not None}
