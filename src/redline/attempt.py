"""The attempt data model: one prompt, every generation made from it, and their scores.

Vocabulary (seed 002):

* :class:`Message` — one text (and optionally one attachment) sent to or received from a model.
* :class:`Turn` — a :class:`Message` with the role of whoever said it (``system``, ``user``,
  ``assistant``, ``tool``).
* :class:`Conversation` — an ordered list of turns (and the tools the model may call).
* :class:`Attempt` — one seed prompt, and one conversation history *per generation*.

Tool calling (OpenAI-compatible): a conversation may offer :class:`Tool` definitions
(``Conversation.tools``), an assistant message may carry the model's :class:`ToolCall` requests
(``Message.tool_calls``), and a ``tool`` turn carries one result, naming the call it answers
(``Message.tool_call_id``). These fields are left out of the JSON when empty, so attempts without
tools serialise exactly as before.

Access and setting rules of :class:`Attempt`:

* ``attempt.prompt`` returns the first user prompt (with any system turn before it), as a
  :class:`Conversation`. It may be set exactly once; a second set raises :class:`AttemptError`.
* Setting ``attempt.outputs = [...]`` adds one layer of responses: the first layer expands the
  single prompt into one history per generation; every later layer must have the same length.
* ``attempt.outputs`` returns the latest layer, ``attempt.all_outputs`` every layer.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import mimetypes
import uuid as _uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.errors import RedlineError

__all__ = [
    "ATTEMPT_COMPLETE",
    "ATTEMPT_NEW",
    "ATTEMPT_STARTED",
    "Attempt",
    "AttemptError",
    "Conversation",
    "Message",
    "Tool",
    "ToolCall",
    "Turn",
]

ATTEMPT_NEW = 0
"""Status of an attempt that has been created but not sent to a generator."""
ATTEMPT_STARTED = 1
"""Status of an attempt that has outputs but has not been fully scored."""
ATTEMPT_COMPLETE = 2
"""Status of an attempt whose outputs have been scored by every detector."""

ROLES = ("system", "user", "assistant", "tool")


class AttemptError(RedlineError, ValueError):
    """Raised when an :class:`Attempt` is used against its access/setting rules."""


@dataclass
class Tool:
    """A function the model may call: its ``name``, a ``description`` the model reads and the JSON
    schema of its arguments (``parameters``, an ``object`` schema)."""

    name: str
    description: str = ""
    parameters: dict = field(default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise AttemptError("a tool needs a non-empty name")
        if not isinstance(self.parameters, dict):
            raise AttemptError(f"tool {self.name!r}: parameters must be a JSON schema object")

    def as_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "parameters": copy.deepcopy(self.parameters)}

    @classmethod
    def from_dict(cls, value: Any) -> Tool:
        """Build a tool from :meth:`as_dict` output or an OpenAI ``{"type": "function",
        "function": {...}}`` definition."""
        if isinstance(value, dict) and isinstance(value.get("function"), dict):
            value = value["function"]
        if not isinstance(value, dict):
            raise AttemptError(f"a tool must be a dict with a 'name', not {type(value).__name__}")
        return cls(
            name=value.get("name"),  # type: ignore[arg-type]  # checked in __post_init__
            description=value.get("description") or "",
            parameters=copy.deepcopy(value.get("parameters") or {"type": "object", "properties": {}}),
        )

    def to_openai(self) -> dict:
        """The definition an OpenAI-compatible ``tools`` list takes."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self.parameters),
            },
        }


