"""``redline scan --plan``: what a scan would ask of the model, without sending anything.

:func:`plan_scan` builds the probes a configuration selects (phase 1 only: no generator is created
or started, no detector loads, no run is stored) and estimates, per probe and in total, the
requests, prompt tokens and output tokens of the attempts still to run, and their cost with
prices (how: :mod:`redline.engine.budget`). The output tokens are counted at the ``max_tokens`` each
probe's requests carry (:meth:`RequestShape.output_tokens`): a remote model's default, a probe's own
larger need, or ``--max-tokens``; the endpoint enforces it, so the count is an upper bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from redline.engine.budget import Estimate, Prices, RequestShape, conversation_chars, strategy_queries
from redline.engine.config import ScanConfig
from redline.engine.pipeline import build_probes

__all__ = ["ProbePlan", "ScanPlan", "plan_scan"]


@dataclass
class ProbePlan:
    """One probe: ``attempts`` still to run and their :class:`Estimate`; ``bounded`` is false
    when the estimate is no upper bound (a strategy without ``--max-queries``); ``max_tokens`` is
    the output length its requests ask for (0: not known yet)."""

    probe: str
    attempts: int = 0
    estimate: Estimate = field(default_factory=Estimate)
    bounded: bool = True
    max_tokens: int = 0


@dataclass
class ScanPlan:
    """The plan of a scan: the model, how it is asked (:class:`RequestShape`), the probes in scan
    order and the prices given (``None``: no cost)."""

    model: str
    shape: RequestShape
    probes: list[ProbePlan]
    prices: Prices | None = None

    @property
    def total(self) -> Estimate:
        total = Estimate()
        for row in self.probes:
            total.add(row.estimate)
        return total

    @property
    def attempts(self) -> int:
        return sum(row.attempts for row in self.probes)

    @property
    def bounded(self) -> bool:
        return all(row.bounded for row in self.probes)

    @property
    def raised(self) -> list[ProbePlan]:
        """The probes whose requests ask for more than :attr:`RequestShape.max_tokens`."""
        return [row for row in self.probes if row.max_tokens > self.shape.max_tokens]

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON (``redline scan --plan --json``)."""

        def entry(estimate: Estimate) -> dict[str, Any]:
            data: dict[str, Any] = estimate.as_dict()
            cost = estimate.cost(self.prices)
            if cost is not None:
                data["cost_usd"] = round(cost, 6)
            return data

        return {
            "model": self.model,
            "generations": self.shape.generations,
            "max_tokens": self.shape.max_tokens,
            "outputs_per_request": self.shape.generations if self.shape.supports_n else 1,
            "prices_per_mtok": None
            if self.prices is None
            else {"input": self.prices.input, "output": self.prices.output},
            "probes": [
                {
                    "probe": row.probe,
                    "attempts": row.attempts,
                    "max_tokens": row.max_tokens,
                    **entry(row.estimate),
                    "bounded": row.bounded,
                }
                for row in self.probes
            ],
            "total": {"attempts": self.attempts, **entry(self.total), "bounded": self.bounded},
        }


def plan_scan(
    config: ScanConfig, prices: Prices | None = None, finished: Callable[[str], set[int]] | None = None
) -> ScanPlan:
    """The plan of ``config``; ``finished(probe)`` gives the seqs a resumed run has already stored
    (left out of the plan)."""
    shape = RequestShape.of_spec(config.model, config.generations, config.generator_options)
    rows = []
    for probe in build_probes(config):
        done = finished(probe.name) if finished is not None else set()
        row = ProbePlan(
            probe.name,
            bounded=(strategy_queries(probe, shape.generations) or (0, True))[1],
            max_tokens=shape.output_tokens(probe),
        )
        for attempt in probe.create_attempts():
            if attempt.seq in done:
                continue
            row.attempts += 1
            row.estimate.add(shape.estimate(probe, conversation_chars(attempt.prompt)))
        rows.append(row)
    return ScanPlan(config.model, shape, rows, prices)
