"""OpenAI-compatible endpoints, async, and the HTTP machinery every remote generator shares.

* ``openai:MODEL`` — the chat-completions API (``POST {base_url}/chat/completions``).
* ``openai-completions:MODEL`` (or ``openai:MODEL`` with ``api=completions``) — the legacy text
  completions API (``POST {base_url}/completions``); the conversation is rendered as plain text.

Options (all generators built on :class:`HTTPGenerator`):

* ``base_url`` (default ``https://api.openai.com/v1``), ``api_key_env`` (the environment variable
  holding the key, default ``OPENAI_API_KEY``);
* ``headers`` (a mapping sent with every request; ``${VAR}`` in a value is replaced by that
  environment variable when the generator starts — a missing one is an error — e.g.
  ``api-key: ${AZURE_KEY}``; the store records the ``${VAR}`` form only);
* ``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``seed``, ``presence_penalty``,
  ``frequency_penalty``; ``extra_body`` (a dict merged into every request body);
* ``timeout`` (seconds per request, default 60), ``max_retries`` (default 4), ``backoff_base``
  (seconds, default 0.5), ``backoff_cap`` (default 30), ``max_retry_after`` (the longest
  ``Retry-After`` honoured, default 120);
* ``concurrency`` (requests in flight to the endpoint; default: no limit of its own, the harness's
  ``--concurrency`` bounds the attempts in flight), ``rpm`` and ``tpm`` (client-side requests and
  tokens per minute, see :mod:`redline.generators.ratelimit`).

Faults: a 408/409/425/429 or 5xx answer, a timeout and a dropped connection are retried with
exponential backoff and full jitter, or after the server's ``Retry-After`` (``retry-after-ms``,
seconds or an HTTP date), which also pauses the generator's other requests. After
``max_retries`` the request raises :class:`GeneratorError` (the attempt is recorded as errored, the
run goes on), as does a malformed answer (not JSON, no ``choices``, an ``error`` object) at once.
A refused key (401/403), an unknown path or model (404) and an endpoint nobody answers at raise
:class:`GeneratorUnavailable` (the run stops and can be resumed).

The key is read from the environment when the generator starts and is never written to the store,
logs or reports. A missing key is an error for the default OpenAI endpoint; a custom ``base_url``
(a local server, a proxy) may run without one. One pooled ``httpx.AsyncClient`` (keep-alive) serves
every request of a generator.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from typing import Any, ClassVar

from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.generators.ratelimit import RateLimiter, estimate_tokens

__all__ = [
    "HTTPGenerator",
    "OpenAIGenerator",
    "OpenAICompletionsGenerator",
    "retry_delay",
    "parse_retry_after",
    "render_plain",
    "RETRY_STATUSES",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 524, 529})


def retry_delay(attempt: int, retry_after: float | str | None = None, base: float = 0.5, cap: float = 30.0) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): the server's ``Retry-After``
    when it gives one, else exponential backoff with full jitter, ``uniform(0, min(cap, base·2^n))``."""
    if retry_after is not None and retry_after != "":
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass
    return random.uniform(0, min(cap, base * (2**attempt)))


def parse_retry_after(headers: Any) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, ``retry-after`` in seconds or as an
    HTTP date; ``None`` when absent or unreadable."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def render_plain(conversation: Conversation) -> str:
    """A conversation as one text prompt: a lone user message as it is, otherwise one
    ``Role: text`` paragraph per turn ending with ``Assistant:``."""
    messages = conversation.to_openai()
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    parts = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n\n".join(parts) + "\n\nAssistant:"


def _header_safe(value: str) -> bool:
    """True when ``value`` can be sent as an HTTP header value (visible ASCII, spaces, tabs)."""
    return all(ch == "\t" or 32 <= ord(ch) < 127 for ch in value)


