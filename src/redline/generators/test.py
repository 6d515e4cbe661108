"""Generators for tests and demos: no model, instant, deterministic."""

from __future__ import annotations

from typing import Any

from redline.attempt import Conversation, Message
from redline.generators.base import Generator


class EchoGenerator(Generator):
    """``test.echo``: answers with the last user message, verbatim."""

    family = "test.echo"
    description = "returns the last user message (for tests and demos)"

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        text = conversation.last_message("user").text or ""
        return [Message(text=text) for _ in range(n)]


class BlankGenerator(Generator):
    """``test.blank``: always answers with the empty string."""

    family = "test.blank"
    description = "returns an empty string (for tests and demos)"

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        return [Message(text="") for _ in range(n)]


class RepeatGenerator(Generator):
    """``test.repeat:TEXT``: always answers with ``TEXT`` (scripted answers in tests)."""

    family = "test.repeat"
    description = "returns the text given after 'test.repeat:' (for tests and demos)"

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        return [Message(text=self.model) for _ in range(n)]
