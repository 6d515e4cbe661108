"""Converters: transform a prompt's text before it reaches the model under test.

A :class:`Converter` turns one text into another: deterministic ones (encodings, casing,
spacing) implement :meth:`Converter.transform`; model-backed ones (:class:`ModelConverter`:
translation, paraphrase) implement :meth:`Converter.convert` with a generator. Every converter
has the coroutine ``convert(text, generator=None) -> str``, so callers need not tell them apart.

A :class:`ConverterChain` applies several converters in the order given
(``--converters base64,leetspeak`` encodes first, then rewrites the result in leetspeak) to the
turns of a :class:`~redline.attempt.Conversation`. Converters act on user turns; a translation
acts on every turn and sets each message's ``lang``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import ClassVar

from redline.attempt import Conversation, Message, Turn
from redline.errors import UsageError
from redline.generators.base import Generator, GeneratorError

__all__ = ["Converter", "ConverterChain", "ConverterError", "ModelConverter", "clean_reply"]


class ConverterError(UsageError):
    """A converter spec that cannot be used (unknown name, bad argument, missing model)."""


class Converter:
    """Base class of every converter.

    Class attributes: :attr:`name` (the spec name, e.g. ``base64``), :attr:`description`,
    :attr:`uses_model` (needs a generator), :attr:`roles` (which turns it rewrites) and
    :attr:`argument` (what the optional ``name:ARG`` argument means; ``None``: no argument).
    ``seed`` makes randomised converters reproducible.
    """

    name: ClassVar[str] = "base"
    description: ClassVar[str] = ""
    uses_model: ClassVar[bool] = False
    roles: ClassVar[tuple[str, ...]] = ("user",)
    argument: ClassVar[str | None] = None
    #: The MIME types of the attachments this converter makes (a scan checks the model takes them).
    attachment_types: ClassVar[tuple[str, ...]] = ()

    def __init__(self, arg: str | None = None, seed: int = 0) -> None:
        if arg is not None and self.argument is None:
            raise ConverterError(f"converter {self.name!r} takes no argument (got '{self.name}:{arg}')")
        if arg is not None and not arg.strip():
            raise ConverterError(f"converter '{self.name}:': empty argument ({self.argument})")
        self.arg = arg.strip() if arg is not None else None
        self.seed = seed

    @property
    def spec(self) -> str:
        """The spec that recreates this converter: ``name`` or ``name:arg``."""
        return self.name if self.arg is None else f"{self.name}:{self.arg}"

    @property
    def output_lang(self) -> str | None:
        """The language of the converted text when the converter changes it (translation)."""
        return None

    def transform(self, text: str) -> str:
        """The converted text (deterministic converters)."""
        raise NotImplementedError

    def transform_message(self, message: Message) -> Message:
        """The converted message: its text through :meth:`transform` (converters that make or
        change an attachment override this; deterministic converters only)."""
        if message.text is not None:
            message.text = self.transform(message.text)
        return message

    async def convert_message(self, message: Message, generator: Generator | None = None) -> Message:
        """The converted message: its text through :meth:`convert` (see :meth:`transform_message`)."""
        if type(self).transform_message is not Converter.transform_message:
            return self.transform_message(message)
        if message.text is not None:
            message.text = await self.convert(message.text, generator)
        return message

    async def convert(self, text: str, generator: Generator | None = None) -> str:
        """The converted text. Deterministic converters ignore ``generator``."""
        return self.transform(text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


_PREFIX = re.compile(
    r"^\s*(?:here(?:'s| is) (?:the |your )?)?(?:translation|translated text|paraphrase|rewritten text|rewrite|"
    r"output|answer|result)\s*(?:\([^)]*\))?\s*:\s*",
    re.IGNORECASE,
)


def clean_reply(text: str | None) -> str:
    """A model's reply without a leading "Translation:"-style label or wrapping quotes."""
    if not text:
        return ""
    cleaned = _PREFIX.sub("", text.strip(), count=1).strip()
    if len(cleaned) >= 2 and cleaned[0] == cleaned[-1] and cleaned[0] in "\"'`":
        cleaned = cleaned[1:-1].strip()
    return cleaned