def _number(options: dict, name: str, default: float | None, kind: type = float, minimum: float | None = None) -> Any:
    value = options.get(name, default)
    if value is None:
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise GeneratorUnavailable(f"generator option {name} must be a number, not {value!r}") from None
    if minimum is not None and number < minimum:
        raise GeneratorUnavailable(f"generator option {name} must be at least {minimum}, not {value!r}")
    return number


def read_transport_options(target: Any, options: dict) -> None:
    """Set the sampling and transport options every remote generator shares on ``target``:
    ``max_tokens``, ``temperature``, ``top_p``, ``timeout``, ``max_retries``, ``backoff_base``,
    ``backoff_cap``, ``max_retry_after``, ``concurrency`` and a :class:`RateLimiter` from ``rpm`` /
    ``tpm``. A value of the wrong type or range raises :class:`GeneratorUnavailable`."""
    target.max_tokens = _number(options, "max_tokens", None, int, 1)
    target.temperature = _number(options, "temperature", None, float, 0)
    target.top_p = _number(options, "top_p", None, float, 0)
    target.timeout = _number(options, "timeout", 60.0, float, 0.001)
    target.max_retries = _number(options, "max_retries", 4, int, 0)
    target.backoff_base = _number(options, "backoff_base", 0.5, float, 0)
    target.backoff_cap = _number(options, "backoff_cap", 30.0, float, 0)
    target.max_retry_after = _number(options, "max_retry_after", 120.0, float, 0)
    target.concurrency = _number(options, "concurrency", None, int, 1)
    target.limiter = RateLimiter(_number(options, "rpm", None, float, 0.001), _number(options, "tpm", None, float, 0.001))


