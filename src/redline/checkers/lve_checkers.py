"""Compatibility aggregate: every built-in LVE checker in one namespace.

The checkers live in one module per family (:mod:`.lambda_checkers`, :mod:`.regex_checkers`,
:mod:`.match_checkers`, :mod:`.consistency`, :mod:`.classifier_checkers`, :mod:`.pii`); this
module re-exports them for code that imported ``redline.checkers.lve_checkers``.
"""

from __future__ import annotations

from redline.checkers.classifier_checkers import BiasChecker, ToxicityChecker
from redline.checkers.consistency import MonotoncityChecker, MonotonicityChecker
from redline.checkers.lambda_checkers import LambdaChecker, MultiRunLambdaChecker, NumberChecker
from redline.checkers.match_checkers import ExactMatchChecker, FuzzyMatchChecker, RefuseChecker
from redline.checkers.pii import PII_Checker
from redline.checkers.regex_checkers import RegexChecker

__all__ = [
    "LambdaChecker",
    "NumberChecker",
    "RegexChecker",
    "MultiRunLambdaChecker",
    "ExactMatchChecker",
    "FuzzyMatchChecker",
    "RefuseChecker",
    "MonotonicityChecker",
    "MonotoncityChecker",
    "ToxicityChecker",
    "BiasChecker",
    "PII_Checker",
]
