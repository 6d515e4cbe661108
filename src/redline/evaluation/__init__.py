"""Evaluation: per-output judgments (evaluators), aggregate statistics (metric calculators) and
their interpretation as marks A–D (mark definitions) — phases 3 and 4 of :meth:`Probe.run`."""

from redline.evaluation.evaluator import DetectorEvaluator, Evaluator, HarmEvaluator
from redline.evaluation.judgment import FAIL, PASS, UNDETECTED, Judgment
from redline.evaluation.marks import MARKS, Mark, MarkDefinition
from redline.evaluation.measures import FAILURE, HARM
from redline.evaluation.metrics import ComplianceRateCalculator, FailureRateCalculator, Metric, MetricCalculator
from redline.evaluation.statistics import (
    bootstrap_ci,
    bounded_mean_interval,
    correlation_interval,
    mean_difference_interval,
    net_share_interval,
    wilson_interval,
)

__all__ = [
    "Judgment",
    "FAIL",
    "MARKS",
    "PASS",
    "UNDETECTED",
    "FAILURE",
    "HARM",
    "ComplianceRateCalculator",
    "DetectorEvaluator",
    "Evaluator",
    "FailureRateCalculator",
    "HarmEvaluator",
    "Mark",
    "MarkDefinition",
    "Metric",
    "MetricCalculator",
    "bootstrap_ci",
    "bounded_mean_interval",
    "correlation_interval",
    "mean_difference_interval",
    "net_share_interval",
    "wilson_interval",
]
