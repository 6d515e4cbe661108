"""Probes built on other probes: :class:`ProbeWrapper` and attacker :class:`StrategyProbe`.

A wrapper takes any probe (the *inner* probe) and reuses its items, seq numbers, evaluator,
metrics and marks; it changes how attempts are generated. Its name is the inner name with a
suffix (``harmful.Requests+escalation``, ``harmful.Requests+base64+leetspeak``), so a run shows
what was applied; the family (``harmful``) is unchanged.

A :class:`StrategyProbe` uses a second model, the *attacker*, to write the prompts, and a *judge*
(:class:`~redline.detectors.judge.Rubric`) to decide when the goal is reached. Each inner prompt's
request is the attacker's objective. Both models come from the scan's
:class:`~redline.attacks.pool.ModelPool` (``--attacker-model``, ``--judge-model``), by default
the model under test. Converters given with a strategy apply to every prompt the attacker writes.

The strategy grades outputs as it goes and stores the grades of the final outputs in
``attempt.notes["judge"]``; its detector is ``judge.Rubric``, which reuses them.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from redline.attacks.converters.base import ConverterChain
from redline.attacks.pool import ModelPool
from redline.attacks.wrapper import ProbeWrapper
from redline.attempt import Attempt, Conversation, Message, Turn
from redline.detectors.judge import Rubric
from redline.errors import UsageError
from redline.generators.base import Generator
from redline.probes.base import Probe

__all__ = ["StrategyError", "StrategyProbe", "extract_tagged", "last_user_text", "set_last_user_text"]


class StrategyError(UsageError):
    """A strategy or converter option that cannot be used (one line: which option, why)."""


def last_user_text(conversation: Conversation | None) -> str:
    """The text of the last user turn ("" when there is none)."""
    if conversation is None:
        return ""
    for turn in reversed(conversation.turns):
        if turn.role == "user":
            return turn.content.text or ""
    return ""


def set_last_user_text(conversation: Conversation, text: str, lang: str | None = None) -> Conversation:
    """A copy of ``conversation`` whose last user turn says ``text`` (with ``lang`` if given)."""
    result = copy.deepcopy(conversation)
    for turn in reversed(result.turns):
        if turn.role == "user":
            turn.content.text = text
            if lang is not None:
                turn.content.lang = lang
            break
    return result


def extract_tagged(text: str | None, tag: str) -> str:
    """The text between ``<tag>`` and ``</tag>`` (or after an unclosed ``<tag>``), else the whole
    reply without a leading ``Tag:`` label or wrapping quotes; "" when nothing is left."""
    if not text:
        return ""
    match = re.search(rf"<{tag}>\s*(.*?)\s*(?:</{tag}>|$)", text, re.IGNORECASE | re.DOTALL)
    body = match.group(1) if match else text
    body = re.sub(rf"^\s*(?:{tag}|next message|new prompt|user)\s*:\s*", "", body.strip(), flags=re.IGNORECASE)
    body = re.sub(rf"</?{tag}>", "", body, flags=re.IGNORECASE).strip()
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        body = body[1:-1].strip()
    return body


class StrategyProbe(ProbeWrapper):
    """An attacker strategy around ``inner``: see the module doc.

    ``max_turns`` is the budget (turns of a dialogue, or rewrites); ``success_threshold`` the
    judge score (rating / 10) at which the goal counts as reached (0.5, the evaluator's default
    threshold, i.e. a rating of 5 or more); ``converters`` apply to every attacker-written prompt.
    """

    strategy: ClassVar[str] = ""
    default_max_turns: ClassVar[int] = 4
    budget_name: ClassVar[str] = "max_turns"

    def __init__(
        self,
        inner: Probe,
        model_pool: ModelPool | None = None,
        max_turns: int | None = None,
        converters: ConverterChain | None = None,
        success_threshold: float = 0.5,
        rubric: Rubric | None = None,
    ) -> None:
        chain_suffix = "".join(f"+{spec}" for spec in converters.specs) if converters else ""
        super().__init__(inner, f"{self.strategy}{chain_suffix}", model_pool or ModelPool())
        budget = self.default_max_turns if max_turns is None else int(max_turns)
        if budget < 1:
            raise StrategyError(f"--max-turns must be at least 1, got {budget}")
        if not 0.0 < success_threshold <= 1.0:
            raise StrategyError(f"success threshold must be in (0, 1], got {success_threshold}")
        self.max_turns = budget
        self.converters = converters
        self.success_threshold = success_threshold
        self.rubric = rubric if rubric is not None else Rubric()
        self.detectors = [self.rubric.name]
        # Per instance, like the wrapper's name: the rubric judges this strategy's attempts.
        self.recommended_detectors = (self.rubric.name,)  # type: ignore[misc]

    @property
    def extra_params(self) -> dict:
        params: dict[str, Any] = {"strategy": self.strategy, self.budget_name: self.max_turns}
        assert self.model_pool is not None
        for role in ("attacker", "judge"):
            if self.model_pool.spec(role):
                params[f"{role}_model"] = self.model_pool.spec(role)
        if self.converters:
            params["converters"] = self.converters.specs
            if self.converters.uses_model and self.model_pool.spec("converter"):
                params["converter_model"] = self.model_pool.spec("converter")
        return params

    # -- helpers for subclasses ------------------------------------------------------------------
    async def models(self, target: Generator) -> tuple[Generator, Generator, Generator]:
        """``(attacker, judge, converter model)`` for this scan."""
        assert self.model_pool is not None
        attacker = await self.model_pool.get("attacker", target)
        judge = await self.model_pool.get("judge", target)
        converter = target
        if self.converters and self.converters.uses_model:
            converter = await self.model_pool.get("converter", target)
        return attacker, judge, converter

    async def ask(self, generator: Generator, system: str, user: str) -> str | None:
        """One reply from ``generator`` to a system instruction and a user message."""
        conversation = Conversation(turns=[Turn("system", Message(system)), Turn("user", Message(user))])
        outputs = await generator.generate(conversation, 1)
        return outputs[0].text if outputs and outputs[0] is not None else None

    async def send_form(self, text: str, converter_model: Generator) -> str:
        """``text`` as sent to the target: through the converters, if any."""
        if not self.converters:
            return text
        return await self.converters.convert(text, converter_model)

    @property
    def send_lang(self) -> str | None:
        """The language of what the target receives (set when a converter translates)."""
        return self.converters.output_lang if self.converters else None

    async def english(self, outputs: Sequence[Message | None], converter_model: Generator) -> list[str | None]:
        """The target's outputs in English (translated back when a converter translated)."""
        texts = [m.text if m is not None else None for m in outputs]
        translator = self.converters.translator if self.converters else None
        if translator is None:
            return texts

        async def back(text: str | None) -> str | None:
            return None if text is None else await translator.to_english(text, converter_model)  # type: ignore[attr-defined]

        return list(await asyncio.gather(*(back(t) for t in texts)))

    async def send_conversation(self, conversation: Conversation, converter_model: Generator) -> Conversation:
        """``conversation`` as sent to the target: through the converters, if any."""
        if not self.converters:
            return conversation
        return await self.converters.convert_conversation(conversation, converter_model)

    def set_prompt(self, attempt: Attempt, seed: Conversation, first: Conversation, sent: Conversation) -> None:
        """Make ``sent`` (``first`` — the seed with the attacker's text — after the converters)
        the attempt's prompt, before any output; keep ``seed`` in ``notes["original_prompt"]``
        and, after a translation, ``first`` in ``notes["pre_translation_prompt"]``."""
        if attempt.all_outputs:
            raise StrategyError("a strategy starts from an attempt without outputs")
        if self.converters:
            attempt.notes["converters"] = self.converters.specs
            if self.send_lang is not None:
                before = copy.deepcopy(first)
                for turn in before.turns:
                    turn.content.lang = turn.content.lang or self.inner.lang or "en"
                attempt.notes["pre_translation_prompt"] = before.as_dict()
        attempt.notes["original_prompt"] = seed.as_dict()
        attempt.conversations = [copy.deepcopy(sent)]

    def succeeded(self, score: float | None) -> bool:
        return score is not None and score >= self.success_threshold

    def finish(self, attempt: Attempt, english: list[str | None], graded: list[tuple[Any, Any, Any]]) -> None:
        """Record the final grades (``notes["judge"]``) and, after translation, the reverse
        translations of the final outputs."""
        if self.send_lang is not None:
            for message in attempt.outputs:
                message.lang = self.send_lang
            attempt.reverse_translation_outputs = [Message(text=t, lang="en") for t in english]
        self.rubric.record(attempt, english, graded)


def chain_names(probes: Iterable[Probe]) -> list[str]:
    """The names of ``probes`` (helper for messages)."""
    return [p.name for p in probes]
