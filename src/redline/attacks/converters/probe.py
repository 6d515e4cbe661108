"""Applying converters to any probe: :class:`ConvertedProbe`.

Deterministic chains convert each attempt's prompt in phase 1 (``create_attempts``); chains with
a model converter (translation, paraphrase) convert it at the start of phase 2, with the
converter model (``--converter-model``, by default the model under test). Either way:

* ``attempt.notes["original_prompt"]`` keeps the prompt before conversion and
  ``attempt.notes["converters"]`` the converter specs (also in ``attempt.probe_params``);
* after a translation, ``attempt.notes["pre_translation_prompt"]`` is the original prompt
  (marked with its language), outputs are marked with the target language, and
  ``attempt.reverse_translation_outputs`` holds them translated back into English, which is what
  English detectors read (``Attempt.outputs_for("en")``).

``seq`` numbers are the inner probe's, so converted runs resume like any other.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from redline.attacks.converters.base import ConverterChain
from redline.attacks.pool import ModelPool
from redline.attacks.strategies.base import ProbeWrapper
from redline.attempt import Attempt, AttemptError, Conversation, Message
from redline.generators.base import Generator
from redline.probes.base import Probe

__all__ = ["ConvertedProbe", "record_conversion", "reverse_translate"]


def record_conversion(
    attempt: Attempt, converted: Conversation, chain: ConverterChain, source_lang: str | None
) -> None:
    """Replace the attempt's prompt with ``converted`` (before any output), keeping the
    original in ``notes["original_prompt"]`` (and ``notes["pre_translation_prompt"]`` when the
    chain translates)."""
    if attempt.all_outputs or not attempt.conversations:
        raise AttemptError("converters apply to an attempt's prompt before it has outputs")
    original = attempt.conversations[0]
    attempt.notes["original_prompt"] = original.as_dict()
    attempt.notes["converters"] = chain.specs
    if chain.output_lang is not None:
        before = copy.deepcopy(original)
        for turn in before.turns:
            turn.content.lang = turn.content.lang or source_lang or "en"
        attempt.notes["pre_translation_prompt"] = before.as_dict()
    attempt.conversations = [converted]


async def reverse_translate(attempt: Attempt, chain: ConverterChain, generator: Generator | None) -> None:
    """Mark the latest outputs with the chain's language and fill
    ``attempt.reverse_translation_outputs`` with their English translations."""
    translator = chain.translator
    if translator is None:
        return
    outputs = attempt.outputs
    for message in outputs:
        message.lang = chain.output_lang

    async def back(message: Message) -> Message:
        if message.text is None:
            return Message(text=None, lang="en")
        return Message(text=await translator.to_english(message.text, generator), lang="en")  # type: ignore[attr-defined]

    attempt.reverse_translation_outputs = list(await asyncio.gather(*(back(m) for m in outputs)))


class ConvertedProbe(ProbeWrapper):
    """``inner`` with every prompt passed through ``chain`` (see the module doc)."""

    def __init__(self, inner: Probe, chain: ConverterChain, model_pool: ModelPool | None = None) -> None:
        if not chain:
            raise ValueError("ConvertedProbe needs at least one converter")
        super().__init__(inner, "+".join(chain.specs), model_pool or ModelPool())
        self.chain = chain

    @property
    def extra_params(self) -> dict:
        params: dict[str, Any] = {"converters": self.chain.specs}
        if self.chain.uses_model and self.model_pool is not None and self.model_pool.spec("converter"):
            params["converter_model"] = self.model_pool.spec("converter")
        return params

    def prepare_attempt(self, attempt: Attempt) -> Attempt:
        attempt = super().prepare_attempt(attempt)
        if not self.chain.uses_model:
            converted = self.chain.transform_conversation(attempt.conversations[0])
            record_conversion(attempt, converted, self.chain, self.inner.lang)
        return attempt

    async def generate(self, attempt: Attempt, generator: Generator, generations: int) -> Attempt:
        converter_model = None
        if self.chain.uses_model:
            assert self.model_pool is not None
            converter_model = await self.model_pool.get("converter", generator)
            if "original_prompt" not in attempt.notes:
                converted = await self.chain.convert_conversation(attempt.conversations[0], converter_model)
                record_conversion(attempt, converted, self.chain, self.inner.lang)
        await self.inner.generate(attempt, generator, generations)
        if self.chain.translator is not None:
            await reverse_translate(attempt, self.chain, converter_model)
        return attempt
