"""Attacker strategies: a second model writes the prompts, a judge decides when they worked.

``redline scan --probes harmful --strategy escalation|refine --attacker-model SPEC
--judge-model SPEC --max-turns N`` wraps every selected probe in the strategy (see
:mod:`redline.strategies.base`). Strategies are found by name in :data:`strategies`; third
parties add their own (a :class:`StrategyProbe` subclass) through the ``redline.strategies``
entry-point group.
"""

from __future__ import annotations

from redline.plugins import PluginRegistry
from redline.strategies.base import ProbeWrapper, StrategyError, StrategyProbe
from redline.strategies.pool import ModelPool

__all__ = ["ModelPool", "ProbeWrapper", "StrategyError", "StrategyProbe", "strategies", "get_strategy_class"]

strategies = PluginRegistry(
    "strategy",
    "redline.strategies",
    {
        "escalation": "redline.strategies.escalation:Escalation",
        "refine": "redline.strategies.refinement:Refinement",
    },
)


def get_strategy_class(name: str) -> type[StrategyProbe]:
    """The strategy class registered as ``name``; :class:`StrategyError` (one line) otherwise."""
    if name not in strategies:
        raise StrategyError(f"unknown strategy {name!r} (known strategies: {', '.join(strategies.names())})")
    cls = strategies.load(name)
    if not (isinstance(cls, type) and issubclass(cls, StrategyProbe)):
        raise StrategyError(f"strategy {name!r} is not a StrategyProbe subclass")
    return cls
