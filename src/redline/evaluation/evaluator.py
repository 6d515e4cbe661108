"""Evaluators turn an attempt's outputs (and detector scores) into one judgment per output.

The judgments are stored in ``attempt.notes["evaluation"]`` — a list aligned with
``attempt.outputs``. :data:`UNDETECTED` marks an output the evaluator could not judge; metrics
count those separately and leave them out of rates.
"""

from __future__ import annotations

from typing import Any

from redline.attempt import Attempt
from redline.detectors import ENSEMBLE_PREFIX
from redline.detectors.base import HIT_THRESHOLD
from redline.evaluation.judgment import FAIL, PASS, UNDETECTED, Judgment

__all__ = ["FAIL", "PASS", "UNDETECTED", "DetectorEvaluator", "Evaluator", "Judgment"]


class Evaluator:
    """Base class: :meth:`calculate_evaluation` returns one judgment per output."""

    def calculate_evaluation(self, attempt: Attempt) -> list[Any]:
        raise NotImplementedError

    def evaluate(self, attempt: Attempt) -> list[Any]:
        """Compute the judgments and store them in ``attempt.notes["evaluation"]``."""
        evaluation = list(self.calculate_evaluation(attempt))
        attempt.notes["evaluation"] = evaluation
        return evaluation


class DetectorEvaluator(Evaluator):
    """Pass/fail from detector scores: an output fails when any detector scores it at or above
    ``threshold`` (default 0.5); it is undetected when no detector could score it. The scores of
    an ensemble's members (keys ``"ensemble:..."``) are evidence and left out: the ensemble's own
    score counts."""

    def __init__(self, threshold: float = HIT_THRESHOLD) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        self.threshold = threshold

    def calculate_evaluation(self, attempt: Attempt) -> list[Judgment]:
        n = len(attempt.outputs)
        results = []
        for i in range(n):
            scores = [
                score
                for name, per_detector in attempt.detector_results.items()
                if not name.startswith(ENSEMBLE_PREFIX)  # a member's evidence: the ensemble's own key judges
                and i < len(per_detector)
                and (score := per_detector[i]) is not None
            ]
            if not scores:
                results.append(UNDETECTED)
            elif max(scores) >= self.threshold:
                results.append(FAIL)
            else:
                results.append(PASS)
        return results