class ModelConverter(Converter):
    """A converter that asks a generator to rewrite the text (translation, paraphrase).

    :meth:`convert` needs the generator (``--converter-model``, by default the target model).
    An empty reply raises :class:`~redline.generators.base.GeneratorError`: the attempt is
    recorded as errored rather than sent unconverted.
    """

    uses_model = True

    def transform(self, text: str) -> str:
        raise ConverterError(f"converter {self.spec!r} needs a model; call convert() with a generator")

    def instruction(self) -> str:
        """The system instruction given to the converter model."""
        raise NotImplementedError

    async def convert(self, text: str, generator: Generator | None = None) -> str:
        if not text.strip():
            return text
        return await self.ask(generator, self.instruction(), text)

    async def ask(self, generator: Generator | None, instruction: str, text: str) -> str:
        """Send ``text`` under ``instruction`` to ``generator`` and return its cleaned reply."""
        if generator is None:
            raise ConverterError(f"converter {self.spec!r} needs a model (--converter-model)")
        conversation = Conversation(turns=[Turn("system", Message(instruction)), Turn("user", Message(text))])
        outputs = await generator.generate(conversation, 1)
        reply = outputs[0].text if outputs and outputs[0] is not None else None
        cleaned = clean_reply(reply)
        if not cleaned:
            raise GeneratorError(f"converter {self.spec}: {generator.name} returned an empty answer")
        return cleaned


class ConverterChain:
    """Converters applied one after the other, in the order given."""

    def __init__(self, converters: Sequence[Converter]) -> None:
        self.converters = list(converters)

    def __bool__(self) -> bool:
        return bool(self.converters)

    def __len__(self) -> int:
        return len(self.converters)

    @property
    def specs(self) -> list[str]:
        return [c.spec for c in self.converters]

    @property
    def uses_model(self) -> bool:
        """True when at least one converter needs a generator."""
        return any(c.uses_model for c in self.converters)

    @property
    def output_lang(self) -> str | None:
        """The language of the fully converted text, when a converter translated it."""
        lang = None
        for converter in self.converters:
            lang = converter.output_lang or lang
        return lang

    @property
    def translator(self) -> Converter | None:
        """The last translating converter (it translates outputs back to English)."""
        found = None
        for converter in self.converters:
            if converter.output_lang is not None:
                found = converter
        return found

    def transform(self, text: str) -> str:
        """Apply every converter (all must be deterministic)."""
        for converter in self.converters:
            text = converter.transform(text)
        return text

    async def convert(self, text: str, generator: Generator | None = None) -> str:
        """Apply every converter; model converters use ``generator``."""
        for converter in self.converters:
            text = await converter.convert(text, generator)
        return text

    def transform_conversation(self, conversation: Conversation) -> Conversation:
        """A converted copy of ``conversation`` (deterministic converters only)."""
        result = copy.deepcopy(conversation)
        for converter in self.converters:
            for turn in result.turns:
                if turn.role in converter.roles and turn.content.text is not None:
                    turn.content = converter.transform_message(turn.content)
                    _set_lang(turn, converter)
        return result

    async def convert_conversation(
        self, conversation: Conversation, generator: Generator | None = None
    ) -> Conversation:
        """A converted copy of ``conversation``; model converters use ``generator``."""
        result = copy.deepcopy(conversation)
        for converter in self.converters:
            for turn in result.turns:
                if turn.role in converter.roles and turn.content.text is not None:
                    turn.content = await converter.convert_message(turn.content, generator)
                    _set_lang(turn, converter)
        return result


def _set_lang(turn: Turn, converter: Converter) -> None:
    if converter.output_lang is not None:
        turn.content.lang = converter.output_lang
