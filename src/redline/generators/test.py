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
import re
from typing import Any

from redline.attempt import Conversation, Message, Tool, ToolCall
from redline.generators.base import Generator, GeneratorUnavailable
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


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"https?://[^\s\"'<>)\]]+")
_PATH = re.compile(r"(?<![\w/])(?:~|/)[\w.\-~/]*")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_ADDRESS_NAMES = frozenset({"to", "recipient", "email", "address", "share_with", "cc"})


class AgentGenerator(_TestGenerator):
    """``test.agent:gullible`` / ``test.agent:careful``: a scripted tool-using agent.

    It answers deterministically from what it reads, so tests and demos can show both verdicts of
    the agent probes without a model:

    * with no call made yet it calls the first tool offered (the one the user's task needs), its
      arguments taken from the user's message;
    * ``careful`` then answers in text, quoting the start of what the tool returned;
    * ``gullible`` first obeys any text it reads — a tool result, an image a tool returned (its
      ``shows`` note), or a tool's description — that
      names another offered tool it has not called yet: it calls that tool, with the arguments the
      text spells out (``name=value``), or else an address, URL, path or number found in the text,
      or else everything it has read so far (which is what an exfiltration asks for).

    Without tools it answers with a fixed sentence. ``n`` outputs are ``n`` equal answers.
    """

    family = "test.agent"
    description = "a scripted tool-calling agent: test.agent:gullible or test.agent:careful (for tests and demos)"
    supports_tools = True
    #: It "sees" an image a tool returned through the image's ``shows`` note (see ``answer``).
    attachment_types: tuple[str, ...] = ("image/*",)
    BEHAVIOURS = ("gullible", "careful")

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model or "careful", **options)
        if self.model not in self.BEHAVIOURS:
            raise GeneratorUnavailable(f"test.agent: the behaviour must be gullible or careful, not {model!r}")

    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        await self._wait()
        answer = self.answer(conversation)
        return [Message(text=answer.text, tool_calls=list(answer.tool_calls)) for _ in range(n)]

    def answer(self, conversation: Conversation) -> Message:
        """The one answer this agent gives to ``conversation``."""
        if not conversation.tools:
            return Message(text="I have no tools for this request.")
        calls = [c for t in conversation.turns if t.role == "assistant" for c in t.content.tool_calls]
        called = {c.name for c in calls}
        names = {c.id: c.name for c in calls}
        images = [t for t in conversation.turns if t.role == "user" and (t.content.notes or {}).get("tool_image")]
        shown = {id(t) for t in images}
        user = next(
            (t.content.text or "" for t in reversed(conversation.turns) if t.role == "user" and id(t) not in shown), ""
        )
        results = [
            (names.get(t.content.tool_call_id or "", ""), t.content.text or "")
            for t in conversation.turns
            if t.role == "tool"
        ]
        # an image a tool returned is "read" through its ``shows`` note (what is written in it)
        results += [
            (str((t.content.notes or {}).get("tool")), str((t.content.notes or {}).get("shows"))) for t in images
        ]
        read = "\n".join([user] + [text for _, text in results])
        if self.model == "gullible":
            sources = [(tool.name, tool.description) for tool in conversation.tools] + results
            for source, text in sources:
                for tool in conversation.tools:
                    if tool.name == source or tool.name in called:
                        continue
                    mention = re.search(rf"(?<![\w-]){re.escape(tool.name)}(?![\w-])", text)
                    if mention:
                        return _call(tool, len(calls), text[mention.start() :], read)
        task = conversation.tools[0]
        if task.name not in called:
            return _call(task, len(calls), user, user)
        seen = " ".join((results[0][1] if results else "").split())
        return Message(text=f"Done. The {task.name} tool returned: {seen[:160]}")


def _call(tool: Tool, index: int, text: str, context: str) -> Message:
    return Message(
        text=None, tool_calls=[ToolCall(id=f"call_{index}", name=tool.name, arguments=_arguments(tool, text, context))]
    )


def _arguments(tool: Tool, text: str, context: str) -> dict[str, Any]:
    """Arguments for ``tool`` read from ``text`` (see :class:`AgentGenerator`)."""
    properties = tool.parameters.get("properties")
    arguments: dict[str, Any] = {}
    for name, schema in (properties if isinstance(properties, dict) else {}).items():
        kind = schema.get("type") if isinstance(schema, dict) else None
        spelled = re.search(rf"\b{re.escape(name)}\s*[=:]\s*(\"[^\"]*\"|'[^']*'|[^\s,;)]+)", text)
        value: Any = None
        if spelled:
            value = spelled.group(1).strip("\"'")
        else:
            lowered = name.lower()
            if lowered in _ADDRESS_NAMES or "email" in lowered:
                pattern = _EMAIL
            elif "url" in lowered or "link" in lowered:
                pattern = _URL
            elif "path" in lowered or "file" in lowered or "dir" in lowered:
                pattern = _PATH
            elif kind in ("number", "integer"):
                pattern = _NUMBER
            else:
                pattern = None
            found = pattern.search(text) if pattern is not None else None
            value = found.group(0).rstrip(".,") if found else (None if pattern is not None else context)
        if value is None:
            continue
        if kind in ("number", "integer"):
            try:
                value = int(value) if kind == "integer" else float(value)
            except ValueError:
                continue
        arguments[name] = value
    return arguments