@dataclass
class ToolCall:
    """One call the model asked for: the call's ``id`` (which the result's ``tool_call_id``
    names), the tool's ``name`` and its ``arguments`` (a JSON object, decoded)."""

    id: str
    name: str
    arguments: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, dict):
            raise AttemptError(f"the arguments of a call to {self.name!r} must be a JSON object")

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "arguments": copy.deepcopy(self.arguments)}

    @classmethod
    def from_dict(cls, value: Any) -> ToolCall:
        if isinstance(value, ToolCall):
            return value
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise AttemptError("a tool call must be a dict with a 'name'")
        return cls(
            id=str(value.get("id") or ""), name=value["name"], arguments=copy.deepcopy(value.get("arguments") or {})
        )

    def describe(self) -> str:
        """``name({"arg": value})``: the call as reports show it."""
        return f"{self.name}({json.dumps(self.arguments, ensure_ascii=False)})"

    def to_openai(self) -> dict:
        """The call as an OpenAI assistant message lists it (arguments as JSON text)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


@dataclass
class Message:
    """A single message posed to or received from a generator.

    ``text`` is the text of the message. An attachment (image, audio, file) is referenced by
    ``data_path`` with its MIME ``data_type`` as ``(type, encoding)``; its content is loaded lazily
    through :attr:`data`, which also records the sha256 ``data_checksum``. When a checksum is
    already known, loading verifies it and raises :class:`AttemptError` on a mismatch.
    """

    text: str | None = None
    lang: str | None = None
    data_path: str | None = None
    data_type: tuple[str | None, str | None] | None = None
    data_checksum: str | None = None
    notes: dict | None = field(default_factory=dict)
    #: The tools the model asked to call in this (assistant) message, in order.
    tool_calls: list[ToolCall] = field(default_factory=list)
    #: In a ``tool`` turn: the id of the call this message is the result of.
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        self._data: bytes | None = None
        self.tool_calls = [ToolCall.from_dict(c) for c in (self.tool_calls or [])]
        if self.data_path is not None:
            self.data_path = str(self.data_path)
            if self.data_type is None:
                self.data_type = mimetypes.guess_type(self.data_path)
        if self.data_type is not None:
            self.data_type = tuple(self.data_type)  # type: ignore[assignment]
        if self.notes is None:
            self.notes = {}

    @property
    def data(self) -> bytes | None:
        """The attachment's bytes, read from ``data_path`` on first access (``None`` if none)."""
        if self._data is None and self.data_path is not None:
            path = Path(self.data_path)
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise AttemptError(f"cannot read attachment {self.data_path}: {exc.strerror}") from None
            checksum = hashlib.sha256(raw).hexdigest()
            if self.data_checksum is not None and self.data_checksum != checksum:
                raise AttemptError(
                    f"attachment {self.data_path} changed: sha256 {checksum} != recorded {self.data_checksum}"
                )
            self.data_checksum = checksum
            self._data = raw
        return self._data

    @data.setter
    def data(self, value: bytes | None) -> None:
        self._data = value
        self.data_checksum = None if value is None else hashlib.sha256(value).hexdigest()

    def as_dict(self) -> dict:
        """A JSON-ready dict; the attachment itself is not included, only its path and checksum.
        ``tool_calls`` and ``tool_call_id`` appear only when set."""
        value: dict[str, Any] = {
            "text": self.text,
            "lang": self.lang,
            "data_path": self.data_path,
            "data_type": list(self.data_type) if self.data_type is not None else None,
            "data_checksum": self.data_checksum,
            "notes": _jsonable(self.notes or {}),
        }
        if self.tool_calls:
            value["tool_calls"] = [c.as_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            value["tool_call_id"] = self.tool_call_id
        return value

    @classmethod
    def from_dict(cls, value: dict | str | None) -> Message:
        """Build a message from :meth:`as_dict` output (a bare string is taken as the text)."""
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls(text=value)
        if not isinstance(value, dict):
            raise AttemptError(f"a message must be a dict or a string, not {type(value).__name__}")
        data_type = value.get("data_type")
        return cls(
            text=value.get("text"),
            lang=value.get("lang"),
            data_path=value.get("data_path"),
            data_type=tuple(data_type) if data_type is not None else None,
            data_checksum=value.get("data_checksum"),
            notes=_copied(value.get("notes")),
            tool_calls=[ToolCall.from_dict(c) for c in value.get("tool_calls") or []],
            tool_call_id=value.get("tool_call_id"),
        )

    def display_text(self) -> str | None:
        """The text as reports show it: one ``[tool call] name({...})`` line per call after it."""
        if not self.tool_calls:
            return self.text
        lines = [self.text] if self.text else []
        lines += [f"[tool call] {call.describe()}" for call in self.tool_calls]
        return "\n".join(lines)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]


def _as_message(value: Message | str | None) -> Message:
    if isinstance(value, Message):
        return value
    if value is None or isinstance(value, str):
        return Message(text=value)
    raise AttemptError(f"expected a Message or a string, not {type(value).__name__}")