class HTTPGenerator(Generator):
    """Base of the generators that call a model over HTTP: one pooled async client, retries with
    backoff and ``Retry-After``, a per-request timeout, optional rate limits and concurrency cap.

    Subclasses implement :meth:`generate` with :meth:`post_json`, which returns the parsed JSON of
    a successful answer or raises :class:`GeneratorError` / :class:`GeneratorUnavailable`.
    """

    default_base_url: ClassVar[str | None] = None
    default_key_env: ClassVar[str | None] = None
    #: When True a missing key is fatal for :attr:`default_base_url` (hosted APIs).
    key_required_for_default: ClassVar[bool] = False
    #: A path answered by a GET to check that the endpoint is there (``None``: no check).
    probe_path: ClassVar[str | None] = "/models"
    accepted_options: ClassVar[frozenset[str] | None] = frozenset({
        "base_url", "api_key_env", "max_tokens", "temperature", "top_p", "timeout", "max_retries",
        "backoff_base", "backoff_cap", "max_retry_after", "concurrency", "rpm", "tpm", "headers",
    })

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        base_url = options.get("base_url") or self.default_base_url or ""
        self.base_url = str(base_url).rstrip("/")
        self.api_key_env = str(options.get("api_key_env") or self.default_key_env or "")
        read_transport_options(self, options)
        headers = options.get("headers") or {}
        if not isinstance(headers, dict):
            raise GeneratorUnavailable(f"{self.family}: option headers must be a mapping of name to value")
        #: Extra headers as given: ``${VAR}`` references are expanded when the client is created.
        self.header_templates = {str(k): str(v) for k, v in headers.items()}
        self._client: Any = None
        self._semaphore = asyncio.Semaphore(self.concurrency) if self.concurrency else None
        self._start_lock: asyncio.Lock | None = None
        #: Counters for the summary of a benchmark or a test: HTTP requests sent and retried.
        self.requests_sent = 0
        self.retries = 0

    # -- connection ------------------------------------------------------------------------------
    def _api_key(self) -> str | None:
        """The key from :attr:`api_key_env`, without surrounding whitespace (a key pasted or read
        from a file often ends in a newline). A key with characters no HTTP header may hold is
        refused here, naming the variable only: httpx would otherwise raise an error that quotes
        the header, key included, into the attempt's recorded error."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if key is None:
            return None
        key = key.strip()
        if not _header_safe(key):
            raise GeneratorUnavailable(
                f"the API key in ${self.api_key_env} contains a line break or another character "
                "an HTTP header cannot hold; set it to the bare key"
            )
        return key or None

    def _secrets(self) -> list[str]:
        """Secret values this generator sends (to be masked in any message it records): the key
        and every environment variable a header refers to."""
        import re

        names = [self.api_key_env] if self.api_key_env else []
        for value in self.header_templates.values():
            names.extend(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", value))
        found = [(os.environ.get(name) or "").strip() for name in names]
        return [secret for secret in found if len(secret) >= 4]

    def redact(self, text: str) -> str:
        """``text`` with every secret this generator sends replaced by ``***``."""
        for secret in self._secrets():
            text = text.replace(secret, "***")
        return text

    def _headers(self) -> dict[str, str]:
        """Headers sent with every request: the key as a bearer token when there is one, then the
        ``headers`` option with each ``${VAR}`` replaced by that environment variable."""
        from redline.generators.rest import _ENV, expand_env

        key = self._api_key()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        where = f"{self.name} header"
        for name, value in self.header_templates.items():
            headers[name] = expand_env(value, f"{where} {name}")
            if not _header_safe(headers[name]) or not _header_safe(name):
                raise GeneratorUnavailable(f"{where} {name}: holds a line break or a non-ASCII character")
        return headers

    def _check_options(self) -> None:
        """Raise :class:`GeneratorUnavailable` for a configuration that cannot work."""
        if not self.model:
            raise GeneratorUnavailable(f"the {self.family} generator needs a model name: {self.family}:MODEL")
        if not self.base_url.startswith(("http://", "https://")):
            raise GeneratorUnavailable(f"{self.family}: base_url must start with http:// or https://, not {self.base_url!r}")
        if self.key_required_for_default and self.base_url == (self.default_base_url or "").rstrip("/") and not self._api_key():
            raise GeneratorUnavailable(
                f"missing API key: set the environment variable {self.api_key_env} "
                "(or choose another with --api-key-env)"
            )

    async def start(self) -> None:
        if self._client is not None:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._client is not None:
                return
            self._check_options()
            import httpx

            limits = httpx.Limits(
                max_connections=self.concurrency,
                max_keepalive_connections=self.concurrency or 1024,
                keepalive_expiry=30.0,
            )
            timeout = httpx.Timeout(self.timeout, pool=None)
            client = httpx.AsyncClient(headers=self._headers(), timeout=timeout, limits=limits)
            try:
                await self._check_reachable(client)
            except BaseException:
                await client.aclose()
                raise
            self._client = client

    def _unreachable_hint(self) -> str:
        return "check --base-url"

    async def _check_reachable(self, client: Any) -> None:
        """Fail fast on an endpoint nobody answers at. Any HTTP answer (even 404) is fine."""
        if self.probe_path is None:
            return
        import httpx

        for attempt in range(3):
            try:
                await client.get(self.base_url + self.probe_path, timeout=min(self.timeout, 10.0))
                return
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt == 2:
                    raise GeneratorUnavailable(
                        f"cannot reach {self.base_url}: {exc or 'connection refused'} ({self._unreachable_hint()})"
                    ) from None
                await asyncio.sleep(0.2 * (attempt + 1))
            except httpx.HTTPError:
                return

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- one request, with retries ---------------------------------------------------------------
    async def post_json(self, url: str, body: Any, estimated_tokens: int = 0) -> Any:
        """POST ``body`` as JSON to ``url`` (absolute) and return the answer's parsed JSON.

        Retries as described in the module docstring. Raises :class:`GeneratorError` when the
        request fails for good or the answer is not JSON, :class:`GeneratorUnavailable` when the
        endpoint refuses the key, does not exist or cannot be reached.
        """
        return await self.send(url, json.dumps(body).encode(), estimated_tokens)

    async def send(
        self, url: str, content: bytes, estimated_tokens: int = 0, method: str = "POST", as_text: bool = False
    ) -> Any:
        """Send ``content`` (JSON bytes) with ``method`` to ``url`` with retries; return the parsed
        JSON of the answer, or its text when ``as_text``. Errors as for :meth:`post_json`; their
        messages never hold a secret (an answer that echoes the key is masked)."""
        import httpx

        try:
            return await self._send(url, content, estimated_tokens, method, as_text)
        except (GeneratorError, GeneratorUnavailable) as exc:
            message = self.redact(str(exc))
            if message == str(exc):
                raise
            raise type(exc)(message) from None
        except httpx.HTTPError as exc:  # e.g. LocalProtocolError, whose text quotes the headers
            raise GeneratorError(
                f"request to {url} failed: {type(exc).__name__}: {self.redact(str(exc))[:200]}"
            ) from None

    async def _send(self, url: str, content: bytes, estimated_tokens: int, method: str, as_text: bool) -> Any:
        import httpx

        await self.start()
        headers = {"content-type": "application/json"}
        last_error = "no response"
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            await self.limiter.acquire(estimated_tokens)
            try:
                self.requests_sent += 1
                if self._semaphore is not None:
                    async with self._semaphore:
                        response = await self._client.request(method, url, content=content, headers=headers)
                else:
                    response = await self._client.request(method, url, content=content, headers=headers)
            except httpx.ConnectError as exc:
                last_error = f"cannot connect to {self.base_url} ({exc or 'connection refused'})"
                if attempt >= min(self.max_retries, 2):
                    raise GeneratorUnavailable(last_error) from None
            except httpx.TimeoutException:
                last_error = f"no answer from {url} within {self.timeout:g} s"
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.NetworkError) as exc:
                last_error = f"connection to {self.base_url} dropped ({type(exc).__name__}: {exc})"
            else:
                status = response.status_code
                if status < 300:
                    if as_text:
                        return response.text
                    data = self._json(response, url)
                    self.limiter.settle(estimated_tokens, self._usage_tokens(data))
                    return data
                if status in (401, 403):
                    raise GeneratorUnavailable(
                        f"{self.base_url} refused the key in {self.api_key_env or 'the request'} (HTTP {status})"
                    )
                if status == 404:
                    raise GeneratorUnavailable(
                        f"{url} not found (HTTP 404): check --base-url and the model name {self.model!r}"
                    )
                last_error = f"HTTP {status} from {url}: {response.text[:200]}"
                if status not in RETRY_STATUSES:
                    raise GeneratorError(last_error)
                retry_after = parse_retry_after(response.headers)
                if retry_after is not None:
                    wait = min(retry_after, self.max_retry_after)
                    if status == 429:
                        self.limiter.pause(wait)
            if attempt < self.max_retries:
                self.retries += 1
                await asyncio.sleep(retry_delay(attempt, wait, self.backoff_base, self.backoff_cap))
        raise GeneratorError(f"{last_error} (after {self.max_retries + 1} tries)")

    def _json(self, response: Any, url: str) -> Any:
        try:
            data = response.json()
        except ValueError:
            raise GeneratorError(f"malformed response from {url}: not JSON: {response.text[:200]!r}") from None
        if isinstance(data, dict) and data.get("error") and not data.get("choices"):
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise GeneratorError(f"{url} answered with an error: {str(message)[:200]}")
        return data

    @staticmethod
    def _usage_tokens(data: Any) -> int | None:
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            total = usage.get("total_tokens")
            if isinstance(total, int):
                return total
        return None

    def settings(self) -> dict:
        values = {
            "base_url": self.base_url,
            "api_key_env": self.api_key_env or None,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "rpm": self.limiter.rpm,
            "tpm": self.limiter.tpm,
            "headers": self.header_templates or None,  # templates only: ${VAR}, never the values
        }
        return {k: v for k, v in values.items() if v is not None}


class OpenAIGenerator(HTTPGenerator):
    """A model behind an OpenAI-compatible ``/chat/completions`` (or ``/completions``) endpoint."""

    family = "openai"
    description = "any OpenAI-compatible chat endpoint (--base-url, key from $OPENAI_API_KEY)"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "OPENAI_API_KEY"
    key_required_for_default = True
    #: ``"chat"`` or ``"completions"``; the ``api`` option overrides it.
    default_api: ClassVar[str] = "chat"
    PASSTHROUGH: ClassVar[tuple[str, ...]] = ("stop", "seed", "presence_penalty", "frequency_penalty")
    accepted_options = HTTPGenerator.accepted_options | {"api", "extra_body", *PASSTHROUGH}

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.api = str(options.get("api") or self.default_api)
        if self.api not in ("chat", "completions"):
            raise GeneratorUnavailable(f"{self.family}: option api must be 'chat' or 'completions', not {self.api!r}")
        extra = options.get("extra_body") or {}
        if not isinstance(extra, dict):
            raise GeneratorUnavailable(f"{self.family}: option extra_body must be a mapping")
        self.extra_body: dict[str, Any] = dict(extra)
        self._supports_n = True

    @property
    def endpoint(self) -> str:
        return self.base_url + ("/chat/completions" if self.api == "chat" else "/completions")

    def _body(self, conversation: Conversation, n: int) -> dict:
        body: dict[str, Any] = {"model": self.model}
        if self.api == "chat":
            body["messages"] = conversation.to_openai(attachments=True)
        else:
            body["prompt"] = render_plain(conversation)
        if n > 1:
            body["n"] = n
        for name in ("max_tokens", "temperature", "top_p"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        for name in self.PASSTHROUGH:
            if self.options.get(name) is not None:
                body[name] = self.options[name]
        body.update(self.extra_body)
        return body

    def _parse(self, data: Any) -> list[Message | None]:
        try:
            choices = data["choices"]
            if not isinstance(choices, list):
                raise TypeError
            outputs: list[Message | None] = []
            for choice in sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0):
                if self.api == "chat":
                    content = (choice.get("message") or {}).get("content")
                else:
                    content = choice.get("text")
                if content is not None and not isinstance(content, str):
                    raise TypeError
                outputs.append(Message(text=content) if content is not None else None)
            return outputs
        except (KeyError, TypeError, AttributeError):
            raise GeneratorError(
                f"malformed response from {self.endpoint}: no {'choices[].message.content' if self.api == 'chat' else 'choices[].text'} "
                f"in {json.dumps(data)[:200]}"
            ) from None

    async def _request(self, conversation: Conversation, n: int) -> list[Message | None]:
        body = self._body(conversation, n)
        chars = sum(len(m.get("content") or "") for m in body.get("messages", [])) + len(body.get("prompt", ""))
        estimate = estimate_tokens(chars, self.max_tokens, n) if self.limiter.limits_tokens else 0
        return self._parse(await self.post_json(self.endpoint, body, estimate))

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        await self.start()
        outputs: list[Message | None] = []
        if n == 1 or self._supports_n:
            outputs = await self._request(conversation, n)
            if n > 1 and len(outputs) < n:
                self._supports_n = len(outputs) > 1
        while len(outputs) < n:
            missing = n - len(outputs)
            batch = await asyncio.gather(*(self._request(conversation, 1) for _ in range(missing)))
            outputs.extend(o[0] if o else None for o in batch)
        return outputs[:n]

    def settings(self) -> dict:
        values = super().settings()
        if self.api != "chat" or self.default_api != "chat":
            values["api"] = self.api
        for name in self.PASSTHROUGH:
            if self.options.get(name) is not None:
                values[name] = self.options[name]
        if self.extra_body:
            values["extra_body"] = self.extra_body
        return values


class OpenAICompletionsGenerator(OpenAIGenerator):
    """``openai-completions:MODEL``: the text completions API of an OpenAI-compatible server."""

    family = "openai-completions"
    description = "any OpenAI-compatible text completions endpoint (/v1/completions)"
    default_api = "completions"
