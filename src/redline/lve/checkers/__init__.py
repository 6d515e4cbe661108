"""LVE checkers (seeds 000/001): ``BaseChecker.is_safe`` decides whether an LVE instance is safe.

One module per family — :mod:`.lambdas` (``LambdaChecker``, ``NumberChecker``,
``MultiRunLambdaChecker``), :mod:`.regex`, :mod:`.match` (exact, fuzzy, refusal),
:mod:`.consistency` (monotonicity), :mod:`.classifier` (toxicity, bias), :mod:`.pii` — and
:mod:`.custom` for an LVE's own ``checker/checker.py``. Checkers are found by the class name that
``checker_args.checker_name`` uses through :mod:`.registry` (entry-point group
``redline.checkers``).
"""

from __future__ import annotations

from redline.lve.checkers.base import BaseChecker, CheckerError, MultiRunBaseChecker
from redline.lve.checkers.classifier import BiasChecker, ToxicityChecker
from redline.lve.checkers.consistency import MonotoncityChecker, MonotonicityChecker
from redline.lve.checkers.lambdas import LambdaChecker, MultiRunLambdaChecker, NumberChecker
from redline.lve.checkers.match import ExactMatchChecker, FuzzyMatchChecker, RefuseChecker
from redline.lve.checkers.pii import PII_Checker
from redline.lve.checkers.regex import RegexChecker
from redline.lve.checkers.registry import UnknownCheckerError, checker_names, get_checker_class
from redline.lve.sandbox import UnsafeLambdaError

__all__ = [
    "BaseChecker",
    "BiasChecker",
    "CheckerError",
    "ExactMatchChecker",
    "FuzzyMatchChecker",
    "LambdaChecker",
    "MonotoncityChecker",
    "MonotonicityChecker",
    "MultiRunBaseChecker",
    "MultiRunLambdaChecker",
    "NumberChecker",
    "PII_Checker",
    "RefuseChecker",
    "RegexChecker",
    "ToxicityChecker",
    "UnknownCheckerError",
    "UnsafeLambdaError",
    "checker_names",
    "get_checker_class",
]
