"""``rest:NAME`` — any in-house HTTP endpoint that takes a prompt and returns text as JSON.

``NAME`` labels the endpoint in runs and reports (and in the cache key). Options:

* ``url`` — the full URL to POST to (``base_url`` is accepted as well);
* ``method`` — ``POST`` (default) or ``PUT``;
* ``body`` — the request body template, either JSON text or a mapping/list (from a YAML config).
  Placeholders: ``{prompt}`` (the last user message), ``{system}`` (the system prompt, empty if
  none), ``{messages}`` (the OpenAI-style message list), ``{model}`` (``NAME``), ``{max_tokens}``
  (the output length every ``openai:`` request carries: put it where the endpoint reads one)
  ``{temperature}``, and ``{image_base64}`` / ``{image_mime}`` (the base64 bytes and MIME type of
  the last image attached to the conversation; empty without one). In JSON text every value is
  JSON-escaped: ``"{prompt}"`` inside quotes
  receives the escaped string, ``{messages}`` / ``{max_tokens}`` outside quotes receive JSON
  values. In a mapping, a string that is exactly ``"{messages}"`` (or ``"{max_tokens}"``,
  ``"{temperature}"``) becomes the value itself. Default: ``{"prompt": "{prompt}"}``. Only a
  template with ``{image_base64}`` takes images (``attachment_types``): a prompt with an image
  for any other is refused in one line before the scan (never sent without its image);
* ``headers`` — a mapping; ``${VAR}`` in a value is replaced by the environment variable ``VAR``
  when the generator starts (a missing variable is an error), so secrets stay out of configs and
  of the store;
* ``response_path`` — where the text is in the JSON answer: dotted keys and indexes,
  ``choices.0.message.content``, ``$.data[0].text`` or ``outputs[*].text`` (every element: one
  output each). ``response_format: text`` takes the whole body as the text instead;
* and every transport option of :class:`~redline.generators.transport.http.HTTPGenerator` (``timeout``,
  ``max_retries``, ``rpm``, ``tpm``, ``concurrency``...).
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any, ClassVar

from redline.attachments import AttachmentError, check_conversation
from redline.attempt import Conversation, Message
from redline.generators.base import GeneratorUnavailable
from redline.generators.options import GeneratorOption
from redline.generators.transport.http import HTTPGenerator
from redline.generators.transport.ratelimit import estimate_tokens
from redline.generators.transport.retry import MalformedResponse
from redline.generators.transport.secrets import ENV_REFERENCE, expand_env, mask_url

__all__ = ["RestGenerator", "extract", "parse_path", "render_body"]

_PLACEHOLDER = re.compile(r"\{(prompt|system|messages|model|max_tokens|temperature|image_base64|image_mime)\}")
_PATH_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[(\d+|\*|'[^']*'|\"[^\"]*\")\]")
_WILDCARD = object()


def parse_path(path: str) -> list[Any]:
    """``"$.data[0].text"`` → ``["data", 0, "text"]``; ``[*]`` becomes a wildcard. Raises
    :class:`ValueError` on a path that cannot be read."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    tokens: list[Any] = []
    position = 0
    while position < len(text):
        match = _PATH_TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot read response_path {path!r} at {text[position:]!r}")
        key, index = match.group(1), match.group(2)
        if index is not None:
            if index == "*":
                tokens.append(_WILDCARD)
            elif index[0] in "'\"":
                tokens.append(index[1:-1])
            else:
                tokens.append(int(index))
        else:
            tokens.append(key)
        position = match.end()
    if not tokens:
        raise ValueError(f"response_path {path!r} is empty")
    return tokens


def extract(data: Any, tokens: list[Any]) -> list[Any]:
    """Every value at ``tokens`` in ``data`` (several with a wildcard, none when absent)."""
    values = [data]
    for token in tokens:
        found: list[Any] = []
        for value in values:
            if token is _WILDCARD:
                if isinstance(value, list):
                    found.extend(value)
                elif isinstance(value, dict):
                    found.extend(value.values())
            elif isinstance(value, dict):
                key = token if isinstance(token, str) else str(token)
                if key in value:
                    found.append(value[key])
            elif isinstance(value, list):
                try:
                    index = int(token)
                except (TypeError, ValueError):
                    continue
                if -len(value) <= index < len(value):
                    found.append(value[index])
        values = found
    return values


