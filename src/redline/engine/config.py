"""The configuration of a run: :class:`ScanConfig`, stored with the run so that ``--resume``
rebuilds the same run. Files and flags become a ``ScanConfig`` in :mod:`redline.engine.config_file`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ScanConfig"]


@dataclass
class ScanConfig:
    """Everything that defines a run; stored with it so ``--resume`` rebuilds the same run."""

    model: str = "smollm2"
    probes: str | None = None
    generations: int = 1
    concurrency: int | None = None
    sample: int | None = None
    seed: int = 0
    generator_options: dict[str, Any] = field(default_factory=dict)
    probe_options: dict[str, Any] = field(default_factory=dict)
    lve_paths: list[str] = field(default_factory=list)
    trust_code: bool = False
    num_repetitions: int | None = None
    #: Answer identical requests from the store's cache (``--no-cache`` sets it to False).
    cache: bool = True
    #: Converters applied to every prompt, comma-separated, in order (``--converters``).
    converters: str | None = None
    #: Attacker strategy (``--strategy crescendo|pair|tap|best-of-n|escalation|refine``) and the auxiliary models; a model
    #: left unset is the model under test (see :mod:`redline.attacks.strategies`).
    strategy: str | None = None
    attacker_model: str | None = None
    judge_model: str | None = None
    #: The judge that replaces ``refusal.Compliance`` in every selected probe (``--judge``): a
    #: detector spec (``hf:PATH``, ``llm[:MODEL]``, ``A+B``, a detector name), local paths absolute.
    judge: str | None = None
    #: The judge that replaces ``harm.Substance`` in every selected harm probe (``--harm-judge``):
    #: a detector spec, as ``judge``.
    harm_judge: str | None = None
    converter_model: str | None = None
    max_turns: int | None = None
    #: Target outputs one attempt of ``strategy`` may request (``--max-queries``; ``None``: no cap).
    max_queries: int | None = None
    #: The strategy's own options (``--strategy-opt KEY=VALUE``), as given; typed by the strategy.
    strategy_options: dict[str, str] = field(default_factory=dict)
    #: Options per detector (``--detector-opt NAME.KEY=VALUE``), e.g.
    #: ``{"toxicity.Classifier": {"model": "/models/tox"}}``.
    detector_options: dict[str, Any] = field(default_factory=dict)
    #: Report the probes whose detector cannot load as "not measured" instead of stopping
    #: (``--skip-unavailable``).
    skip_unavailable: bool = False
    #: Prompts from the user's dataset (``--dataset``) for ``dataset.Prompts`` and the probes that
    #: accept one (jailbreak templates), with the column mapping (``--dataset-column``).
    dataset: str | None = None
    dataset_columns: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: dict) -> ScanConfig:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in value.items() if k in known})
