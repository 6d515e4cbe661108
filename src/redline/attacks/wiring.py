"""From scan options to probes: converters, strategies and auxiliary models.

:func:`apply_scan_options` is called by :func:`redline.engine.pipeline.build_probes` with the scan's
configuration. It reads ``converters``, ``converter_model``, ``strategy``, ``attacker_model``,
``judge_model`` and ``max_turns`` (attributes of :class:`~redline.engine.config.ScanConfig`), checks
them — every option must have an effect, or the scan stops with one line saying why — and wraps
the probes. Every returned probe carries the scan's :class:`ModelPool` as ``probe.model_pool``
(the ``judge.Rubric`` detector and the bare ``llm`` judge find ``--judge-model`` there).
"""

from __future__ import annotations

from typing import Any

from redline.attacks.converters import parse_converters
from redline.attacks.converters.probe import ConvertedProbe
from redline.attacks.pool import ModelPool
from redline.attacks.strategies import get_strategy_class
from redline.attacks.strategies.base import StrategyError
from redline.detectors.judges import uses_judge_model
from redline.evaluation import DetectorEvaluator
from redline.probes.base import Probe

__all__ = ["apply_scan_options"]


def _option(config: Any, name: str) -> Any:
    value = getattr(config, name, None)
    if isinstance(value, str):
        value = value.strip() or None
    return value


def apply_scan_options(probes: list[Probe], config: Any) -> list[Probe]:
    """The probes to run, wrapped as the options ask (the list itself when none is set).

    Raises :class:`StrategyError`, :class:`~redline.attacks.converters.ConverterError` or
    :class:`~redline.plugins.UnknownPluginError` with a one-line message.
    """
    converters = _option(config, "converters")
    converter_model = _option(config, "converter_model")
    strategy = _option(config, "strategy")
    attacker_model = _option(config, "attacker_model")
    judge_model = _option(config, "judge_model")
    max_turns = getattr(config, "max_turns", None)
    if not any((converters, converter_model, strategy, attacker_model, judge_model, max_turns is not None)):
        return probes

    if not probes:
        raise StrategyError("--converters, --strategy and their models apply to --probes, not to --lve")
    chain = parse_converters(converters, seed=getattr(config, "seed", 0) or 0)
    if converter_model and not chain.uses_model:
        raise StrategyError("--converter-model is used only by model converters (translate:LANG, paraphrase)")
    if strategy is None:
        if attacker_model:
            raise StrategyError("--attacker-model needs --strategy (escalation or refine)")
        if max_turns is not None:
            raise StrategyError("--max-turns needs --strategy (escalation or refine)")
        if judge_model and not any(uses_judge_model(d) for p in probes for d in p.detectors):
            raise StrategyError(
                "--judge-model is used by --strategy or the judge.Rubric detector (or --judge llm); none is selected"
            )
    if max_turns is not None and int(max_turns) < 1:
        raise StrategyError(f"--max-turns must be at least 1, got {max_turns}")

    pool = ModelPool(
        {"attacker": attacker_model, "judge": judge_model, "converter": converter_model},
        options=dict(getattr(config, "generator_options", None) or {}),
        target_spec=_option(config, "model"),
    )
    pool.validate()

    if strategy is not None:
        cls = get_strategy_class(strategy)
        unsuited = [p.name for p in probes if not isinstance(p.evaluator, DetectorEvaluator)]
        if unsuited:
            raise StrategyError(
                f"--strategy {strategy} needs probes scored by detectors; {', '.join(unsuited)} "
                "use their own evaluator (leave them out of --probes)"
            )
        return [cls(p, model_pool=pool, max_turns=max_turns, converters=chain or None) for p in probes]
    if chain:
        return [ConvertedProbe(p, chain, pool) for p in probes]
    for probe in probes:
        probe.model_pool = pool
    return probes
