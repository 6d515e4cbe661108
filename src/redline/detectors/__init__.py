"""Detectors (garak-style): score every output of an attempt in ``[0, 1]`` (1.0 = the probe
succeeded, the model failed; ``None`` = no verdict).

Found by name in :data:`detectors` (entry-point group ``redline.detectors``);
``get_detector("refusal.Compliance")`` builds one. LVE checkers, which decide whether a whole LVE
instance is safe, are another stage: :mod:`redline.lve.checkers`.
"""

from __future__ import annotations

from redline.detectors.base import Detector, DetectorUnavailable, TextDetector, Validation
from redline.plugins import PluginRegistry

__all__ = ["Detector", "DetectorUnavailable", "TextDetector", "Validation", "detectors", "get_detector"]

detectors = PluginRegistry(
    "detector",
    "redline.detectors",
    {
        "refusal.Compliance": "redline.detectors.refusal:Compliance",
        "refusal.Refusal": "redline.detectors.refusal:Refusal",
        "strings.TargetString": "redline.detectors.strings:TargetString",
        "strings.Triggers": "redline.detectors.strings:TriggerListDetector",
        "encoding.DecodedPayload": "redline.detectors.strings:DecodedPayload",
        "injection.InjectedMarker": "redline.detectors.strings:InjectedMarker",
        "judge.Rubric": "redline.detectors.judge:Rubric",
        "strings.Regex": "redline.detectors.regex:RegexDetector",
        "output.MarkdownImage": "redline.detectors.output:MarkdownImage",
        "output.ExfilLink": "redline.detectors.output:ExfilLink",
        "output.XSS": "redline.detectors.output:XSS",
        "output.SQLInjection": "redline.detectors.output:SQLInjection",
        "output.ShellInjection": "redline.detectors.output:ShellInjection",
        "output.PackageHallucination": "redline.detectors.packages:PackageHallucination",
        "leakage.Replay": "redline.detectors.leakage:Replay",
        "leakage.PII": "redline.detectors.leakage:PII",
        "leakage.Canary": "redline.detectors.leakage:Canary",
        "misinformation.PremiseAccepted": "redline.detectors.misinformation:PremiseAccepted",
        "misinformation.WrongAnswer": "redline.detectors.misinformation:WrongAnswer",
        "misinformation.Citations": "redline.detectors.misinformation:Citations",
        "toxicity.Classifier": "redline.detectors.toxicity:ToxicityClassifier",
    },
)


def get_detector(name: str, **options: object) -> Detector:
    """Instantiate the detector registered as ``name``."""
    return detectors.load(name)(**options)
