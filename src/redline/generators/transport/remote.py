"""The base of every generator that calls a model somewhere else: :class:`RemoteGenerator`."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from redline.generators.base import Generator
from redline.generators.options import SAMPLING_OPTIONS, GeneratorOption
from redline.generators.transport.options import ENDPOINT_OPTIONS, TRANSPORT_OPTION_SPECS
from redline.generators.transport.ratelimit import RateLimiter
from redline.generators.transport.retry import RetryPolicy

__all__ = ["RemoteGenerator"]


class RemoteGenerator(Generator):
    """A generator whose model answers over the network (an HTTP endpoint, a LiteLLM provider).

    Declares the options every remote family shares (``base_url``, ``api_key_env``, the sampling
    options, and the transport options ``timeout``, ``max_retries``, ``backoff_base``,
    ``backoff_cap``, ``max_retry_after``, ``concurrency``, ``rpm``, ``tpm``) and reads them into
    attributes of the same names, a :class:`RateLimiter` (:attr:`limiter`) and a semaphore that caps
    the requests in flight when ``concurrency`` is set. Takes no option it does not declare.
    :attr:`retry_policy` is the :class:`RetryPolicy` of the current option values; a retry counts
    in :attr:`retries`. One request may give several outputs (:attr:`supports_n`).
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
        self._semaphore = asyncio.Semaphore(self.concurrency) if self.concurrency else None
        #: Retries sent so far (for the summary of a benchmark or a test).
        self.retries = 0

    @property
    def retry_policy(self) -> RetryPolicy:
        """How this generator retries, from its current ``max_retries``, ``backoff_base``,
        ``backoff_cap`` and ``max_retry_after``."""
        return RetryPolicy(self.max_retries, self.backoff_base, self.backoff_cap, self.max_retry_after)

    def _count_retry(self) -> None:
        self.retries += 1
