"""OpenAI-compatible endpoints, async, and the HTTP machinery every remote generator shares.

* ``openai:MODEL`` — the chat-completions API (``POST {base_url}/chat/completions``).
* ``openai-completions:MODEL`` (or ``openai:MODEL`` with ``api=completions``) — the legacy text
  completions API (``POST {base_url}/completions``); the conversation is rendered as plain text.

Tool calling (chat API only): a conversation's ``tools`` go out as the ``tools`` field, its calls
and ``tool`` turns as the API's ``tool_calls`` and ``tool`` messages, and an answer's
``tool_calls`` come back as the output's ``Message.tool_calls`` (arguments decoded). Arguments
that are not a JSON object fail that request at once, with one :class:`GeneratorError` naming the
tool (the model's own output: not retried).

Options (all generators built on :class:`HTTPGenerator`):

* ``base_url`` (default ``https://api.openai.com/v1``), ``api_key_env`` (the environment variable
  holding the key, default ``OPENAI_API_KEY``);
* ``headers`` (a mapping sent with every request; ``${VAR}`` in a value is replaced by that
  environment variable when the generator starts — a missing one is an error — e.g.
  ``api-key: ${AZURE_KEY}``; the store records the ``${VAR}`` form only);
* ``max_tokens`` (sent with every request: default
  :data:`~redline.generators.output.DEFAULT_MAX_TOKENS`, or what the probe needs when more),
  ``temperature``, ``top_p``, ``stop``, ``seed``, ``presence_penalty``,
  ``frequency_penalty``; ``extra_body`` (a dict merged into every request body);
* ``timeout`` (seconds per request, default 60, stretched for a request asking for more output
  than the default; a try after a timeout waits longer), ``max_retries`` (default 4), ``backoff_base``
  (seconds, default 0.5), ``backoff_cap`` (default 30), ``max_retry_after`` (the longest
  ``Retry-After`` honoured, default 120);
* ``concurrency`` (requests in flight to the endpoint; default: no limit of its own, the harness's
  ``--concurrency`` bounds the attempts in flight), ``rpm`` and ``tpm`` (client-side requests and
  tokens per minute, see :mod:`redline.generators.transport.ratelimit`);
* ``ca_bundle`` (a PEM file of CAs trusted besides the system's), ``client_cert`` and ``client_key``
  (PEM files of a client certificate, for mutual TLS); certificates are always checked.

Faults: a 408/409/425/429 or 5xx answer, a timeout and a dropped connection are retried with
exponential backoff and full jitter, or after the server's ``Retry-After`` (``retry-after-ms``,
seconds or an HTTP date), which also pauses the generator's other requests. A timeout also lowers
the requests in flight (:class:`~redline.generators.transport.ratelimit.AdaptiveConcurrency`). After
``max_retries`` the request raises :class:`GeneratorError` (the attempt is recorded as errored, the
run goes on). A malformed answer (not JSON, no ``choices``) is retried the same way; an ``error``
object is a :class:`GeneratorError` at once.
A refused key (401/403), an unknown path or model (404) and an endpoint nobody answers at raise
:class:`GeneratorUnavailable` (the run stops and can be resumed).

The key is read from the environment when the generator starts and is never written to the store,
logs or reports. A missing key is an error for the default OpenAI endpoint; a custom ``base_url``
(a local server, a proxy) may run without one. One pooled keep-alive client serves every request of
a generator (:mod:`redline.generators.transport.http`).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from redline.attachments import check_conversation
from redline.attempt import AttemptError, Conversation, Message, ToolCall
from redline.generators.base import GeneratorError
from redline.generators.options import GeneratorOption
from redline.generators.transport.http import HTTPGenerator
from redline.generators.transport.options import REQUEST_FIELD_OPTIONS
from redline.generators.transport.ratelimit import estimate_tokens
from redline.generators.transport.retry import MalformedResponse
from redline.generators.usage import report_response

__all__ = ["DEFAULT_BASE_URL", "OpenAICompletionsGenerator", "OpenAIGenerator", "render_plain"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def render_plain(conversation: Conversation) -> str:
    """A conversation as one text prompt: a lone user message as it is, otherwise one
    ``Role: text`` paragraph per turn ending with ``Assistant:``."""
    messages = conversation.to_openai()
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    parts = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n\n".join(parts) + "\n\nAssistant:"


class OpenAIGenerator(HTTPGenerator):
    """A model behind an OpenAI-compatible ``/chat/completions`` (or ``/completions``) endpoint."""

    family = "openai"
    description = "any OpenAI-compatible chat endpoint (--base-url, key from $OPENAI_API_KEY)"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "OPENAI_API_KEY"
    key_required_for_default = True
    #: ``"chat"`` or ``"completions"``; the ``api`` option overrides it.
    default_api: ClassVar[str] = "chat"
    #: The attachments a chat request carries (MIME types; see :mod:`redline.attachments`):
    #: images as ``image_url`` parts, WAV and MP3 audio as ``input_audio`` parts.
    attachment_types: tuple[str, ...] = ("image/*", "audio/wav", "audio/x-wav", "audio/mpeg")
    #: The largest attachment sent (the OpenAI API's limit for one image).
    max_attachment_bytes: ClassVar[int] = 20 * 1024 * 1024
    #: Request fields sent as given when set (``extra_body`` is merged in as well).
    PASSTHROUGH: ClassVar[tuple[str, ...]] = ("stop", "seed", "presence_penalty", "frequency_penalty")
    option_specs = (
        HTTPGenerator.option_specs
        + (
            GeneratorOption(
                "api", "choice", help="chat or completions (default: the family's)", choices=("chat", "completions")
            ),
        )
        + REQUEST_FIELD_OPTIONS
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.api = str(self.option_values["api"] or self.default_api)
        self.supports_tools = self.api == "chat"  # the completions API has no tools
        if self.api != "chat":  # nor attachments
            self.attachment_types = ()
        self.extra_body: dict[str, Any] = dict(self.option_values["extra_body"] or {})
        #: The request field of the output length: ``max_completion_tokens`` once the endpoint
        #: refused ``max_tokens`` for it (OpenAI's reasoning models do).
        self.tokens_field = "max_tokens"

    @property
    def endpoint(self) -> str:
        return self.base_url + ("/chat/completions" if self.api == "chat" else "/completions")

    def _body(self, conversation: Conversation, n: int) -> dict:
        body: dict[str, Any] = {"model": self.model}
        if self.api == "chat":
            check_conversation(conversation, self.attachment_types, self.max_attachment_bytes, self.name)
            body["messages"] = conversation.to_openai(attachments=True, tools=True)
            if conversation.tools:
                body["tools"] = [tool.to_openai() for tool in conversation.tools]
        else:
            body["prompt"] = render_plain(conversation)
        if n > 1:
            body["n"] = n
        if not {"max_tokens", "max_completion_tokens"} & self.extra_body.keys():
            body[self.tokens_field] = self.output_tokens()
        for name in ("temperature", "top_p"):
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
                calls: list[ToolCall] = []
                if self.api == "chat":
                    message = choice.get("message") or {}
                    content = message.get("content")
                    calls = self._tool_calls(message.get("tool_calls"))
                else:
                    content = choice.get("text")
                if content is not None and not isinstance(content, str):
                    raise TypeError
                if content is None and not calls:
                    outputs.append(None)
                else:
                    outputs.append(Message(text=content, tool_calls=calls))
            report_response(data.get("usage"))  # real token counts, for a scan's budget
            return outputs
        except (KeyError, TypeError, AttributeError):
            raise MalformedResponse(
                f"malformed response from {self.endpoint}: no {'choices[].message.content' if self.api == 'chat' else 'choices[].text'} "
                f"in {self.excerpt(json.dumps(data), 200)}"
            ) from None

    def _tool_calls(self, raw: Any) -> list[ToolCall]:
        """The ``tool_calls`` of one chat answer as :class:`ToolCall` objects (none when absent).

        A list that is not shaped as the API documents is a malformed answer (tried again, as
        any); arguments that are not a JSON object are the model's own output, so they fail this
        request at once with one :class:`GeneratorError` naming the tool."""
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise TypeError
        calls = []
        for index, entry in enumerate(raw):
            function = entry.get("function")
            name = function.get("name")
            if not isinstance(name, str) or not name:
                raise TypeError
            arguments = function.get("arguments")
            if arguments is None or arguments == "":
                arguments = "{}"
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except (ValueError, RecursionError):
                    arguments = None
            if not isinstance(arguments, dict):
                shown = function.get("arguments")
                raise GeneratorError(
                    f"{self.name}: the model called tool {name!r} with arguments that are not a JSON object: "
                    f"{self.excerpt(str(shown), 120)!r}"
                )
            try:
                calls.append(ToolCall(id=str(entry.get("id") or f"call_{index}"), name=name, arguments=arguments))
            except AttemptError as exc:
                raise GeneratorError(f"{self.name}: {exc}") from None
        return calls

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        """One request for ``n`` outputs (the ``n`` field); a server that ignores it gives one."""
        body = self._body(conversation, n)
        chars = sum(len(m.get("content") or "") for m in body.get("messages", [])) + len(body.get("prompt", ""))
        tokens = body.get(self.tokens_field)
        tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else self.output_tokens()
        estimate = estimate_tokens(chars, tokens, n) if self.limiter.limits_tokens else 0
        timeout = self.request_timeout(tokens)
        try:
            return await self.post_json(self.endpoint, body, estimate, parse=self._parse, timeout=timeout)
        except GeneratorError as exc:
            if "max_tokens" not in body or "max_completion_tokens" not in str(exc):
                raise
            # the endpoint wants max_completion_tokens instead (e.g. OpenAI's reasoning models)
            self.tokens_field = "max_completion_tokens"
            body["max_completion_tokens"] = body.pop("max_tokens")
            return await self.post_json(self.endpoint, body, estimate, parse=self._parse, timeout=timeout)

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