@dataclass
class Turn:
    """A :class:`Message` attributed to a participant: ``system``, ``user``, ``assistant`` or
    ``tool`` (the result of a tool call)."""

    role: str
    content: Message

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise AttemptError(f"unknown role {self.role!r}: expected one of {', '.join(ROLES)}")
        self.content = _as_message(self.content)

    def as_dict(self) -> dict:
        return {"role": self.role, "content": self.content.as_dict()}

    @classmethod
    def from_dict(cls, value: dict) -> Turn:
        """Build a turn from ``{"role": ..., "content": message-dict-or-string}``."""
        if not isinstance(value, dict) or "role" not in value:
            raise AttemptError("a turn must be a dict with a 'role' and a 'content'")
        return cls(role=value["role"], content=Message.from_dict(value.get("content")))


@dataclass
class Conversation:
    """An ordered sequence of :class:`Turn` objects, with free-form ``notes`` and the
    :class:`Tool` definitions the model may call (``tools``, empty for a plain chat)."""

    turns: list[Turn] = field(default_factory=list)
    notes: dict | None = field(default_factory=dict)
    tools: list[Tool] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.notes is None:
            self.notes = {}
        self.tools = [t if isinstance(t, Tool) else Tool.from_dict(t) for t in (self.tools or [])]

    def tool_calls(self) -> list[ToolCall]:
        """Every call the model asked for in this conversation, in order."""
        return [call for turn in self.turns if turn.role == "assistant" for call in turn.content.tool_calls]

    @property
    def uses_tools(self) -> bool:
        """Whether this conversation offers tools or holds tool calls or results."""
        return bool(self.tools) or any(
            t.role == "tool" or t.content.tool_calls or t.content.tool_call_id is not None for t in self.turns
        )

    def last_message(self, role: str | None = None) -> Message:
        """The last message exchanged, or the last one said by ``role``.

        Raises :class:`AttemptError` when the conversation holds no such message.
        """
        for turn in reversed(self.turns):
            if role is None or turn.role == role:
                return turn.content
        who = f" from {role!r}" if role else ""
        raise AttemptError(f"the conversation has no message{who}")

    def as_dict(self) -> dict:
        value = {"turns": [t.as_dict() for t in self.turns], "notes": _jsonable(self.notes or {})}
        if self.tools:
            value["tools"] = [t.as_dict() for t in self.tools]
        return value

    @staticmethod
    def from_dict(value: dict) -> Conversation:
        if not isinstance(value, dict):
            raise AttemptError("a conversation must be a dict with 'turns'")
        return Conversation(
            turns=[Turn.from_dict(t) for t in value.get("turns", [])],
            notes=_copied(value.get("notes")),
            tools=[Tool.from_dict(t) for t in value.get("tools") or []],
        )

    @classmethod
    def from_openai(cls, conv: list[dict], notes: dict | None = None) -> Conversation:
        """Build a conversation from OpenAI chat messages (``[{"role", "content"}, ...]``).

        ``content`` may be a string or a list of parts; text parts are joined, and an
        ``image_url`` part becomes the message's attachment path.
        """
        turns = []
        for i, msg in enumerate(conv):
            if not isinstance(msg, dict) or "role" not in msg:
                raise AttemptError(f"OpenAI message {i} must be a dict with 'role' and 'content'")
            content = msg.get("content")
            if isinstance(content, list):
                texts, data_path = [], None
                for part in content:
                    if part.get("type") == "text":
                        texts.append(part.get("text", ""))
                    elif part.get("type") == "image_url":
                        url = part.get("image_url")
                        data_path = url.get("url") if isinstance(url, dict) else url
                message = Message(text="\n".join(texts) if texts else None, data_path=data_path)
            else:
                message = Message(text=content)
            calls = msg.get("tool_calls")
            if calls:
                message.tool_calls = [_call_from_openai(c, i) for c in calls]
            if msg.get("tool_call_id") is not None:
                message.tool_call_id = str(msg["tool_call_id"])
            turns.append(Turn(role=msg["role"], content=message))
        return cls(turns=turns, notes=dict(notes or {}))

    def to_openai(self, attachments: bool = False, tools: bool = False) -> list[dict]:
        """OpenAI chat messages for this conversation.

        With ``attachments=False`` (a text-only model) a message that carries an attachment raises
        :class:`AttemptError`: sending its text alone would measure something else. With
        ``attachments=True`` an image attachment becomes an ``image_url`` content part after the
        text part: an ``http(s)://`` or ``data:`` URL as it is, a local file as a base64 ``data:``
        URL; a local WAV or MP3 file becomes an ``input_audio`` part. Other attachment types raise
        :class:`AttemptError`.

        With ``tools=False`` (a model without tool calling) a conversation that offers tools or
        holds tool calls raises :class:`AttemptError` for the same reason. With ``tools=True`` an
        assistant message's calls become its ``tool_calls`` and a ``tool`` turn carries its
        ``tool_call_id``; the definitions themselves (:attr:`tools`) are the caller's to send.
        """
        if not tools and self.uses_tools:
            raise AttemptError(
                "this model does not call tools, but the conversation offers tools or holds tool calls; "
                "use a tool-calling chat model (e.g. openai:MODEL)"
            )
        messages: list[dict[str, Any]] = []
        for turn in self.turns:
            message = turn.content
            if message.tool_calls or message.tool_call_id is not None:
                entry: dict[str, Any] = {"role": turn.role, "content": message.text}
                if message.tool_calls:
                    entry["tool_calls"] = [c.to_openai() for c in message.tool_calls]
                else:
                    entry["content"] = message.text or ""
                if message.tool_call_id is not None:
                    entry["tool_call_id"] = message.tool_call_id
                messages.append(entry)
                continue
            if message.data_path is None:
                messages.append({"role": turn.role, "content": message.text or ""})
                continue
            if not attachments:
                raise AttemptError(
                    f"this model takes text only, but a {turn.role} message has the attachment "
                    f"{message.data_path}; use a multimodal chat model (e.g. openai:MODEL)"
                )
            parts: list[dict] = [{"type": "text", "text": message.text}] if message.text else []
            parts.append(_attachment_part(message))
            messages.append({"role": turn.role, "content": parts})
        return messages


