"""Checkers and detectors: everything that judges model outputs.

* Detectors (garak-style): score each output of an attempt in ``[0, 1]``; found by name in
  :data:`detectors` (entry-point group ``redline.detectors``).
* LVE checkers (seeds 000/001): ``BaseChecker.is_safe`` decides whether an LVE instance is safe;
  found by class name through :mod:`redline.checkers.registry` (group ``redline.checkers``).
"""

from __future__ import annotations

from redline.checkers.detector import Detector, DetectorUnavailable, TextDetector
from redline.plugins import PluginRegistry

__all__ = [
    "Detector",
    "DetectorUnavailable",
    "TextDetector",
    "detectors",
    "get_detector",
    # LVE checkers (imported lazily, see __getattr__)
    "BaseChecker",
    "MultiRunBaseChecker",
    "LambdaChecker",
    "NumberChecker",
    "RegexChecker",
    "MultiRunLambdaChecker",
    "BiasChecker",
    "MonotonicityChecker",
    "MonotoncityChecker",
    "ExactMatchChecker",
    "FuzzyMatchChecker",
    "RefuseChecker",
    "PII_Checker",
    "ToxicityChecker",
    "UnsafeLambdaError",
    "get_checker_class",
]

_LVE_NAMES = {
    "BaseChecker": "redline.checkers.base",
    "MultiRunBaseChecker": "redline.checkers.base",
    "get_checker_class": "redline.checkers.base",
    "UnsafeLambdaError": "redline.checkers.safe_eval",
}


def __getattr__(name: str):
    """LVE checker classes, imported on first use (keeps ``import redline.checkers`` light)."""
    import importlib

    if name in _LVE_NAMES:
        return getattr(importlib.import_module(_LVE_NAMES[name]), name)
    if name in __all__:
        return getattr(importlib.import_module("redline.checkers.lve_checkers"), name)
    raise AttributeError(f"module 'redline.checkers' has no attribute {name!r}")

detectors = PluginRegistry(
    "detector",
    "redline.detectors",
    {
        "refusal.Compliance": "redline.checkers.refusal:Compliance",
        "refusal.Refusal": "redline.checkers.refusal:Refusal",
        "strings.TargetString": "redline.checkers.strings:TargetString",
        "strings.Triggers": "redline.checkers.strings:TriggerListDetector",
        "encoding.DecodedPayload": "redline.checkers.strings:DecodedPayload",
        "injection.InjectedMarker": "redline.checkers.strings:InjectedMarker",
        "judge.Rubric": "redline.checkers.judge:Rubric",
        "strings.Regex": "redline.checkers.regex_detectors:RegexDetector",
        "output.MarkdownImage": "redline.checkers.output_detectors:MarkdownImage",
        "output.ExfilLink": "redline.checkers.output_detectors:ExfilLink",
        "output.XSS": "redline.checkers.output_detectors:XSS",
        "output.SQLInjection": "redline.checkers.output_detectors:SQLInjection",
        "output.ShellInjection": "redline.checkers.output_detectors:ShellInjection",
        "output.PackageHallucination": "redline.checkers.packages:PackageHallucination",
        "leakage.Replay": "redline.checkers.leakage_detectors:Replay",
        "leakage.PII": "redline.checkers.leakage_detectors:PII",
        "leakage.Canary": "redline.checkers.leakage_detectors:Canary",
        "misinformation.PremiseAccepted": "redline.checkers.misinformation_detectors:PremiseAccepted",
        "misinformation.WrongAnswer": "redline.checkers.misinformation_detectors:WrongAnswer",
        "misinformation.Citations": "redline.checkers.misinformation_detectors:Citations",
        "toxicity.Classifier": "redline.checkers.toxicity_detector:ToxicityClassifier",
    },
)


def get_detector(name: str, **options: object) -> Detector:
    """Instantiate the detector registered as ``name``."""
    return detectors.load(name)(**options)
