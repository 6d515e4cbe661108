"""Attacker strategies: a second model writes the prompts, a judge decides when they worked.

``redline scan --probes harmful --strategy NAME --attacker-model SPEC --judge-model SPEC
--max-turns N --max-queries Q --strategy-opt KEY=VALUE`` wraps every selected probe in the
strategy (see :mod:`redline.attacks.strategies.base`). Built in: ``escalation`` and ``refine``
(redline's own), and the published attacks ``crescendo`` (Russinovich et al. 2024), ``pair``
(Chao et al. 2023), ``tap`` (Mehrotra et al. 2023) and ``best-of-n`` or ``bon`` (Hughes et al.
2024), each in its module. Strategies are found by name in :data:`strategies`; third
parties add their own (a :class:`StrategyProbe` subclass) through the ``redline.strategies``
entry-point group.
"""

from __future__ import annotations

from redline.attacks.pool import ModelPool
from redline.attacks.strategies.base import ProbeWrapper, StrategyError, StrategyProbe
from redline.plugins import PluginRegistry

__all__ = ["ModelPool", "ProbeWrapper", "StrategyError", "StrategyProbe", "get_strategy_class", "strategies"]

strategies = PluginRegistry(
    "strategy",
    "redline.strategies",
    {
        "escalation": "redline.attacks.strategies.escalation:Escalation",
        "refine": "redline.attacks.strategies.refine:Refinement",
        "crescendo": "redline.attacks.strategies.crescendo:Crescendo",
        "pair": "redline.attacks.strategies.pair:Pair",
        "tap": "redline.attacks.strategies.tap:Tap",
        "best-of-n": "redline.attacks.strategies.best_of_n:BestOfN",
        "bon": "redline.attacks.strategies.best_of_n:BestOfN",
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