def render_body(template: Any, values: dict[str, Any]) -> str:
    """The request body for ``values`` (``prompt``, ``system``, ``messages``, ``model``,
    ``max_tokens``, ``temperature``, ``image_base64``, ``image_mime``) from a JSON-text or
    structured ``template``."""
    if isinstance(template, str):

        def replace(match: re.Match) -> str:
            value = values[match.group(1)]
            if isinstance(value, str):
                return json.dumps(value)[1:-1]  # the template supplies the quotes
            return json.dumps(value)

        return _PLACEHOLDER.sub(replace, template)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            whole = _PLACEHOLDER.fullmatch(node)
            if whole is not None:
                return values[whole.group(1)]
            return _PLACEHOLDER.sub(lambda m: "" if values[m.group(1)] is None else str(values[m.group(1)]), node)
        return node

    return json.dumps(walk(template))


class RestGenerator(HTTPGenerator):
    """A model behind a custom JSON HTTP endpoint (body template, headers, response path)."""

    family = "rest"
    description = "any JSON HTTP endpoint: body template, ${ENV} headers, path to the text"
    probe_path = ""  # a GET on the URL itself: any HTTP answer proves someone is there
    #: One request may give several outputs (a ``[*]`` response path), though no ``n`` is sent.
    supports_n = True
    #: What the endpoint takes besides text: images, when the body template has ``{image_base64}``.
    attachment_types: tuple[str, ...] = ()
    #: The largest attachment sent.
    max_attachment_bytes: ClassVar[int] = 20 * 1024 * 1024
    option_specs = HTTPGenerator.option_specs + (
        GeneratorOption("url", "url", help="the full URL to send requests to (or base_url)"),
        GeneratorOption("method", "choice", "POST", "the HTTP method", choices=("POST", "PUT")),
        GeneratorOption(
            "body",
            "template",
            {"prompt": "{prompt}"},
            "the request body: JSON text or a mapping with {prompt}, {system}, {messages}...",
        ),
        GeneratorOption("response_path", "text", help="where the text is in the JSON answer, e.g. choices.0.text"),
        GeneratorOption(
            "response_format", "choice", "json", "json, or text: the whole answer", choices=("json", "text")
        ),
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        url = options.get("url") or options.get("base_url") or ""
        super().__init__(model, **{**options, "base_url": url})
        self.url = self.base_url
        self.method: str = self.option_values["method"]
        self.body_template: Any = self.option_values["body"]
        self.response_format: str = self.option_values["response_format"]
        path = self.option_values["response_path"]
        self.response_path = str(path) if path else None
        self._tokens: list[Any] | None = None
        if "{image_base64}" in json.dumps(self.body_template):
            self.attachment_types = ("image/*",)
        if self.response_format == "json":
            if not self.response_path:
                raise GeneratorUnavailable(
                    f"rest:{model}: set response_path to where the text is in the answer, e.g. choices.0.text"
                )
            try:
                self._tokens = parse_path(self.response_path)
            except ValueError as exc:
                raise GeneratorUnavailable(f"rest:{model}: {exc}") from None

    def _check_options(self) -> None:
        if not self.model:
            raise GeneratorUnavailable("the rest generator needs a name: rest:NAME (with the url option)")
        if not self.url:
            raise GeneratorUnavailable(
                f"rest:{self.model}: set the url option (or --base-url) to the endpoint's full URL"
            )
        super()._check_options()
        self._url()  # a ${VAR} in the URL that is not set fails before the run starts
        sample = self._values(Conversation.from_openai([{"role": "user", "content": 'a "quoted"\nprompt'}]))
        try:
            json.loads(render_body(self.body_template, sample))
        except ValueError as exc:
            raise GeneratorUnavailable(
                f"rest:{self.model}: the body template does not give valid JSON: {exc}"
            ) from None
        except RecursionError:
            raise GeneratorUnavailable(f"rest:{self.model}: the body template is nested too deeply") from None

    def _url(self) -> str:
        """The URL requests go to: ``${VAR}`` (e.g. a key in the query string) replaced by the
        environment variable. Messages and stored settings show the template, and the value is
        among the secrets :meth:`redact` masks."""
        return expand_env(self.url, f"rest:{self.model} url") if "${" in self.url else self.url

    def _secrets(self) -> list[str]:
        names = ENV_REFERENCE.findall(self.url)
        found = [(os.environ.get(name) or "").strip() for name in names]
        return super()._secrets() + [secret for secret in found if len(secret) >= 4]

    def _values(self, conversation: Conversation) -> dict[str, Any]:
        check_conversation(conversation, self.attachment_types, self.max_attachment_bytes, self.name)
        messages = conversation.to_openai(attachments=bool(self.attachment_types))
        user = [t.content.text or "" for t in conversation.turns if t.role == "user"]
        system = [t.content.text or "" for t in conversation.turns if t.role == "system"]
        data, mime = self._image(conversation)
        return {
            "prompt": user[-1] if user else "",
            "system": system[0] if system else "",
            "messages": messages,
            "model": self.model,
            "max_tokens": self.output_tokens(),
            "temperature": self.temperature,
            "image_base64": data,
            "image_mime": mime,
        }

    def _image(self, conversation: Conversation) -> tuple[str, str]:
        """The base64 data and MIME type of the last image attached to ``conversation`` (empty
        strings without one); a remote image URL is refused, since the body carries the bytes."""
        for turn in reversed(conversation.turns):
            message = turn.content
            if message.data_path is None:
                continue
            path = message.data_path
            if path.startswith(("http://", "https://")):
                raise AttachmentError(f"{self.name} sends images in its body and cannot fetch the remote image {path}")
            if path.startswith("data:"):
                head, _, payload = path[5:].partition(",")
                if not head.endswith(";base64"):
                    raise AttachmentError(f"{self.name} takes base64 data: URLs only, not {path[:40]}…")
                return payload, head[: -len(";base64")]
            data = message.data or b""
            return base64.b64encode(data).decode("ascii"), (message.data_type or (None, None))[0] or ""
        return "", ""

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        """One request (``n`` is not sent): one output per value at ``response_path``."""
        values = self._values(conversation)
        body = render_body(self.body_template, values)
        tokens = values["max_tokens"]
        estimate = estimate_tokens(len(body), tokens) if self.limiter.limits_tokens else 0
        timeout = self.request_timeout(tokens)
        if self.response_format == "text":
            text = await self.send(self._url(), body.encode(), estimate, self.method, as_text=True, timeout=timeout)
            return [Message(text=text)]
        return await self.send(self._url(), body.encode(), estimate, self.method, parse=self._parse, timeout=timeout)

    def _parse(self, data: Any) -> list[Message | None]:
        """One output per value at ``response_path``; :class:`MalformedResponse` (retried like a
        5xx) when there is none or one is not text."""
        assert self._tokens is not None
        found = extract(data, self._tokens)
        if not found:
            raise MalformedResponse(
                f"malformed response from {self.url}: nothing at response_path {self.response_path!r} "
                f"in {self.excerpt(json.dumps(data), 200)}"
            )
        outputs: list[Message | None] = []
        for value in found:
            if value is None:
                outputs.append(None)
            elif isinstance(value, (str, int, float, bool)):
                outputs.append(Message(text=str(value)))
            else:
                raise MalformedResponse(
                    f"malformed response from {self.url}: response_path {self.response_path!r} holds "
                    f"{type(value).__name__}, not text"
                )
        return outputs

    def settings(self) -> dict:
        values = super().settings()
        values.pop("base_url", None)
        values.update(
            url=mask_url(self.url),  # a user:password@ is stored as user:***@
            method=self.method,
            body=self.body_template,
            headers=self.header_templates,  # templates only: ${VAR} references, never their values
            response_path=self.response_path,
            response_format=self.response_format,
        )
        return {k: v for k, v in values.items() if v not in (None, {}, "")}
