"""The base of every generator that calls a model somewhere else: :class:`RemoteGenerator`."""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar

from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.generators.options import SAMPLING_OPTIONS, GeneratorOption
from redline.generators.transport.options import ENDPOINT_OPTIONS, TRANSPORT_OPTION_SPECS
from redline.generators.transport.ratelimit import RateLimiter
from redline.generators.transport.retry import RetryPolicy
from redline.generators.transport.secrets import OUTPUT_SECRET_MIN, SECRET_MIN, redact, redact_data, url_secrets

__all__ = ["RemoteGenerator"]


class RemoteGenerator(Generator):
    """A generator whose model answers over the network (an HTTP endpoint, a LiteLLM provider).

    Declares the options every remote family shares (``base_url``, ``api_key_env``, the sampling
    options, and the transport options ``timeout``, ``max_retries``, ``backoff_base``,
    ``backoff_cap``, ``max_retry_after``, ``concurrency``, ``rpm``, ``tpm``, and the TLS files
    ``ca_bundle``, ``client_cert``, ``client_key``) and reads them into
    attributes of the same names, a :class:`RateLimiter` (:attr:`limiter`) and a semaphore that caps
    the requests in flight when ``concurrency`` is set. Takes no option it does not declare.
    :attr:`retry_policy` is the :class:`RetryPolicy` of the current option values; a retry counts
    in :attr:`retries`. One request may give several outputs (:attr:`supports_n`).

    Secrets: :meth:`generate` masks the key and the URL's password (and what a subclass adds to
    :meth:`_secrets`) in every output and error message, where outputs enter redline.
    """

    option_specs: ClassVar[tuple[GeneratorOption, ...]] = ENDPOINT_OPTIONS + SAMPLING_OPTIONS + TRANSPORT_OPTION_SPECS
    takes_other_options = False
    supports_n = True

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        values = self.option_values
        self.max_tokens: int | None = values["max_tokens"]
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

    def redact_outputs(self, outputs: list[Message | None]) -> list[Message | None]:
        """``outputs`` with every secret this generator sends (at least
        :data:`~redline.generators.transport.secrets.OUTPUT_SECRET_MIN` characters) replaced by
        ``***`` in each text and note; the messages are changed in place."""
        secrets = [secret for secret in self._secrets() if len(secret) >= OUTPUT_SECRET_MIN]
        if not secrets:  # nothing long enough to be masked
            return outputs
        for message in outputs:
            if message is None:
                continue
            if message.text:
                message.text = redact(message.text, secrets, OUTPUT_SECRET_MIN, urls=False)
            if message.notes:
                message.notes = redact_data(message.notes, secrets, OUTPUT_SECRET_MIN)
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
        return self.redact_outputs(outputs)