def _call_from_openai(call: Any, index: int) -> ToolCall:
    """A :class:`ToolCall` from an OpenAI ``tool_calls`` entry (arguments as JSON text)."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise AttemptError(f"OpenAI message {index}: a tool call needs a function with a name")
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            raise AttemptError(f"OpenAI message {index}: the arguments of {function['name']!r} are not JSON") from None
    return ToolCall(id=str(call.get("id") or ""), name=function["name"], arguments=arguments)


#: The ``format`` of an OpenAI ``input_audio`` part for each audio MIME type it takes.
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def _attachment_part(message: Message) -> dict:
    """The content part of ``message``'s attachment: ``input_audio`` (base64) for a local WAV or
    MP3 file, else ``image_url`` (see ``to_openai``)."""
    mime = (message.data_type or (None, None))[0] or ""
    path = str(message.data_path)
    if mime in _AUDIO_FORMATS and not path.startswith(("http://", "https://", "data:")):
        data = message.data
        assert data is not None  # data_path is set, so reading it returned bytes or raised
        encoded = base64.b64encode(data).decode("ascii")
        return {"type": "input_audio", "input_audio": {"data": encoded, "format": _AUDIO_FORMATS[mime]}}
    return {"type": "image_url", "image_url": {"url": _image_url(message)}}


def _image_url(message: Message) -> str:
    """The URL a chat API receives for ``message``'s image attachment (see ``to_openai``)."""
    path = str(message.data_path)
    if path.startswith(("http://", "https://", "data:")):
        return path
    mime = (message.data_type or (None, None))[0] or ""
    if not mime.startswith("image/"):
        raise AttemptError(
            f"attachment {path} is not an image or WAV/MP3 audio ({mime or 'unknown type'}); chat models take only those"
        )
    data = message.data
    assert data is not None  # data_path is set, so reading it returned bytes or raised
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _as_conversation(value: Conversation | Message | str) -> Conversation:
    if isinstance(value, Conversation):
        return copy.deepcopy(value)
    return Conversation(turns=[Turn(role="user", content=_as_message(value))])


