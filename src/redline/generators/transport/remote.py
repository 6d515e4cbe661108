"""The base of every generator that calls a model somewhere else: :class:`RemoteGenerator`."""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar

from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.generators.options import SAMPLING_OPTIONS, GeneratorOption, with_defaults
from redline.generators.output import DEFAULT_MAX_TOKENS, output_tokens
from redline.generators.transport.options import ENDPOINT_OPTIONS, TRANSPORT_OPTION_SPECS
from redline.generators.transport.ratelimit import RateLimiter
from redline.generators.transport.retry import RetryPolicy
from redline.generators.transport.secrets import OUTPUT_SECRET_MIN, SECRET_MIN, redact, redact_data, url_secrets

__all__ = ["RemoteGenerator"]


class RemoteGenerator(Generator):
    """A generator whose model answers over the network (an HTTP endpoint, a LiteLLM provider).

    Declares the options every remote family shares (``base_url``, ``api_key_env``, the sampling
    options with ``max_tokens`` defaulting to
    :data:`~redline.generators.output.DEFAULT_MAX_TOKENS`, and the transport options
    ``timeout``, ``max_retries``, ``backoff_base``,
    ``backoff_cap``, ``max_retry_after``, ``concurrency``, ``rpm``, ``tpm``, and the TLS files
    ``ca_bundle``, ``client_cert``, ``client_key``) and reads them into
    attributes of the same names, a :class:`RateLimiter` (:attr:`limiter`) and a semaphore that caps
    the requests in flight when ``concurrency`` is set. Takes no option it does not declare.
    :attr:`retry_policy` is the :class:`RetryPolicy` of the current option values; a retry counts
    in :attr:`retries`. One request may give several outputs (:attr:`supports_n`). Every request
    asks for :meth:`output_tokens` tokens per output and may take :meth:`request_timeout` seconds.

    Secrets: :meth:`generate` masks the key and the URL's password (and what a subclass adds to
    :meth:`_secrets`) in every output and error message, where outputs enter redline.
    """

    option_specs: ClassVar[tuple[GeneratorOption, ...]] = (
        ENDPOINT_OPTIONS + with_defaults(SAMPLING_OPTIONS, max_tokens=DEFAULT_MAX_TOKENS) + TRANSPORT_OPTION_SPECS
    )
    takes_other_options = False
    supports_n = True
    #: Requests ask for more output when the running probe needs it (:mod:`redline.generators.output`).
    follows_output_need: ClassVar[bool] = True

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        values = self.option_values
        self.max_tokens: int = values["max_tokens"]
        #: Whether ``max_tokens`` was given: then it holds for every request, whatever the probe.
        self.max_tokens_given = options.get("max_tokens") is not None
        #: Whether ``timeout`` was given: then it is every first try's timeout, whatever the output.
        self.timeout_given = options.get("timeout") is not None
        self.temperature: float | None = values["temperature"]
        self.top_p: float | None = values["top_p"]
        self.timeout: float = values["timeout"]
        self.max_retries: int = values["max_retries"]
        self.backoff_base: float = values["backoff_base"]
        self.backoff_cap: float = values["backoff_cap"]
        self.max_retry_after: float = values["max_retry_after"]
        self.concurrency: int | None = values["concurrency"]
        self.limiter = RateLimiter(values["rpm"], values["tpm"])
        #: TLS files (paths as given): a CA bundle trusted besides the system's, a client certificate and key.
        self.ca_bundle: str | None = values["ca_bundle"]
        self.client_cert: str | None = values["client_cert"]
        self.client_key: str | None = values["client_key"]
        self._semaphore = asyncio.Semaphore(self.concurrency) if self.concurrency else None
        #: Retries sent so far.
        self.retries = 0

    @property
    def retry_policy(self) -> RetryPolicy:
        """How this generator retries, from its current ``max_retries``, ``backoff_base``,
        ``backoff_cap`` and ``max_retry_after``."""
        return RetryPolicy(self.max_retries, self.backoff_base, self.backoff_cap, self.max_retry_after)

    def _count_retry(self) -> None:
        self.retries += 1

    def output_tokens(self) -> int:
        """``max_tokens`` of a request sent now: the option when given, else the larger of its
        default and what the running probe needs."""
        return output_tokens(self.max_tokens if self.max_tokens_given else None, self.max_tokens)

    def request_timeout(self, tokens: int | None = None) -> float:
        """Seconds the first try of a request for outputs of ``tokens`` tokens may take: the
        ``timeout`` option when given, else its default, stretched in proportion for a request that
        asks for more than :data:`~redline.generators.output.DEFAULT_MAX_TOKENS`. A try after a
        timeout gets longer still (:meth:`RetryPolicy.timeout`)."""
        if self.timeout_given or not tokens:
            return self.timeout
        return self.timeout * max(1.0, tokens / DEFAULT_MAX_TOKENS)

    # -- secrets ---------------------------------------------------------------------------------
    def _secrets(self) -> list[str]:
        """Secret values this generator sends, to be masked wherever they come back: the key in
        the ``api_key_env`` variable and the userinfo of ``base_url`` (a subclass that sends more,
        such as ``${VAR}`` headers, adds them). Read now: a key changed since is still masked."""
        found: list[str] = []
        key_env = getattr(self, "api_key_env", None)
        if key_env:
            found.append((os.environ.get(key_env) or "").strip())
        found += url_secrets(getattr(self, "base_url", None))
        return [secret for secret in found if secret]

    def redact(self, text: str) -> str:
        """``text`` (a message) with every secret this generator sends (at least
        :data:`~redline.generators.transport.secrets.SECRET_MIN` characters) replaced by ``***``,
        and the password of every URL in it masked."""
        return redact(text, self._secrets(), SECRET_MIN)

    def excerpt(self, text: str, limit: int) -> str:
        """At most ``limit`` characters of ``text`` (an answer a message quotes), masked as
        :meth:`redact` masks before it is cut, so that a cut never leaves part of a secret."""
        return self.redact(text)[:limit]

    def redact_outputs(self, outputs: list[Message | None]) -> list[Message | None]:
        """``outputs`` with every secret this generator sends (at least
        :data:`~redline.generators.transport.secrets.OUTPUT_SECRET_MIN` characters) replaced by
        ``***`` in every field an endpoint fills: each text, note, tool call (id, name, arguments)
        and ``tool_call_id``; the messages are changed in place."""
        secrets = [secret for secret in self._secrets() if len(secret) >= OUTPUT_SECRET_MIN]
        if not secrets:  # nothing long enough to be masked
            return outputs

        def mask(text: str) -> str:
            return redact(text, secrets, OUTPUT_SECRET_MIN, urls=False)

        for message in outputs:
            if message is None:
                continue
            if message.text:
                message.text = mask(message.text)
            if message.notes:
                message.notes = redact_data(message.notes, secrets, OUTPUT_SECRET_MIN)
            for call in message.tool_calls:
                call.id, call.name = mask(call.id), mask(call.name)
                call.arguments = redact_data(call.arguments, secrets, OUTPUT_SECRET_MIN)
            if message.tool_call_id:
                message.tool_call_id = mask(message.tool_call_id)
        return outputs

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        """:meth:`Generator.generate`, masked where outputs enter redline: every secret this
        generator sends is replaced by ``***`` in the outputs (:meth:`redact_outputs`) and in the
        message of any error it raises (:meth:`redact`). So what an endpoint echoes of the request
        reaches neither the detectors, the cache, the store nor a report; detectors score the
        masked text on purpose (an echoed key is the endpoint's doing, not the model's)."""
        try:
            outputs = await super().generate(conversation, n)
        except (GeneratorError, GeneratorUnavailable) as exc:
            message = self.redact(str(exc))
            if message == str(exc):
                raise
            raise type(exc)(message) from None
        except Exception as exc:  # any other error that quotes a secret fails the request, masked
            message = self.redact(str(exc))
            if message == str(exc):
                raise
            raise GeneratorError(f"{type(exc).__name__}: {message}") from None
        return self.redact_outputs(outputs)
