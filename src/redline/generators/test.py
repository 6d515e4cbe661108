"""Generators for tests and demos: no model, deterministic.

Their options: ``delay`` (seconds) makes each request take that long, to exercise concurrency and
interruption; ``exit_once`` (a file path) ends the process at its first request when that file does
not exist yet, creating it first, so that exactly one worker of a distributed scan dies (the test of
losing a Ray actor); the sampling options of a real model (``max_tokens``, ``temperature``, ``top_p``,
``seed``) are taken and change nothing, so that a command written for a model runs unchanged with
a test generator. Any other option is refused, as every built-in family refuses an option it
does not read (``--gen-opt: the test.echo generator does not take option ...``)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from redline.attempt import Conversation, Message
from redline.generators.base import Generator
from redline.generators.options import SAMPLING_OPTIONS, SEED_OPTION, GeneratorOption


class _TestGenerator(Generator):
    option_specs = (
        GeneratorOption("delay", "number", 0.0, "seconds each request takes"),
        GeneratorOption("exit_once", "text", None, "end the process at the first request unless this file exists"),
        *SAMPLING_OPTIONS,  # taken and ignored: no model samples here
        SEED_OPTION,
    )
    takes_other_options = False
    supports_n = True

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        self.delay: float = self.option_values["delay"]
        self.exit_once: str | None = self.option_values["exit_once"]

    async def _wait(self) -> None:
        if self.exit_once:
            try:
                os.close(os.open(self.exit_once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass  # some process died already: answer
            else:
                os._exit(1)  # the test of a worker lost mid-scan
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