class Attempt:
    """Everything that constitutes one attempt at evaluating a model with one seed prompt.

    Parameters follow seed 002: ``status``, ``prompt`` (a :class:`Message`, :class:`Conversation`
    or string), ``probe_classname``, ``probe_params``, ``targets`` (strings detectors look for),
    ``notes``, ``detector_results`` (detector name → one score per output), ``goal``, ``seq``
    (sequence number within the probe), ``reverse_translation_outputs`` and ``uuid`` (a new
    random one when not given).
    """

    def __init__(
        self,
        status: int = ATTEMPT_NEW,
        prompt: Conversation | Message | str | None = None,
        probe_classname: str | None = None,
        probe_params: dict | None = None,
        targets: list[str] | None = None,
        notes: dict | None = None,
        detector_results: dict | None = None,
        goal: str | None = None,
        seq: int = -1,
        reverse_translation_outputs: list[Message] | None = None,
        uuid: str | None = None,
    ) -> None:
        self.uuid = uuid or _new_uuid()
        self.status = status
        self.probe_classname = probe_classname
        self.probe_params = dict(probe_params or {})
        self.targets = list(targets or [])
        self.notes = dict(notes or {})
        self.detector_results: dict[str, list[float | None]] = dict(detector_results or {})
        self.goal = goal
        self.seq = seq
        self.reverse_translation_outputs: list[Message] = [_as_message(m) for m in (reverse_translation_outputs or [])]
        #: One history per generation (one, the prompt, before any output).
        self.conversations: list[Conversation] = []
        self._layers = 0
        if prompt is not None:
            self.prompt = prompt

    # -- prompt ---------------------------------------------------------------------------------
    @property
    def prompt(self) -> Conversation | None:
        """The first user prompt, with the turns before it (e.g. a system prompt): a copy, which
        the caller may change."""
        view = self.prompt_view()
        return copy.deepcopy(view) if view is not None else None

    @prompt.setter
    def prompt(self, value: Conversation | Message | str) -> None:
        if self.conversations:
            raise AttemptError("the prompt of an attempt can be set only once")
        if value is None:
            raise AttemptError("the prompt cannot be set to None")
        conv = _as_conversation(value)
        if not any(t.role == "user" for t in conv.turns):
            raise AttemptError("a prompt needs at least one user turn")
        self.conversations = [conv]

    def prompt_view(self) -> Conversation | None:
        """:attr:`prompt` without the copy: a new :class:`Conversation` (its list of turns is its
        own) holding this attempt's turns, messages, notes and tools. For readers — a generator
        sending the prompt, a detector reading the request, :meth:`as_dict` — which change none of
        them."""
        if not self.conversations:
            return None
        first = self.conversations[0]
        turns = []
        for turn in first.turns:
            turns.append(turn)
            if turn.role == "user":
                break
        return Conversation(turns=turns, notes=first.notes, tools=first.tools)

    # -- outputs --------------------------------------------------------------------------------
    @property
    def outputs(self) -> list[Message]:
        """The latest layer of model outputs: one message per generation (empty before any)."""
        if self._layers == 0:
            return []
        return [c.last_message("assistant") for c in self.conversations]

    @outputs.setter
    def outputs(self, value: Sequence[Message | str | None]) -> None:
        if not self.conversations:
            raise AttemptError("set the prompt of an attempt before its outputs")
        messages = [_as_message(v) for v in value]
        if self._layers == 0 and len(self.conversations) == 1:
            # one history per generation: the attempt's own prompt conversation is the first
            first = self.conversations[0]
            self.conversations = [first] + [copy.deepcopy(first) for _ in messages[1:]] if messages else []
        if len(messages) != len(self.conversations):
            raise AttemptError(f"expected {len(self.conversations)} outputs (one per generation), got {len(messages)}")
        for conv, msg in zip(self.conversations, messages):
            conv.turns.append(Turn(role="assistant", content=msg))
        self._layers += 1

    @property
    def all_outputs(self) -> list[Message]:
        """Every model output of every generation, layer by layer."""
        return [t.content for c in self.conversations for t in c.turns if t.role == "assistant"]

    def add_user_turns(self, messages: Sequence[Message | str]) -> None:
        """Continue every history with a user message (one per generation) before a new layer."""
        if self._layers == 0:
            raise AttemptError("a follow-up user turn needs outputs to follow")
        msgs = [_as_message(m) for m in messages]
        if len(msgs) == 1 and len(self.conversations) > 1:
            msgs = [copy.deepcopy(msgs[0]) for _ in self.conversations]
        if len(msgs) != len(self.conversations):
            raise AttemptError(f"expected {len(self.conversations)} user messages, got {len(msgs)}")
        for conv, msg in zip(self.conversations, msgs):
            conv.turns.append(Turn(role="user", content=msg))

    # -- language -------------------------------------------------------------------------------
    @property
    def lang(self) -> str | None:
        """The language of the attempt: that of its first message."""
        if not self.conversations or not self.conversations[0].turns:
            return None
        return self.conversations[0].turns[0].content.lang

    def prompt_for(self, lang: str | None, *, shared: bool = False) -> Conversation | None:
        """The prompt in ``lang``: the original (pre-translation) prompt when that is the language
        asked for, otherwise the prompt sent to the model (also for ``"*"`` or ``None``). With
        ``shared``, the prompt sent to the model is :meth:`prompt_view` (for a reader) instead of
        a copy."""
        if lang in (None, "*") or lang == self.lang:
            return self.prompt_view() if shared else self.prompt
        original = self.notes.get("pre_translation_prompt")
        if original is not None:
            conv = original if isinstance(original, Conversation) else Conversation.from_dict(original)
            if conv.turns and conv.turns[0].content.lang == lang:
                return conv
        return self.prompt_view() if shared else self.prompt

    def outputs_for(self, lang: str | None) -> list[Message]:
        """The outputs in ``lang``: the model's own outputs for ``"*"``, ``None`` or the attempt's
        language, otherwise ``reverse_translation_outputs`` when they were filled in."""
        if lang in (None, "*") or lang == self.lang or not self.reverse_translation_outputs:
            return self.outputs
        return list(self.reverse_translation_outputs)

    # -- serialisation ---------------------------------------------------------------------------
    def as_dict(self) -> dict:
        """A JSON-ready dict from which :meth:`from_dict` rebuilds an equal attempt."""
        prompt = self.prompt_view()  # as_dict copies what it reads
        return {
            "entry_type": "attempt",
            "uuid": self.uuid,
            "seq": self.seq,
            "status": self.status,
            "probe_classname": self.probe_classname,
            "probe_params": _jsonable(self.probe_params),
            "targets": list(self.targets),
            "prompt": prompt.as_dict() if prompt is not None else None,
            "outputs": [m.as_dict() for m in self.outputs],
            "detector_results": _jsonable(self.detector_results),
            "notes": _jsonable(self.notes),
            "goal": self.goal,
            "conversations": [c.as_dict() for c in self.conversations],
            "output_layers": self._layers,
            "reverse_translation_outputs": [m.as_dict() for m in self.reverse_translation_outputs],
        }

    @classmethod
    def from_dict(cls, value: dict) -> Attempt:
        """Rebuild an attempt from :meth:`as_dict` output (a stored attempt included)."""
        attempt = cls(
            status=value.get("status", ATTEMPT_NEW),
            probe_classname=value.get("probe_classname"),
            probe_params=value.get("probe_params"),
            targets=value.get("targets"),
            notes=_copied(value.get("notes")),
            detector_results=_copied(value.get("detector_results")),
            goal=value.get("goal"),
            seq=value.get("seq", -1),
            reverse_translation_outputs=[Message.from_dict(m) for m in value.get("reverse_translation_outputs") or []],
            uuid=value.get("uuid"),
        )
        conversations = value.get("conversations")
        if conversations:
            attempt.conversations = [Conversation.from_dict(c) for c in conversations]
            layers = value.get("output_layers")
            if layers is None:  # written before the layers were counted
                layers = sum(1 for t in attempt.conversations[0].turns if t.role == "assistant")
            attempt._layers = layers
        elif value.get("prompt"):
            attempt.prompt = Conversation.from_dict(value["prompt"])
        return attempt

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attempt):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Attempt(seq={self.seq}, probe={self.probe_classname!r}, status={self.status}, "
            f"generations={len(self.conversations) if self._layers else 0})"
        )


def _new_uuid() -> str:
    """A random (version 4) UUID as text."""
    return str(_uuid.uuid4())


def _copied(value: dict | None) -> dict:
    """A deep copy of the JSON-ready dict ``value`` (a new empty one for ``None`` or an empty one)."""
    return _jsonable(value) if value else {}


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    """A deep copy of ``value`` with every conversation, turn or message in it as its ``as_dict``
    and every tuple as a list."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {k: v if type(v) in _SCALARS else _jsonable(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else _jsonable(v) for v in value]
    if isinstance(value, (Conversation, Message, Turn)):
        return value.as_dict()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return copy.deepcopy(value)


def texts(messages: Iterable[Message | None]) -> list[str | None]:
    """The text of each message (``None`` for a missing output)."""
    return [m.text if m is not None else None for m in messages]
