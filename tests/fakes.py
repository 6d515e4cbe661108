"""Fake generators shared by the tests: scripted, deterministic and observable.

Import them with ``from fakes import ScriptedGenerator`` (``tests/`` is on ``sys.path`` through
pytest's ``pythonpath``).

:class:`ScriptedGenerator` covers what the tests need from a model under test, an attacker or a
judge:

* answers from a constant text, from a function of the conversation, or from a list of replies
  used up in order;
* a failure (any exception: :class:`~redline.generators.GeneratorError`,
  :class:`~redline.generators.GeneratorUnavailable`, ...) on the requests a test chooses;
* a ``delay`` so that requests overlap (to exercise concurrency; no test asserts on time);
* a record of every conversation it was sent (:attr:`ScriptedGenerator.calls`) and of the most
  requests it had in flight at once (:attr:`ScriptedGenerator.peak`).

The helpers read the parts of a request that scripts usually look at: :func:`user_text`,
:func:`system_text` and, for judge requests, :func:`graded_response`; :func:`scripted_judge`
builds a judge model from a function of the response it grades.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Callable, Sequence
from typing import TypeAlias

from redline.attacks.pool import ModelPool
from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError

__all__ = [
    "Reply",
    "ScriptExhausted",
    "ScriptedGenerator",
    "graded_response",
    "scripted_judge",
    "system_text",
    "user_text",
]

#: What a :class:`ScriptedGenerator` answers: a constant text; a list of replies used up in
#: order, one per output; or a function called once per output with the conversation. ``None``
#: (as a list entry or a function's result) stands for "no output" from the model.
Reply: TypeAlias = str | Sequence[str | None] | Callable[[Conversation], str | None]

#: When a :class:`ScriptedGenerator` raises ``error``: always (``True``), never (``False``), when
#: the last user message contains a text (``str``), or when a predicate of the conversation holds.
FailOn: TypeAlias = bool | str | Callable[[Conversation], bool]


class ScriptExhausted(AssertionError):
    """A :class:`ScriptedGenerator` built from a list of replies was asked for more outputs than
    the list holds: the test's script is too short."""


def user_text(conversation: Conversation) -> str:
    """The text of the last user message of ``conversation`` (``""`` when it has no text)."""
    return conversation.last_message("user").text or ""


def system_text(conversation: Conversation) -> str:
    """The text of ``conversation``'s first turn when that turn is a system turn, else ``""``."""
    turns = conversation.turns
    return (turns[0].content.text or "") if turns and turns[0].role == "system" else ""


_QUOTED_RESPONSE = re.compile(r"<<<RESPONSE (\w+)>>>\n(.*)\n<<<END RESPONSE \1>>>", re.S)


def graded_response(conversation: Conversation) -> str:
    """The response a judge request (:mod:`redline.detectors.judge` or the ``llm`` judge) asks
    to grade: the text quoted between its ``<<<RESPONSE token>>>`` and ``<<<END RESPONSE token>>>``
    lines in the last user message. Raises :class:`ValueError` when ``conversation`` is not a
    judge request."""
    text = user_text(conversation)
    found = _QUOTED_RESPONSE.search(text)
    if found is None:
        raise ValueError(f"not a judge request: {text[:80]!r}")
    return found.group(2)


class ScriptedGenerator(Generator):
    """A generator whose answers, failures and pace are set by the test; it records its requests.

    ``generate(conversation, n)`` always returns exactly ``n`` outputs (a :class:`Message`, or
    ``None`` where ``reply`` gave ``None``), in this order of events:

    1. ``conversation`` is appended to :attr:`calls` (failed requests included) and the request
       counts as in flight (:attr:`in_flight`, :attr:`peak`) until ``generate`` returns or raises;
    2. it awaits ``asyncio.sleep(delay)``, which yields to the event loop even when ``delay`` is 0,
       as a real backend would, so that concurrent requests interleave;
    3. if ``fail_on`` matches the conversation, a copy of ``error`` is raised (default:
       :class:`GeneratorError`);
    4. otherwise ``reply`` is consulted once per output (see :data:`Reply`); a list that runs out
       raises :class:`ScriptExhausted`.

    ``name`` is the spec the generator reports (:attr:`name`, e.g. recorded with a run), and
    ``local`` tells the harness whether to treat it as an in-process model (bigger batches, the
    response cache). It sends no options, so :meth:`settings` is empty.
    """

    family = "test.scripted"

    def __init__(
        self,
        reply: Reply = "ok",
        *,
        name: str = "test.scripted",
        local: bool = False,
        fail_on: FailOn = False,
        error: Exception | None = None,
        delay: float = 0.0,
    ) -> None:
        super().__init__(name.partition(":")[2])
        self._name = name
        self.local = local  # an instance attribute shadowing the class default, like CachedGenerator's property
        self._reply: Callable[[Conversation], str | None]
        if isinstance(reply, str):
            text = reply
            self._reply = lambda conversation: text
        elif callable(reply):
            self._reply = reply
        else:
            self._script = list(reply)
            self._used = 0
            self._reply = self._next_scripted
        if isinstance(fail_on, bool):
            always = fail_on
            self._fails: Callable[[Conversation], bool] = lambda conversation: always
        elif isinstance(fail_on, str):
            needle = fail_on
            self._fails = lambda conversation: needle in user_text(conversation)
        else:
            self._fails = fail_on
        self.error = error if error is not None else GeneratorError(f"{name}: scripted failure")
        self.delay = delay
        #: Every conversation this generator was asked to answer, in order (failed ones included).
        self.calls: list[Conversation] = []
        #: Requests being answered right now.
        self.in_flight = 0
        #: The most requests that were in flight at the same time.
        self.peak = 0

    @property
    def name(self) -> str:
        """The ``name`` given at construction (``FAMILY[:MODEL]``)."""
        return self._name

    @property
    def prompts(self) -> list[str]:
        """The last user message of every request, in order (:func:`user_text` of :attr:`calls`)."""
        return [user_text(c) for c in self.calls]

    def _next_scripted(self, conversation: Conversation) -> str | None:
        if self._used >= len(self._script):
            raise ScriptExhausted(f"{self._name}: the script has only {len(self._script)} replies")
        self._used += 1
        return self._script[self._used - 1]

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        """Answer ``conversation`` with exactly ``n`` outputs, or raise ``error`` (see the class)."""
        self.calls.append(conversation)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if self._fails(conversation):
                raise copy.copy(self.error)  # a fresh exception per request: no shared traceback
            outputs: list[Message | None] = []
            for _ in range(n):
                text = self._reply(conversation)
                outputs.append(None if text is None else Message(text))
            return outputs
        finally:
            self.in_flight -= 1


def scripted_judge(reply: Callable[[str], str], *, name: str = "test.judge") -> ScriptedGenerator:
    """A judge model for :mod:`redline.detectors.judge` and the attacker strategies: it answers
    each grading request with ``reply(response)``, where ``response`` is the text it is asked to
    grade (:func:`graded_response`); ``reply`` writes the whole answer, e.g. ``"Rating: [[7]]"``."""
    return ScriptedGenerator(lambda conversation: reply(graded_response(conversation)), name=name)


def pool_of(attacker: Generator, judge: Generator) -> ModelPool:
    """A strategy's model pool whose attacker and judge are the given (scripted) generators; any
    other role gets the target."""
    pool = ModelPool()

    async def get(role: str, target: Generator) -> Generator:
        return {"attacker": attacker, "judge": judge}.get(role, target)

    pool.get = get  # type: ignore[method-assign]
    return pool
