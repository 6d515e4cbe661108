"""``litellm:MODEL`` — the hosted providers LiteLLM speaks to (``litellm:anthropic/claude-3-haiku``,
``litellm:gemini/gemini-1.5-flash``, ``litellm:bedrock/...``). Needs the optional extra:
``pip install 'redline[litellm]'``; litellm is imported only when the generator starts.

LiteLLM reads each provider's key from that provider's usual environment variable; ``api_key_env``
names another variable to pass as the key, ``base_url`` becomes LiteLLM's ``api_base``. Options
``max_tokens`` (sent with every call, as for ``openai:``), ``temperature``, ``top_p``, ``stop``,
``seed``, ``presence_penalty``, ``frequency_penalty``, ``extra_body`` (extra keyword arguments for
``litellm.acompletion``) and the transport options of the OpenAI generator (``timeout``,
``max_retries``, ``backoff_base``, ``backoff_cap``, ``max_retry_after``, ``rpm``, ``tpm``,
``concurrency``; a timeout lowers the calls in flight, as for ``openai:``). Retries are
redline's own (LiteLLM's are turned off) so every backend handles faults the same way: the
policy is :class:`~redline.generators.transport.retry.RetryPolicy`, and this module only says
which of LiteLLM's exceptions are fatal, which are worth another try and which end the request.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from redline.attachments import check_conversation
from redline.attempt import Conversation, Message
from redline.generators.base import GeneratorError, GeneratorUnavailable
from redline.generators.transport.options import REQUEST_FIELD_OPTIONS
from redline.generators.transport.ratelimit import estimate_tokens
from redline.generators.transport.remote import RemoteGenerator
from redline.generators.transport.retry import (
    MalformedResponse,
    TransientFailure,
    is_transient_status,
    parse_retry_after,
)
from redline.generators.transport.secrets import mask_url
from redline.generators.usage import report_response

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


class LiteLLMGenerator(RemoteGenerator):
    """Any model LiteLLM can call, with redline's retries, timeouts and rate limits."""

    family = "litellm"
    description = "hosted providers through LiteLLM (needs the optional extra: litellm)"
    #: Request fields passed to ``litellm.acompletion`` as given when set.
    PASSTHROUGH = ("stop", "seed", "presence_penalty", "frequency_penalty")
    option_specs = RemoteGenerator.option_specs + REQUEST_FIELD_OPTIONS
    #: The attachments sent in OpenAI's message format, which LiteLLM translates for the provider
    #: (MIME types; see :mod:`redline.attachments`).
    attachment_types: tuple[str, ...] = ("image/*", "audio/wav", "audio/x-wav", "audio/mpeg")
    #: The largest attachment sent (OpenAI's limit for one image; providers may take less).
    max_attachment_bytes: int = 20 * 1024 * 1024

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.base_url: str | None = self.option_values["base_url"]
        self.api_key_env: str | None = self.option_values["api_key_env"]
        self.extra: dict[str, Any] = dict(self.option_values["extra_body"] or {})
        self._litellm: Any = None

    def preflight(self) -> None:
        """Refuse the TLS options: LiteLLM's providers make their own connections, which these
        files would not reach (set ``SSL_CERT_FILE`` for a CA bundle LiteLLM reads)."""
        given = [name for name in ("ca_bundle", "client_cert", "client_key") if getattr(self, name)]
        if given:
            raise GeneratorUnavailable(
                f"{self.name}: generator option {', '.join(given)} is not passed on to LiteLLM; "
                "use an openai: generator with --base-url for a custom CA or a client certificate"
            )

    async def start(self) -> None:
        self.preflight()
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

    def _kwargs(self, conversation: Conversation, n: int) -> dict[str, Any]:
        tokens = self.output_tokens()
        check_conversation(conversation, self.attachment_types, self.max_attachment_bytes, self.name)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": conversation.to_openai(attachments=True),
            "timeout": self.request_timeout(tokens),
            "num_retries": 0,
            "max_tokens": tokens,
        }
        if n > 1:
            kwargs["n"] = n
        for name in ("temperature", "top_p"):
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

    async def _call(self, kwargs: dict[str, Any]) -> list[Message | None]:
        """The outputs of ``litellm.acompletion(**kwargs)`` under the rate limits, the concurrency
        cap, the timeout and the :attr:`retry_policy` (a :class:`MalformedResponse` is tried again)."""
        estimate = 0
        if self.limiter.limits_tokens:
            chars = sum(len(m["content"]) for m in kwargs["messages"])
            estimate = estimate_tokens(chars, kwargs.get("max_tokens"), kwargs.get("n", 1))
        first_timeout = float(kwargs.get("timeout") or self.timeout)
        timeouts = 0  # tries of this call that timed out: the next one waits longer

        async def attempt(index: int) -> Any:
            nonlocal timeouts
            seconds = self.retry_policy.timeout(first_timeout, timeouts)
            call = {**kwargs, "timeout": seconds}
            try:
                if self._semaphore is not None:
                    async with self._semaphore:
                        response = await asyncio.wait_for(self._litellm.acompletion(**call), seconds)
                else:
                    response = await asyncio.wait_for(self._litellm.acompletion(**call), seconds)
            except TimeoutError:
                timeouts += 1
                raise TransientFailure(f"no answer from {self.model} within {seconds:g} s", timed_out=True) from None
            except Exception as exc:  # LiteLLM raises its own (OpenAI-style) exception classes
                failure = self._failure(exc)
                if isinstance(failure, TransientFailure) and failure.timed_out:
                    timeouts += 1
                raise failure from None
            usage = _field(response, "usage")
            self.limiter.settle(estimate, _field(usage, "total_tokens") if usage is not None else None)
            outputs = self._parse(response)
            counts = (
                {k: _field(usage, k) for k in ("prompt_tokens", "completion_tokens")} if usage is not None else None
            )
            report_response(counts)  # real token counts, for a scan's budget
            return outputs

        return await self.retry_policy.call(attempt, self.limiter, estimate, self._count_retry)

    def _failure(self, exc: Exception) -> Exception:
        """What one of LiteLLM's exceptions means: :class:`GeneratorUnavailable` for a refused key
        or an unknown model, :class:`TransientFailure` for one worth another try (by class name or
        HTTP status; a rate limit's ``Retry-After`` pauses the generator), :class:`GeneratorError`
        for the rest. Messages never hold the key."""
        kind = type(exc).__name__
        status = getattr(exc, "status_code", None)
        text = self.redact(str(exc).strip().splitlines()[0] if str(exc).strip() else kind)
        if kind in _FATAL or status in (401, 403, 404):
            reason = _FATAL.get(kind, f"answered HTTP {status}")
            return GeneratorUnavailable(f"litellm: {self.model} {reason}: {text[:200]}")
        message = f"{kind} from {self.model}: {text[:200]}"
        if kind not in _TRANSIENT and not is_transient_status(status):
            return GeneratorError(message)
        headers = _field(getattr(exc, "response", None), "headers")
        retry_after = parse_retry_after(headers) if headers is not None and hasattr(headers, "get") else None
        return TransientFailure(
            message, retry_after, throttled=kind == "RateLimitError" or status == 429, timed_out=kind == "Timeout"
        )

    def _parse(self, response: Any) -> list[Message | None]:
        choices = _field(response, "choices")
        if not isinstance(choices, (list, tuple)):
            raise MalformedResponse(f"malformed response from litellm {self.model}: no choices")
        outputs: list[Message | None] = []
        for choice in choices:
            content = _field(_field(choice, "message"), "content")
            if content is not None and not isinstance(content, str):
                raise MalformedResponse(f"malformed response from litellm {self.model}: content is not text")
            outputs.append(Message(text=content) if content is not None else None)
        return outputs

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        """One call for ``n`` outputs; a provider without ``n`` gives one."""
        return await self._call(self._kwargs(conversation, n))

    def settings(self) -> dict:
        values = {
            "base_url": mask_url(self.base_url) if self.base_url else None,
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
