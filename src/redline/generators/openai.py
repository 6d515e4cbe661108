"""``openai:MODEL`` — any OpenAI-compatible chat-completions endpoint, async.

Options: ``base_url`` (default ``https://api.openai.com/v1``), ``api_key_env`` (the environment
variable holding the key, default ``OPENAI_API_KEY``), ``max_tokens``, ``temperature``,
``top_p``, ``timeout`` (seconds per request, default 60), ``max_retries`` (default 4),
``concurrency`` (requests in flight, default 16).

The key is read from the environment when the generator starts and is never written to the store,
logs or reports. A missing key is an error for the default OpenAI endpoint; a custom ``base_url``
(a local server, a proxy) may run without one.
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable

__all__ = ["OpenAIGenerator", "retry_delay"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}


def retry_delay(attempt: int, retry_after: str | None = None, base: float = 0.5, cap: float = 30.0) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): the server's ``Retry-After``
    when it gives one, else exponential backoff with full jitter."""
    if retry_after:
        try:
            return min(cap, max(0.0, float(retry_after)))
        except ValueError:
            pass
    return random.uniform(0, min(cap, base * (2**attempt)))


class OpenAIGenerator(Generator):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    family = "openai"
    description = "any OpenAI-compatible chat endpoint (--base-url, key from $OPENAI_API_KEY)"

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.base_url = str(options.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = str(options.get("api_key_env") or "OPENAI_API_KEY")
        self.max_tokens = options.get("max_tokens")
        self.temperature = options.get("temperature")
        self.top_p = options.get("top_p")
        self.timeout = float(options.get("timeout", 60.0))
        self.max_retries = int(options.get("max_retries", 4))
        self.concurrency = max(1, int(options.get("concurrency", 16)))
        self._client: Any = None
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._supports_n = True

    async def start(self) -> None:
        if self._client is not None:
            return
        if not self.model:
            raise GeneratorUnavailable("the openai generator needs a model name: openai:MODEL")
        key = os.environ.get(self.api_key_env)
        if not key and self.base_url == DEFAULT_BASE_URL:
            raise GeneratorUnavailable(
                f"missing API key: set the environment variable {self.api_key_env} "
                "(or choose another with --api-key-env)"
            )
        import httpx

        headers = {"Authorization": f"Bearer {key}"} if key else {}
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._client = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=self.timeout, limits=limits
        )
        await self._check_reachable()

    async def _check_reachable(self) -> None:
        """Fail fast on an endpoint nobody answers at. Any HTTP answer (even 404) is fine."""
        import httpx

        for attempt in range(3):
            try:
                await self._client.get("/models", timeout=min(self.timeout, 10.0))
                return
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt == 2:
                    await self._client.aclose()
                    self._client = None
                    raise GeneratorUnavailable(
                        f"cannot reach {self.base_url}: {exc or 'connection refused'} (check --base-url)"
                    ) from None
                await asyncio.sleep(0.2 * (attempt + 1))
            except httpx.HTTPError:
                return

    def _body(self, conversation: Conversation, n: int) -> dict:
        body: dict[str, Any] = {"model": self.model, "messages": conversation.to_openai()}
        if n > 1:
            body["n"] = n
        for name in ("max_tokens", "temperature", "top_p"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        return body

    async def _request(self, body: dict) -> list[Message | None]:
        import httpx

        last_error = "no response"
        for attempt in range(self.max_retries + 1):
            retry_after = None
            try:
                async with self._semaphore:
                    response = await self._client.post("/chat/completions", json=body)
            except httpx.ConnectError as exc:
                last_error = f"cannot connect to {self.base_url} ({exc or 'connection refused'})"
                if attempt >= min(self.max_retries, 2):
                    raise GeneratorUnavailable(last_error) from None
            except (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                last_error = f"{type(exc).__name__} from {self.base_url}"
            else:
                if response.status_code == 200:
                    return self._parse(response)
                if response.status_code in (401, 403):
                    raise GeneratorUnavailable(
                        f"{self.base_url} refused the key in {self.api_key_env} (HTTP {response.status_code})"
                    )
                if response.status_code == 404:
                    raise GeneratorUnavailable(
                        f"{self.base_url}/chat/completions not found (HTTP 404): check --base-url and the model name"
                    )
                last_error = f"HTTP {response.status_code} from {self.base_url}: {response.text[:200]}"
                if response.status_code not in RETRY_STATUSES:
                    raise GeneratorError(last_error)
                retry_after = response.headers.get("retry-after")
            if attempt < self.max_retries:
                await asyncio.sleep(retry_delay(attempt, retry_after))
        raise GeneratorError(f"{last_error} (after {self.max_retries + 1} tries)")

    def _parse(self, response: Any) -> list[Message | None]:
        try:
            data = response.json()
            choices = data["choices"]
            outputs: list[Message | None] = []
            for choice in choices:
                content = (choice.get("message") or {}).get("content")
                outputs.append(Message(text=content) if content is not None else None)
            return outputs
        except (ValueError, KeyError, TypeError, AttributeError):
            raise GeneratorError(f"malformed response from {self.base_url}: {response.text[:200]!r}") from None

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        await self.start()
        outputs: list[Message | None] = []
        if n > 1 and self._supports_n:
            outputs = await self._request(self._body(conversation, n))
            if len(outputs) < n:
                self._supports_n = len(outputs) > 1
        while len(outputs) < n:
            missing = n - len(outputs)
            batch = await asyncio.gather(*(self._request(self._body(conversation, 1)) for _ in range(missing)))
            outputs.extend(o[0] if o else None for o in batch)
        return outputs[:n]

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def settings(self) -> dict:
        return {"base_url": self.base_url, "api_key_env": self.api_key_env, "max_tokens": self.max_tokens,
                "temperature": self.temperature, "concurrency": self.concurrency}
