"""Cost before you spend: what a scan will ask of the model, and a budget that stops it cleanly.

**Estimates** (``redline scan --plan``, and the budget's check before each attempt):

* prompt tokens: the characters of every turn of the prompt divided by :data:`CHARS_PER_TOKEN`
  (4, rounded up), per request — a cheap estimate that needs no tokenizer (real tokenizers give
  about 3.5–4.5 characters per token on English text);
* output tokens: the generator's ``max_tokens`` (``--max-tokens``; a family's own default, e.g. 150
  for local models and :data:`~redline.generators.output.DEFAULT_MAX_TOKENS` for remote ones, which
  send it with every request, raised to a probe's own ``output_tokens`` when no ``--max-tokens``
  was given; :data:`DEFAULT_OUTPUT_TOKENS` when nothing says) for every output, an upper bound;
* requests: one per attempt when the generator gives all ``--generations`` in one request (OpenAI's
  ``n``), else one per output;
* a strategy (``--strategy``) multiplies by its query budget: ``Q`` target queries per attempt,
  the strategy's own ``query_bound(generations)`` (a :class:`StrategyProbe`'s search bound capped
  by ``--max-queries``), else ``--max-queries``, else ``max_turns × generations`` (then marked as
  an estimate, not a bound). Each target query comes with at most one attacker request (none for
  Best-of-N) and one judge request (:data:`STRATEGY_CALLS_PER_QUERY`). A conversation that grows
  (the attacker's, and the target's in a multi-turn strategy, :data:`MULTI_TURN_STRATEGIES`) of
  ``T`` turns sends at most ``T·p + T(T−1)/2·(p+o)`` prompt tokens, for a prompt of ``p`` tokens
  and outputs of ``o``; a single-turn target query sends ``p``, a judge request ``p+o``.

**The budget** (``--budget-usd`` with ``--price-per-mtok IN,OUT``, ``--max-requests N``):
:class:`Budget` checks, before each attempt is started, that what was spent so far, plus the
estimate of every attempt in flight, plus this attempt's estimate stays within every limit. When it
does not and attempts are in flight, it waits for one to finish (what it really cost replaces its
estimate) and checks again; when nothing is in flight, the run stops: no further attempt starts,
finished attempts are stored, and the run is marked interrupted with the message
``stopped: budget reached …`` (``redline scan --resume RUN`` continues it, under the budget given
then; the budget is per process, not part of the run). What was spent is counted from what the
endpoint reported (the OpenAI ``usage`` object) when it did, else estimated as above with the
output's own length in place of ``max_tokens``; answers from the response cache cost nothing.
Requests to a separate ``--attacker-model``/``--judge-model``/``--converter-model`` are not
counted (requests to the model under test in those roles are).

**On Ray** the budget stays with the driver: it admits each attempt before the attempt goes to an
actor, and each actor counts what every attempt's requests cost (:class:`AttemptCosts`) and sends
it back with the attempt, which the driver charges (:meth:`Budget.charge`) before it releases it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

from redline.attacks.strategies.base import StrategyProbe
from redline.attempt import Attempt, Conversation, Message
from redline.errors import UsageError
from redline.evaluation import Evaluator
from redline.generators import Generator, generators, split_spec
from redline.generators.base import GeneratorWrapper
from redline.generators.usage import CallUsage, metering, stop_metering
from redline.probes import Probe
from redline.probes.runner import RunnableProbe

__all__ = [
    "BUDGET_REACHED",
    "CHARS_PER_TOKEN",
    "DEFAULT_OUTPUT_TOKENS",
    "MULTI_TURN_STRATEGIES",
    "STRATEGY_CALLS_PER_QUERY",
    "AttemptCosts",
    "Budget",
    "BudgetError",
    "Estimate",
    "MeteredGenerator",
    "Prices",
    "RequestShape",
    "conversation_chars",
    "is_pause",
    "strategy_queries",
    "text_tokens",
    "wait_out",
]

#: Characters per token of the estimate (no tokenizer needed).
CHARS_PER_TOKEN = 4
#: Output tokens assumed per output when neither ``--max-tokens`` nor the family says.
DEFAULT_OUTPUT_TOKENS = 256
#: Requests per target query of a strategy: the attacker's, the target's and the judge's.
STRATEGY_CALLS_PER_QUERY = 3
#: Strategies whose target conversation grows turn by turn (the others send it one prompt at a
#: time); a strategy class may say so itself with a ``multi_turn`` attribute.
MULTI_TURN_STRATEGIES = frozenset({"escalation", "crescendo"})
#: How the message of a run stopped by its budget starts.
BUDGET_REACHED = "stopped: budget reached"


class BudgetError(UsageError):
    """A budget or price option that cannot be used (one line naming it)."""


@dataclass(frozen=True)
class Prices:
    """USD per million prompt (``input``) and output tokens."""

    input: float
    output: float

    @classmethod
    def parse(cls, text: str, where: str = "--price-per-mtok") -> Prices:
        """``"2.5,10"`` → ``Prices(2.5, 10.0)``; :class:`BudgetError` for anything else."""
        parts = [p.strip() for p in str(text).split(",")]
        try:
            if len(parts) != 2:
                raise ValueError
            values = [float(p) for p in parts]
        except ValueError:
            raise BudgetError(
                f"{where} must be IN,OUT (USD per million prompt and output tokens, e.g. 2.5,10), not {text!r}"
            ) from None
        if any(not math.isfinite(v) or v < 0 for v in values):
            raise BudgetError(f"{where}: prices must be finite and not negative, not {text!r}")
        return cls(values[0], values[1])

    def cost(self, prompt_tokens: float, output_tokens: float) -> float:
        return (prompt_tokens * self.input + output_tokens * self.output) / 1_000_000


def text_tokens(chars: int) -> int:
    """The estimated tokens of ``chars`` characters (:data:`CHARS_PER_TOKEN`, rounded up)."""
    return -(-max(chars, 0) // CHARS_PER_TOKEN)


def conversation_chars(conversation: Conversation | None) -> int:
    """Characters of every turn's text (a tool call's arguments included when there are any)."""
    if conversation is None:
        return 0
    total = 0
    for turn in conversation.turns:
        total += len(turn.content.text or "")
        for call in getattr(turn.content, "tool_calls", None) or ():
            total += len(str(getattr(call, "arguments", "")))
    return total


@dataclass
class Estimate:
    """Requests and tokens (estimated, or counted)."""

    requests: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Estimate) -> None:
        self.requests += other.requests
        self.prompt_tokens += other.prompt_tokens
        self.output_tokens += other.output_tokens

    def cost(self, prices: Prices | None) -> float | None:
        return None if prices is None else prices.cost(self.prompt_tokens, self.output_tokens)

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class RequestShape:
    """How the model under test is asked: outputs per attempt (``generations``), ``max_tokens``
    per output and whether one request gives them all (``supports_n``)."""

    generations: int = 1
    max_tokens: int = DEFAULT_OUTPUT_TOKENS
    supports_n: bool = False
    #: ``max_tokens`` is :data:`DEFAULT_OUTPUT_TOKENS` because neither the scan nor the family set one.
    assumed: bool = False
    #: Whether a probe's own ``output_tokens`` raises ``max_tokens`` (a family that follows it,
    #: and no ``max_tokens`` given).
    follows_probes: bool = False

    def output_tokens(self, probe: Any) -> int:
        """``max_tokens`` of the requests of ``probe``: :attr:`max_tokens`, or the probe's own
        ``output_tokens`` when larger and :attr:`follows_probes`."""
        need = getattr(probe, "output_tokens", None) if self.follows_probes else None
        return max(self.max_tokens, need) if isinstance(need, int) and not isinstance(need, bool) else self.max_tokens

    @classmethod
    def of(
        cls, generator: Generator | type[Generator], generations: int, options: Mapping[str, Any] | None = None
    ) -> RequestShape:
        """The shape of ``generator`` (an instance, or a class and its scan ``options``)."""
        if isinstance(generator, Generator):
            values = getattr(generator, "option_values", {}) or {}
            max_tokens = values.get("max_tokens") or getattr(generator, "max_tokens", None)
            given = (generator.options or {}).get("max_tokens") is not None
        else:
            defaults = {spec.name: spec.default for spec in generator.option_specs}
            max_tokens = (options or {}).get("max_tokens") or defaults.get("max_tokens")
            given = (options or {}).get("max_tokens") is not None
        follows = bool(getattr(generator, "follows_output_need", False)) and not given
        try:
            tokens = int(max_tokens) if max_tokens else 0
        except (TypeError, ValueError):
            tokens = 0
        return cls(
            max(1, int(generations)),
            tokens or DEFAULT_OUTPUT_TOKENS,
            bool(generator.supports_n),
            assumed=not tokens,
            follows_probes=follows,
        )

    @classmethod
    def of_spec(cls, spec: str, generations: int, options: Mapping[str, Any]) -> RequestShape:
        """The shape of the family ``spec`` names, without creating a generator (nothing loads)."""
        return cls.of(generators.load(split_spec(spec)[0]), generations, options)

    def requests_for(self, outputs: int) -> int:
        return 1 if outputs <= 1 or self.supports_n else outputs

    def estimate(self, probe: Probe, prompt_chars: int) -> Estimate:
        """The estimate of one attempt of ``probe`` whose prompt has ``prompt_chars`` characters
        (see the module doc)."""
        p = text_tokens(prompt_chars)
        o = self.output_tokens(probe)
        bound = getattr(probe, "query_bound", None)
        if probe.runs_dialogue and callable(bound):
            # an agent loop: up to ``bound`` requests, each resending the conversation so far
            requests = max(1, int(bound(self.generations)))
            steps = max(1, -(-requests // self.generations))
            prompt = (steps * p + steps * (steps - 1) // 2 * o) * self.generations
            return Estimate(requests, prompt, o * requests)
        queries = strategy_queries(probe, self.generations)
        if queries is None:
            requests = self.requests_for(self.generations)
            return Estimate(requests, p * requests, o * self.generations)
        total, _ = queries
        turns = max(1, -(-total // self.generations))  # per dialogue (one per output)
        growing = (turns * p + turns * (turns - 1) // 2 * (p + o)) * self.generations
        attacker = bool(getattr(probe, "uses_attacker", True))  # Best-of-N asks none
        multi_turn = bool(getattr(probe, "multi_turn", getattr(probe, "strategy", "") in MULTI_TURN_STRATEGIES))
        prompt = (growing if multi_turn else total * p) + (growing if attacker else 0) + total * (p + o)
        calls = STRATEGY_CALLS_PER_QUERY - (0 if attacker else 1)
        return Estimate(total * calls, prompt, total * o * calls)


def strategy_queries(probe: Probe, generations: int) -> tuple[int, bool] | None:
    """``(Q, bounded)``: target queries one attempt of a strategy probe may ask (see the module
    doc), and whether ``Q`` is a bound (``False``: ``max_turns × generations``, an estimate);
    ``None`` for a probe that is no strategy."""
    if not isinstance(probe, StrategyProbe):
        return None
    bound = getattr(probe, "query_bound", None)
    if callable(bound):
        return max(1, int(bound(generations))), True
    max_queries = getattr(probe, "max_queries", None)
    if max_queries:
        return int(max_queries), True
    return max(1, int(probe.max_turns)) * max(1, generations), False


class Budget:
    """The limits of one process's scan (see the module doc): ``max_requests``, and ``max_usd``
    with the ``prices`` that turn tokens into dollars.

    The engine calls :meth:`bind` once the generator is known, :meth:`admit` before it starts an
    attempt, :meth:`release` when the attempt is done, and counts what each request cost through
    :class:`MeteredGenerator` (:meth:`record`), or, for an attempt that ran elsewhere, with
    :meth:`charge`. ``spent`` is what was counted so far,
    :attr:`stopped` the run's message once the budget stopped it."""

    def __init__(
        self, *, max_requests: int | None = None, max_usd: float | None = None, prices: Prices | None = None
    ) -> None:
        if max_requests is not None and max_requests < 1:
            raise BudgetError(f"--max-requests must be at least 1, not {max_requests}")
        if max_usd is not None:
            if not math.isfinite(max_usd) or max_usd <= 0:
                raise BudgetError(f"--budget-usd must be a positive amount, not {max_usd}")
            if prices is None:
                raise BudgetError(
                    "--budget-usd needs --price-per-mtok IN,OUT (USD per million prompt and output tokens)"
                )
        self.max_requests = max_requests
        self.max_usd = max_usd
        self.prices = prices
        self.shape = RequestShape()
        self.spent = Estimate()
        self.spent_usd = 0.0
        self._held_requests = 0
        self._held_usd = 0.0
        self._holds: dict[str, tuple[int, float]] = {}  # by attempt uuid
        self._changed: asyncio.Event | None = None
        self.stopped: str | None = None

    @property
    def limited(self) -> bool:
        return self.max_requests is not None or self.max_usd is not None

    def bind(self, shape: RequestShape) -> None:
        self.shape = shape

    @property
    def busy(self) -> bool:
        """Attempts admitted and not yet done."""
        return bool(self._holds)

    def admit(self, probe: Probe, attempt: Attempt) -> bool:
        """Whether ``attempt`` may start now: spent + held + its estimate within every limit.
        Admitted, its estimate is held until :meth:`release`."""
        estimate = self.shape.estimate(probe, conversation_chars(attempt.prompt))
        usd = estimate.cost(self.prices) or 0.0
        if (
            self.max_requests is not None
            and self.spent.requests + self._held_requests + estimate.requests > self.max_requests
        ):
            return False
        if self.max_usd is not None and self.spent_usd + self._held_usd + usd > self.max_usd:
            return False
        self._holds[attempt.uuid] = (estimate.requests, usd)
        self._held_requests += estimate.requests
        self._held_usd += usd
        return True

    def release(self, attempt: Attempt) -> None:
        """``attempt`` is done: its estimate is no longer held (what it cost is in :attr:`spent`).
        The attempt is known by its ``uuid``: a copy of it (sent back by a Ray actor) releases it."""
        held = self._holds.pop(attempt.uuid, None)
        if held is None:
            return
        self._held_requests -= held[0]
        self._held_usd -= held[1]
        if not self._holds:
            self._held_requests, self._held_usd = 0, 0.0  # no drift from float sums
        self._signal()

    def _signal(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def stop(self) -> None:
        """No further attempt starts: the run ends as stopped by its budget."""
        limits = []
        if self.max_usd is not None:
            limits.append(f"USD {self.spent_usd:.4f} of {self.max_usd:g} spent")
        if self.max_requests is not None:
            limits.append(f"{self.spent.requests} of {self.max_requests} requests")
        self.stopped = f"{BUDGET_REACHED} ({', '.join(limits)})"
        self._signal()

    def pause(self) -> tuple[Probe, Attempt]:
        """Work for a runner slot while the budget waits for attempts in flight: it finishes as
        soon as one of them is done (or the run stops). Never stored."""
        if self._changed is None:
            self._changed = asyncio.Event()
        pause: RunnableProbe = _Pause(self._changed)
        # duck-typed: the runner needs only what RunnableProbe names
        return cast(Probe, pause), Attempt(probe_classname=_Pause.name, notes={PAUSE_NOTE: True})

    def record(
        self, conversation: Conversation, n: int, outputs: Sequence[Message | None], usage: CallUsage, cached: bool
    ) -> None:
        """Count one call of the model under test (``n`` outputs of ``conversation``)."""
        asked = usage.model_outputs if usage.model_outputs is not None else (0 if cached else n)
        if asked <= 0 and usage.responses == 0:
            return  # answered from the cache
        requests = usage.responses or self.shape.requests_for(asked)
        if usage.reported and usage.reported >= requests:
            prompt, output = usage.prompt_tokens, usage.completion_tokens
        else:
            prompt = text_tokens(conversation_chars(conversation)) * requests
            chars = sum(len(m.text or "") for m in outputs if m is not None)
            output = text_tokens(chars * asked // max(n, 1)) if n else 0
        self.charge(Estimate(requests, prompt, output))

    def charge(self, cost: Estimate) -> None:
        """Count ``cost`` as spent (what calls of the model under test cost)."""
        self.spent.add(cost)
        if self.prices is not None:
            self.spent_usd += self.prices.cost(cost.prompt_tokens, cost.output_tokens)


_ATTEMPT_COST: ContextVar[Estimate | None] = ContextVar("redline_attempt_cost", default=None)
"""The cost of the attempt running in this task (:meth:`AttemptCosts.counting`)."""


class AttemptCosts(Budget):
    """No limits: what the calls of each attempt cost, counted where the attempt runs (a Ray
    actor) for the :class:`Budget` of another process (the driver's). Wrap the generator in a
    :class:`MeteredGenerator` with it and run each attempt inside :meth:`counting`."""

    def charge(self, cost: Estimate) -> None:
        counted = _ATTEMPT_COST.get()
        if counted is not None:
            counted.add(cost)

    @contextmanager
    def counting(self) -> Iterator[Estimate]:
        """The cost of the calls made in this task (and the tasks it starts) while inside."""
        cost = Estimate()
        token = _ATTEMPT_COST.set(cost)
        try:
            yield cost
        finally:
            _ATTEMPT_COST.reset(token)


#: ``attempt.notes`` key of a budget pause (never stored).
PAUSE_NOTE = "budget_pause"


class _NoJudgment(Evaluator):
    def calculate_evaluation(self, attempt: Attempt) -> list[Any]:
        return []


class _Pause:
    """The "probe" of a budget pause: waits, scores nothing (see :meth:`Budget.pause`)."""

    name = "budget.pause"

    def __init__(self, event: asyncio.Event) -> None:
        self._event = event
        self.detectors: list[str] = []
        self.evaluator: Evaluator = _NoJudgment()
        self.skip_reason: str | None = None

    async def wait(self) -> None:
        await self._event.wait()

    async def generate(self, attempt: Attempt, generator: Generator, generations: int) -> Attempt:
        await self.wait()
        return attempt


def is_pause(attempt: Attempt) -> bool:
    """Whether ``attempt`` is a budget pause (:meth:`Budget.pause`), never run nor stored."""
    return bool(attempt.notes.get(PAUSE_NOTE))


async def wait_out(pause: tuple[Probe, Attempt]) -> None:
    """Wait as the budget pause ``pause`` does: until an attempt in flight is done or the run stops."""
    await cast(_Pause, pause[0]).wait()


class MeteredGenerator(GeneratorWrapper):
    """``inner`` (the scan's generator, cached or not) with every call counted in ``budget``.

    Behaves as ``inner`` (name, settings, options, ``local``, tools); ``cached`` says whether
    ``inner`` answers from the response cache (which then reports how many outputs it asked of
    the model)."""

    def __init__(self, inner: Generator, budget: Budget, *, cached: bool) -> None:
        super().__init__(inner)
        self.budget = budget
        self.cached = cached

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        usage = CallUsage()
        token = metering(usage)
        outputs: list[Message | None] = []
        try:
            outputs = await self.inner.generate(conversation, n)
        finally:
            stop_metering(token)
            self.budget.record(conversation, n, outputs, usage, self.cached)
        return outputs
