"""Probes built on other probes: :class:`ProbeWrapper`.

A wrapper takes any probe (the *inner* probe) and reuses its items, seq numbers, evaluator,
metrics and marks; it changes how attempts are generated. Its name is the inner name with a
suffix (``harmful.Requests+escalation``, ``harmful.Requests+base64+leetspeak``), so a run shows
what was applied; the family (``harmful``) is unchanged. Converters
(:class:`~redline.attacks.converters.probe.ConvertedProbe`) and attacker strategies
(:class:`~redline.attacks.strategies.base.StrategyProbe`) are wrappers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from redline.attacks.pool import ModelPool
from redline.attempt import Attempt
from redline.generators.base import Generator
from redline.probes.base import AttemptSource, Probe, ProbeItem, ProbeResult

__all__ = ["ProbeWrapper"]


class _Mapped:
    """A sized, re-iterable view of ``source`` with ``fn`` applied to each attempt."""

    def __init__(self, source: AttemptSource, fn: Callable[[Attempt], Attempt]) -> None:
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

    def __init__(self, inner: Probe, suffix: str, model_pool: ModelPool | None = None) -> None:
        # Probe.__init__ is not called: the evaluator, detectors, repetitions... are the inner's.
        self.inner = inner
        self.suffix = suffix
        self.model_pool = model_pool
        # A wrapper's name is per instance (the inner name + suffix), not a class declaration.
        self.name = f"{inner.name}+{suffix}"  # type: ignore[misc]
        for attr in (
            "goal",
            "description",
            "tags",
            "recommended_detectors",
            "measure",
            "lang",
            "default_num_repetitions",
            "active",
        ):
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
    def params(self) -> dict:
        return {**self.inner.params, **self.extra_params}

    @property
    def probe_items(self) -> list[ProbeItem]:
        return self.inner.probe_items

    def _create_probe_items(self) -> list[ProbeItem]:
        return self.inner._create_probe_items()

    def prepare_attempt(self, attempt: Attempt) -> Attempt:
        """Phase 1 for one inner attempt: rename it to this probe and record the parameters."""
        attempt.probe_classname = self.name
        attempt.probe_params = {**attempt.probe_params, **self.extra_params}
        return attempt

    def create_attempts(self) -> AttemptSource:
        """The inner probe's attempts (same seq numbers, so runs resume), prepared by
        :meth:`prepare_attempt`; sized and lazy (the inner probe's :meth:`~Probe.attempt_source`)."""
        return _Mapped(self.inner.attempt_source(), self.prepare_attempt)

    def calculate_metrics(self, attempts: Sequence[Attempt]) -> dict:
        return self.inner.calculate_metrics(attempts)

    def calculate_marks(self, metrics: dict) -> dict:
        return self.inner.calculate_marks(metrics)

    async def run(self, generator: Generator, generations: int = 1, concurrency: int = 8) -> ProbeResult:
        try:
            return await Probe.run(self, generator, generations, concurrency)
        finally:
            if self.model_pool is not None:
                await self.model_pool.aclose()

    async def aclose(self) -> None:
        """Close the auxiliary models of this probe's pool."""
        if self.model_pool is not None:
            await self.model_pool.aclose()
