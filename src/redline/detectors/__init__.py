"""Detectors (garak-style): score every output of an attempt in ``[0, 1]`` (1.0 = the probe
succeeded, the model failed; ``None`` = no verdict).

Found by name in :data:`detectors` (entry-point group ``redline.detectors``);
``get_detector("refusal.Compliance")`` builds one. :func:`get_detector` also takes the judge specs
of :mod:`redline.detectors.specs`: ``hf:PATH_OR_ID`` (a classifier), ``llm[:MODEL]`` (an LLM
judge: did the model comply), ``llm-harm[:MODEL]`` (an LLM judge: does the answer deliver harm) and
``A+B`` (an ensemble). LVE checkers, which decide whether a whole LVE instance is safe,
are another stage: :mod:`redline.lve.checkers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from redline.detectors.base import Detector, DetectorUnavailable, TextDetector, Validation
from redline.detectors.specs import ENSEMBLE_PREFIX, DetectorSpecError, build_detector, parse_spec
from redline.plugins import PluginRegistry

__all__ = [
    "ENSEMBLE_PREFIX",
    "Detector",
    "DetectorSpecError",
    "DetectorUnavailable",
    "MAX_SPEC_CHARS",
    "TextDetector",
    "Validation",
    "check_detector_spec",
    "detectors",
    "get_detector",
]

#: The longest detector spec a run takes: the store refuses to read back longer detector names.
MAX_SPEC_CHARS = 4096

detectors = PluginRegistry(
    "detector",
    "redline.detectors",
    {
        "refusal.Compliance": "redline.detectors.refusal:Compliance",
        "refusal.Refusal": "redline.detectors.refusal:Refusal",
        "refusal.Keywords": "redline.detectors.refusal:Keywords",
        "harm.Substance": "redline.detectors.harm:Substance",
        "strings.TargetString": "redline.detectors.strings:TargetString",
        "strings.Triggers": "redline.detectors.strings:TriggerListDetector",
        "encoding.DecodedPayload": "redline.detectors.encoding:DecodedPayload",
        "injection.InjectedMarker": "redline.detectors.injection:InjectedMarker",
        "judge.Rubric": "redline.detectors.judge:Rubric",
        "strings.Regex": "redline.detectors.strings:RegexDetector",
        "output.MarkdownImage": "redline.detectors.output:MarkdownImage",
        "output.ExfilLink": "redline.detectors.output:ExfilLink",
        "output.XSS": "redline.detectors.output:XSS",
        "output.SQLInjection": "redline.detectors.output:SQLInjection",
        "output.ShellInjection": "redline.detectors.output:ShellInjection",
        "output.PackageHallucination": "redline.detectors.output:PackageHallucination",
        "leakage.Replay": "redline.detectors.leakage:Replay",
        "leakage.PII": "redline.detectors.leakage:PII",
        "leakage.Canary": "redline.detectors.leakage:Canary",
        "misinformation.PremiseAccepted": "redline.detectors.misinformation:PremiseAccepted",
        "misinformation.WrongAnswer": "redline.detectors.misinformation:WrongAnswer",
        "misinformation.Citations": "redline.detectors.misinformation:Citations",
        "toxicity.Classifier": "redline.detectors.toxicity:ToxicityClassifier",
        "code.InsecurePattern": "redline.detectors.code:InsecurePattern",
        "sycophancy.Agreement": "redline.detectors.sycophancy:Agreement",
        "overrefusal.Refused": "redline.detectors.overrefusal:Refused",
        "consumption.Runaway": "redline.detectors.consumption:Runaway",
        "tools.UnintendedCall": "redline.detectors.tools:UnintendedCall",
    },
)


def get_detector(
    name: str, *, options_by_name: Mapping[str, Mapping[str, Any]] | None = None, **options: Any
) -> Detector:
    """Instantiate the detector registered as ``name``, or the judge a detector spec describes
    (``hf:PATH``, ``llm[:MODEL]``, ``llm-harm[:MODEL]``, ``A+B``; see :mod:`redline.detectors.specs`), with
    ``options``. The members of an ensemble take their options from ``options_by_name`` (every
    ``--detector-opt``, by detector name). Raises :class:`~redline.plugins.UnknownPluginError`
    for an unknown name and :class:`DetectorSpecError` for a malformed spec."""
    return build_detector(name, detectors, options, options_by_name)


def check_detector_spec(spec: str, base: str | Path | None = None, check_paths: bool = False) -> str:
    """``spec`` checked (without loading anything) and normalised: the name a detector built from
    it has, with local paths made absolute from ``base`` (default: the working folder); with
    ``check_paths`` a local ``hf:`` model folder must exist. Raises :class:`DetectorSpecError`
    or :class:`~redline.plugins.UnknownPluginError`; a spec (or its normalised name) longer than
    :data:`MAX_SPEC_CHARS` is a :class:`DetectorSpecError` too."""
    if isinstance(spec, str) and len(spec.strip()) > MAX_SPEC_CHARS:
        raise DetectorSpecError(
            f"the detector spec is {len(spec.strip()):,} characters long (at most {MAX_SPEC_CHARS:,})"
        )
    name = parse_spec(spec, detectors, base, check_paths)
    if len(name) > MAX_SPEC_CHARS:
        raise DetectorSpecError(
            f"the detector spec names a detector {len(name):,} characters long (at most {MAX_SPEC_CHARS:,})"
        )
    return name
