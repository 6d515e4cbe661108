"""How a run's reviews compare with its judge: :class:`ReviewTally` (what the summary of a
reviewed run prints). Its own module, so that printing a summary does not load the review's
sampling and files (:mod:`redline.report.review`, which re-exports it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from redline.evaluation import wilson_interval
from redline.store import LABEL_FAIL, ReviewRecord

__all__ = ["ReviewTally"]


@dataclass(frozen=True)
class ReviewTally:
    """How reviews compare with the judge: ``reviewed`` outputs, ``judged`` of them with a pass/fail
    verdict, ``wrong`` ones among those: ``false_hits`` (judge hit, reviewer pass) and ``missed``
    (judge pass, reviewer fail)."""

    reviewed: int
    judged: int
    false_hits: int
    missed: int

    @classmethod
    def of(cls, reviews: Iterable[ReviewRecord]) -> ReviewTally:
        """The tally of ``reviews``, each judged by :attr:`ReviewRecord.judge_wrong`."""
        reviews = list(reviews)
        judged = [r for r in reviews if r.judge_wrong is not None]
        wrong = [r for r in judged if r.judge_wrong]
        false_hits = sum(1 for r in wrong if r.verdict == LABEL_FAIL)
        return cls(reviewed=len(reviews), judged=len(judged), false_hits=false_hits, missed=len(wrong) - false_hits)

    @property
    def wrong(self) -> int:
        return self.false_hits + self.missed

    @property
    def error_rate(self) -> float | None:
        """The share of judged reviews on which the judge was wrong (``None`` without any)."""
        return self.wrong / self.judged if self.judged else None

    @property
    def ci95(self) -> tuple[float, float] | None:
        """Wilson 95% interval of :attr:`error_rate`."""
        return wilson_interval(self.wrong, self.judged) if self.judged else None
