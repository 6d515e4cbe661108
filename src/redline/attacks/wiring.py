"""From scan options to probes: converters, strategies and auxiliary models.

:func:`apply_scan_options` is called by :func:`redline.engine.pipeline.build_probes` with the scan's
configuration. It reads ``converters``, ``converter_model``, ``strategy``, ``attacker_model``,
``judge_model``, ``max_turns``, ``max_queries`` and ``strategy_options`` (attributes of
:class:`~redline.engine.config.ScanConfig`), checks
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
from redline.detectors.specs import uses_judge_model
from redline.evaluation import DetectorEvaluator
from redline.probes.base import Probe

__all__ = ["STRATEGY_HINT", "apply_scan_options"]

#: The built-in strategies, as the messages name them.
STRATEGY_HINT = "crescendo, pair, tap, best-of-n, escalation or refine"


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
    max_queries = getattr(config, "max_queries", None)
    strategy_options = dict(getattr(config, "strategy_options", None) or {})
    budgets = (max_turns is not None, max_queries is not None, bool(strategy_options))
    if not any((converters, converter_model, strategy, attacker_model, judge_model, *budgets)):
        return probes

    if not probes:
        raise StrategyError("--converters, --strategy and their models apply to --probes, not to --lve")
    chain = parse_converters(converters, seed=getattr(config, "seed", 0) or 0)
    if converter_model and not chain.uses_model:
        raise StrategyError("--converter-model is used only by model converters (translate:LANG, paraphrase)")
    if strategy is None:
        for flag, given in (
            ("--attacker-model", attacker_model),
            ("--max-turns", max_turns is not None),
            ("--max-queries", max_queries is not None),
            ("--strategy-opt", strategy_options),
        ):
            if given:
                raise StrategyError(f"{flag} needs --strategy ({STRATEGY_HINT})")
        if judge_model and not any(uses_judge_model(d) for p in probes for d in p.detectors):
            raise StrategyError(
                "--judge-model is used by --strategy or the judge.Rubric detector (or --judge llm); none is selected"
            )
    if max_turns is not None and int(max_turns) < 1:
        raise StrategyError(f"--max-turns must be at least 1, got {max_turns}")
    generations = int(getattr(config, "generations", 1) or 1)
    if max_queries is not None and int(max_queries) < generations:
        raise StrategyError(
            f"--max-queries {max_queries} is below --generations {generations}: "
            "every generation needs at least one target query"
        )

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
        dialogues = [p.name for p in probes if p.runs_dialogue]
        if dialogues:
            raise StrategyError(
                f"--strategy {strategy} re-asks each prompt on its own; {', '.join(dialogues)} "
                "run their own exchange with the model (leave them out of --probes)"
            )
        return [
            cls(
                p,
                model_pool=pool,
                max_turns=max_turns,
                converters=chain or None,
                max_queries=max_queries,
                options=strategy_options,
                seed=getattr(config, "seed", 0) or 0,
            )
            for p in probes
        ]
    if chain:
        return [ConvertedProbe(p, chain, pool) for p in probes]
    for probe in probes:
        probe.model_pool = pool
    return probes
