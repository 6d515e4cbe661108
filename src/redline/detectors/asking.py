"""What the detectors that ask a model share: which model judges (:class:`JudgeModel`) and the
request being judged (:func:`request_of`).

Used by ``judge.Rubric`` (:mod:`redline.detectors.judge`) and the ``llm`` judge
(:mod:`redline.detectors.specs`). The judge model is, first that applies: a ready generator
given to the detector (tests), the detector's own generator spec (``model`` option, ``llm:SPEC``),
the scan's ``--judge-model`` (the probe's ``model_pool``), the model under test.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redline.attempt import Attempt, Conversation
from redline.detectors.base import DetectorUnavailable, bounded
from redline.generators import get_generator
from redline.generators.base import Generator

__all__ = ["JudgeModel", "request_of"]


def request_of(attempt: Attempt) -> str:
    """The request the attempt made, in English: the request its probe wrapped (a jailbreak
    template's or an image prompt's ``request`` metadata, text), else the last user turn of the
    original prompt (before converters or attacker rewrites) or, failing that, of the English
    prompt; at most :data:`~redline.detectors.base.MAX_ANSWER_CHARS` of it (a dataset's prompt is
    read within the bounds of an answer)."""
    metadata = attempt.notes.get("prompt_metadata")
    if isinstance(metadata, dict) and isinstance(wrapped := metadata.get("request"), str) and wrapped.strip():
        return bounded(wrapped)
    original = attempt.notes.get("original_prompt")
    conversation: Conversation | None = None
    if isinstance(original, Conversation):
        conversation = original
    elif isinstance(original, dict):
        conversation = Conversation.from_dict(original)
    if conversation is None:
        conversation = attempt.prompt_for("en", shared=True)
    if conversation is None:
        return ""
    try:
        return bounded(conversation.last_message("user").text or "")
    except ValueError:
        return ""


class JudgeModel:
    """The generator a judge detector asks (see the module doc for the order).

    ``owner`` names the detector in the error raised when there is no model at all; ``model`` is
    a generator spec, ``generator`` a ready generator. :meth:`bind` receives what the harness
    passes to :meth:`Detector.bind <redline.detectors.base.Detector.bind>`.
    """

    def __init__(self, owner: str, model: str | None = None, generator: Generator | None = None) -> None:
        self.owner = owner
        self.model = model.strip() if isinstance(model, str) and model.strip() else None
        self.generator = generator
        self._target: Generator | None = None
        self._pool: Any = None
        self._own: Generator | None = None
        self._lock = asyncio.Lock()

    def bind(self, target: Generator, probe: Any = None) -> None:
        """The model under test (the last resort) and the probe, whose ``model_pool`` (if any)
        knows ``--judge-model`` and shares the scan's auxiliary models."""
        self._target = target
        pool = getattr(probe, "model_pool", None)
        if pool is not None:
            self._pool = pool

    async def get(self) -> Generator:
        """The judge generator, started."""
        if self.generator is not None:
            return self.generator
        if self._pool is not None:
            if self.model is not None:
                return await self._pool.for_spec(self.model, self._target, "judge")
            if self._pool.spec("judge") is not None or self._target is not None:
                return await self._pool.get("judge", self._target)
        if self.model is not None:
            if self._target is not None and self.model == self._target.name:
                return self._target
            async with self._lock:
                if self._own is None:
                    own = get_generator(self.model)
                    await own.start()
                    self._own = own
            return self._own
        if self._target is not None:
            return self._target
        raise DetectorUnavailable(
            f"{self.owner} has no judge model: pass --judge-model SPEC or the detector's model option"
        )

    async def aclose(self) -> None:
        """Close a generator created here (from ``model``, outside a scan's model pool)."""
        if self._own is not None:
            own, self._own = self._own, None
            await own.aclose()
