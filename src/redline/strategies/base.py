"""Probes built on other probes: :class:`ProbeWrapper` and attacker :class:`StrategyProbe`.

A wrapper takes any probe (the *inner* probe) and reuses its items, seq numbers, evaluator,
metrics and marks; it changes how attempts are generated. Its name is the inner name with a
suffix (``harmful.Requests+escalation``, ``harmful.Requests+base64+leetspeak``), so a run shows
what was applied; the family (``harmful``) is unchanged.

A :class:`StrategyProbe` uses a second model, the *attacker*, to write the prompts, and a *judge*
(:class:`~redline.checkers.judge.Rubric`) to decide when the goal is reached. Each inner prompt's
request is the attacker's objective. Both models come from the scan's
:class:`~redline.strategies.pool.ModelPool` (``--attacker-model``, ``--judge-model``), by default
the model under test. Converters given with a strategy apply to every prompt the attacker writes.

The strategy grades outputs as it goes and stores the grades of the final outputs in
``attempt.notes["judge"]``; its detector is ``judge.Rubric``, which reuses them.
"""

from __future__ import annotations

import asyncio
import copy
import re
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator, Sequence

from redline.attempt import Attempt, Conversation, Message
from redline.probes.base import Probe

if TYPE_CHECKING:
    from redline.checkers.judge import Rubric
    from redline.converters.base import ConverterChain
    from redline.generators.base import Generator
    from redline.strategies.pool import ModelPool

__all__ = ["StrategyError", "ProbeWrapper", "StrategyProbe", "extract_tagged", "last_user_text", "set_last_user_text"]


class StrategyError(ValueError):
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


class _Mapped:
    """A sized, re-iterable view of ``source`` with ``fn`` applied to each attempt."""

    def __init__(self, source: Any, fn: Any) -> None:
        self.source, self.fn = source, fn

    def __len__(self) -> int:
        return len(self.source)

    def __iter__(self) -> Iterator[Attempt]:
        for attempt in self.source:
            yield self.fn(attempt)


class ProbeWrapper(Probe):
    """A probe that delegates to ``inner`` everything except generation (see module doc).

    Subclasses override :meth:`generate` and may extend :meth:`prepare_attempt` (phase 1) and
    :attr:`extra_params` (recorded in ``attempt.probe_params``).
    """

    def __init__(self, inner: Probe, suffix: str, model_pool: "ModelPool | None" = None) -> None:
        # Probe.__init__ is not called: the evaluator, detectors, repetitions... are the inner's.
        self.inner = inner
        self.suffix = suffix
        self.model_pool = model_pool
        self.name = f"{inner.name}+{suffix}"  # type: ignore[misc]
        for attr in ("goal", "description", "tags", "recommended_detectors", "lang", "default_num_repetitions", "active"):
            setattr(self, attr, getattr(inner, attr))

    def __getattr__(self, name: str) -> Any:
        # evaluator, metric_calculators, mark_definitions, detectors, num_repetitions, sample,
        # seed, skip_reason... are the inner probe's.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def extra_params(self) -> dict:
        """Parameters this wrapper adds to the inner probe's ``probe_params``."""
        return {}

    @property
    def params(self) -> dict:  # type: ignore[override]
        return {**self.inner.params, **self.extra_params}

    @property
    def probe_items(self) -> list:  # type: ignore[override]
        return self.inner.probe_items

    def _create_probe_items(self) -> list:
        return self.inner._create_probe_items()

    def prepare_attempt(self, attempt: Attempt) -> Attempt:
        """Phase 1 for one inner attempt: rename it to this probe and record the parameters."""
        attempt.probe_classname = self.name
        attempt.probe_params = {**attempt.probe_params, **self.extra_params}
        return attempt

    def create_attempts(self) -> Any:  # type: ignore[override]
        """The inner probe's attempts (same seq numbers, so runs resume), prepared by
        :meth:`prepare_attempt`; sized and lazy when the inner probe's are."""
        return _Mapped(self.inner.create_attempts(), self.prepare_attempt)

    def calculate_metrics(self, attempts: Sequence[Attempt]) -> dict:
        return self.inner.calculate_metrics(attempts)

    def calculate_marks(self, metrics: dict) -> dict:
        return self.inner.calculate_marks(metrics)

    async def run(self, generator: "Generator", generations: int = 1, concurrency: int = 8) -> Any:
        try:
            return await Probe.run(self, generator, generations, concurrency)
        finally:
            if self.model_pool is not None:
                await self.model_pool.aclose()

    async def aclose(self) -> None:
        """Close the auxiliary models of this probe's pool."""
        if self.model_pool is not None:
            await self.model_pool.aclose()


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
        model_pool: "ModelPool | None" = None,
        max_turns: int | None = None,
        converters: "ConverterChain | None" = None,
        success_threshold: float = 0.5,
        rubric: "Rubric | None" = None,
    ) -> None:
        from redline.checkers.judge import Rubric
        from redline.strategies.pool import ModelPool

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
        self.recommended_detectors = (self.rubric.name,)

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
    async def models(self, target: "Generator") -> tuple["Generator", "Generator", "Generator"]:
        """``(attacker, judge, converter model)`` for this scan."""
        assert self.model_pool is not None
        attacker = await self.model_pool.get("attacker", target)
        judge = await self.model_pool.get("judge", target)
        converter = target
        if self.converters and self.converters.uses_model:
            converter = await self.model_pool.get("converter", target)
        return attacker, judge, converter

    async def ask(self, generator: "Generator", system: str, user: str) -> str | None:
        """One reply from ``generator`` to a system instruction and a user message."""
        from redline.attempt import Turn

        conversation = Conversation(turns=[Turn("system", Message(system)), Turn("user", Message(user))])
        outputs = await generator.generate(conversation, 1)
        return outputs[0].text if outputs and outputs[0] is not None else None

    async def send_form(self, text: str, converter_model: "Generator") -> str:
        """``text`` as sent to the target: through the converters, if any."""
        if not self.converters:
            return text
        return await self.converters.convert(text, converter_model)

    @property
    def send_lang(self) -> str | None:
        """The language of what the target receives (set when a converter translates)."""
        return self.converters.output_lang if self.converters else None

    async def english(self, outputs: Sequence[Message | None], converter_model: "Generator") -> list[str | None]:
        """The target's outputs in English (translated back when a converter translated)."""
        texts = [m.text if m is not None else None for m in outputs]
        translator = self.converters.translator if self.converters else None
        if translator is None:
            return texts

        async def back(text: str | None) -> str | None:
            return None if text is None else await translator.to_english(text, converter_model)  # type: ignore[attr-defined]

        return list(await asyncio.gather(*(back(t) for t in texts)))

    async def send_conversation(self, conversation: Conversation, converter_model: "Generator") -> Conversation:
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
