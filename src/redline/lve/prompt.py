"""LVE prompts: chat messages as the LVE repository writes them, and parameter substitution."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["Role", "LVEMessage", "substitute", "messages_from_json"]


class Role(str, Enum):
    user = "user"
    assistant = "assistant"
    system = "system"


@dataclass
class LVEMessage:
    """One message of an LVE prompt. An assistant message with a ``variable`` and no ``content``
    is filled by the model (multi-variable prompts); ``image_url`` makes it multimodal."""

    role: Role
    content: str | None = None
    variable: str | None = None
    image_url: str | None = None

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.variable is not None:
            data["variable"] = self.variable
        if self.image_url is not None:
            data["image_url"] = self.image_url
        return data


_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute(template: str, params: dict[str, Any]) -> str:
    """Format-style substitution that cannot fail or reach attributes: ``{name}`` becomes
    ``params[name]`` when ``name`` is a parameter, ``{{``/``}}`` become ``{``/``}``, and anything
    else (regex quantifiers such as ``{2}``) is left as it is."""

    def repl(match: re.Match) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        return str(params[name]) if name in params else token

    return _FIELD.sub(repl, template)


def messages_from_json(items: list, where: str) -> list[LVEMessage]:
    """Validate a list of message dicts; errors name ``where`` and the message index."""
    from redline.lve.model import LVEFormatError

    messages = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise LVEFormatError(f"{where}: message {i + 1} must be an object, not {type(item).__name__}")
        role = item.get("role", "user")
        try:
            role = Role(role)
        except ValueError:
            raise LVEFormatError(f"{where}: message {i + 1} has unknown role {role!r}") from None
        content = item.get("content")
        if content is not None and not isinstance(content, str):
            raise LVEFormatError(f"{where}: message {i + 1} 'content' must be a string")
        if content is None and not (role == Role.assistant):
            raise LVEFormatError(f"{where}: message {i + 1} ({role.value}) has no 'content'")
        messages.append(LVEMessage(role, content, item.get("variable"), item.get("image_url")))
    return messages
