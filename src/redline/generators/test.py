"""Generators for tests and demos: no model, deterministic. Option ``delay`` (seconds) makes
each request take that long, to exercise concurrency and interruption. They take any other option
too (and ignore it), so a test can pass whatever it likes."""

from __future__ import annotations

import asyncio
from typing import Any

from redline.attempt import Conversation, Message
from redline.generators.base import Generator
from redline.generators.options import GeneratorOption


class _TestGenerator(Generator):
    option_specs = (GeneratorOption("delay", "number", 0.0, "seconds each request takes"),)
    supports_n = True

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.delay: float = self.option_values["delay"]

    async def _wait(self) -> None:
        if self.delay > 0:
            await asyncio.sleep(self.delay)


class EchoGenerator(_TestGenerator):
    """``test.echo``: answers with the last user message, verbatim."""

    family = "test.echo"
    description = "returns the last user message (for tests and demos)"

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        await self._wait()
        text = conversation.last_message("user").text or ""
        return [Message(text=text) for _ in range(n)]


class BlankGenerator(_TestGenerator):
    """``test.blank``: always answers with the empty string."""

    family = "test.blank"
    description = "returns an empty string (for tests and demos)"

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        await self._wait()
        return [Message(text="") for _ in range(n)]


class RepeatGenerator(_TestGenerator):
    """``test.repeat:TEXT``: always answers with ``TEXT`` (scripted answers in tests)."""

    family = "test.repeat"
    description = "returns the text given after 'test.repeat:' (for tests and demos)"

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        await self._wait()
        return [Message(text=self.model) for _ in range(n)]
