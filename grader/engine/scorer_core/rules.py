"""The scorer's two rules about graded answers, and its decision.

- The neighbour rule (``graded_split``): a graded answer is never its own neighbour, and one
  with the answer's very text (the same match key) is a copy, not a neighbour. A copy's
  grade is shown and taken, never averaged in: on the ADS development part copies often
  carry a different score (docs/research/benchmarks-log.md), and in an evaluation they would be the
  answer grading itself.
- The copy rule (``decide``): an answer whose text was graded takes the mean human share of
  those copies; any other answer the scorer's share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grader.engine.scorer_core.reading import Copy, Reading
from grader.engine.scorer_model import ScorerSet

COPY = "copy"  # who decided a grade the copy rule gave


def graded_split(
    answer_id: str, answer_key: str, ids: Sequence[str], keys: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(may be a neighbour, is a copy): two masks over the graded answers ``ids`` with match
    ``keys``, for the answer ``answer_id`` with match key ``answer_key``."""
    other = np.array([i != answer_id for i in ids], dtype=bool)
    same = np.array([k == answer_key for k in keys], dtype=bool)
    return other & ~same, other & same


def copy_share(score: float, points: float) -> float:
    """A graded answer's human share of the points, as the copy rule and the neighbour
    features read it (a score above the points counts as full marks)."""
    return min(1.0, score / points)


def copied_share(copies: Sequence[Copy]) -> float:
    """The copy rule's share: the mean human share of the graded copies (at least one)."""
    return sum(c.share for c in copies) / len(copies)


def decide(reading: Reading, scorer: ScorerSet) -> tuple[str, float]:
    """(who decided, the share): the copy rule, else the scorer."""
    if reading.copies:
        return COPY, copied_share(reading.copies)
    return scorer.score(reading.features)
