"""LVE prompts: chat messages as the LVE repository writes them, and parameter substitution.

A prompt is a list of :class:`LVEMessage`. An assistant message without ``content`` is a slot
the model fills (its ``variable`` names the answer in multi-variable prompts); ``image_url``
attaches an image (multimodal prompts). Prompt files (``prompt_file``) hold JSON lines of
messages, one JSON message, a JSON list of messages, or plain text (one user message).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from redline.lve.errors import LVEFormatError
from redline.untrusted import UntrustedInputError, load_json

__all__ = ["LVEMessage", "Role", "fill_prompt", "parse_messages", "parse_prompt_text", "substitute", "variables_of"]


class Role(str, Enum):
    """The author of a message."""

    user = "user"
    assistant = "assistant"
    system = "system"

    def __str__(self) -> str:
        return self.value


@dataclass
class LVEMessage:
    """One message of an LVE prompt (``content`` is ``None`` for a slot the model fills)."""

    role: Role
    content: str | None = None
    variable: str | None = None
    image_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The message as the LVE files write it."""
        data: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.variable is not None:
            data["variable"] = self.variable
        if self.image_url is not None:
            data["image_url"] = self.image_url
        return data


_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute(template: str, values: dict[str, Any]) -> str:
    """Format-style substitution that cannot fail or reach attributes.

    ``{name}`` becomes ``str(values[name])`` when ``name`` is a key, ``{{``/``}}`` become
    ``{``/``}`` (as :meth:`str.format` does, so regex quantifiers written ``{{1,6}}`` in
    ``test.json`` arrive as ``{1,6}``), and anything else — ``{0}``, ``{x.attr}``, an unknown
    name, a lone brace — is left as it is instead of raising.
    """

    def repl(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        return str(values[name]) if name in values else token

    return _FIELD.sub(repl, template)


def placeholders(template: str) -> set[str]:
    """The ``{name}`` fields of ``template`` (doubled braces excluded)."""
    return {m.group(1) for m in _FIELD.finditer(template) if m.group(1)}


def parse_messages(items: Any, where: str) -> list[LVEMessage]:
    """Validate a list of message objects; errors name ``where`` and the message number."""
    if not isinstance(items, list):
        raise LVEFormatError(f"{where}: a prompt must be a list of messages, not {type(items).__name__}")
    messages: list[LVEMessage] = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise LVEFormatError(f"{where}: message {number} must be an object, not {type(item).__name__}")
        unknown = set(item) - {"role", "content", "variable", "image_url"}
        if unknown:
            raise LVEFormatError(f"{where}: message {number} has unknown field(s) {', '.join(sorted(unknown))}")
        try:
            role = Role(item.get("role", "user"))
        except ValueError:
            raise LVEFormatError(
                f"{where}: message {number} has unknown role {item.get('role')!r} (user, assistant or system)"
            ) from None
        for key in ("content", "variable", "image_url"):
            if item.get(key) is not None and not isinstance(item[key], str):
                raise LVEFormatError(
                    f"{where}: message {number} '{key}' must be a string, not {type(item[key]).__name__}"
                )
        content = item.get("content")
        if content is None and role != Role.assistant and item.get("image_url") is None:
            raise LVEFormatError(f"{where}: message {number} ({role.value}) has no 'content'")
        if item.get("variable") is not None and role != Role.assistant:
            raise LVEFormatError(f"{where}: message {number}: only assistant messages take a 'variable'")
        messages.append(LVEMessage(role, content, item.get("variable"), item.get("image_url")))
    if not messages:
        raise LVEFormatError(f"{where}: the prompt is empty")
    slots = [m for m in messages if m.role == Role.assistant and m.content is None]
    names = [m.variable for m in slots if m.variable is not None]
    if len(names) != len(set(names)):
        raise LVEFormatError(f"{where}: two assistant messages use the same 'variable'")
    if len(slots) > 1 and len(names) != len(slots):
        raise LVEFormatError(f"{where}: with several assistant messages to fill, each needs a 'variable'")
    return messages


def parse_prompt_text(text: str, path: Path) -> list[LVEMessage]:
    """Messages from a prompt file: JSON lines, one JSON message or list, or plain text."""
    if re.fullmatch(r"\s*<please fill in>\s*", text):
        raise LVEFormatError(f"{path}: the prompt has not been filled in")
    decoded: dict[int, Any] = {}  # line number: its JSON value
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            decoded[number] = load_json(line)
        except json.JSONDecodeError:
            decoded = {}
            break
        except UntrustedInputError as exc:  # nested too deeply, a number Python refuses
            raise LVEFormatError(f"{path}:{number}: {exc.problem}") from None
    if decoded and all(isinstance(item, dict) for item in decoded.values()):
        for number, item in decoded.items():  # per-message problems are reported with their line
            parse_messages([item], f"{path}:{number}")
        return parse_messages(list(decoded.values()), str(path))
    try:
        whole = load_json(text)
    except json.JSONDecodeError:
        return [LVEMessage(Role.user, text)]
    except UntrustedInputError as exc:
        raise LVEFormatError(f"{path}: {exc.problem}") from None
    if isinstance(whole, dict):
        return parse_messages([whole], str(path))
    if isinstance(whole, list):
        return parse_messages(whole, str(path))
    return [LVEMessage(Role.user, text)]


def fill_prompt(messages: list[LVEMessage], values: dict[str, Any]) -> list[LVEMessage]:
    """A copy of ``messages`` with ``{name}`` fields substituted (contents and image URLs)."""
    return [
        replace(
            m,
            content=substitute(m.content, values) if m.content is not None else None,
            image_url=substitute(m.image_url, values) if m.image_url is not None else None,
        )
        for m in messages
    ]


def variables_of(chat: list[LVEMessage]) -> dict[str, str | None]:
    """Assistant messages of a chat by variable name (unnamed ones numbered ``"0"``, ``"1"``…)."""
    variables: dict[str, str | None] = {}
    for message in chat:
        if message.role == Role.assistant:
            name = message.variable if message.variable is not None else str(len(variables))
            variables[name] = message.content
    return variables
