"""The scorer's two rules about graded answers, and its decision.

- The neighbour rule (``graded_split``): a graded answer is never its own neighbour, and one
  with the answer's very text (the same match key) is a copy, not a neighbour. A copy's
  grade is shown and taken, never averaged in: on the ADS development part copies often
  carry a different score (docs/research/benchmarks-log.md), and in an evaluation they would be the
  answer grading itself.
- The copy rule (``decide``): an answer whose text was graded takes the mean human share of
  those copies; any other answer the scorer's share, blended with the judge's anchored
  reading where plan ``anchored`` read one (``ANCHORED_WEIGHT`` of it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grader.engine.scoring.scorer_core.inputs import Copy, ScorerInput
from grader.engine.scoring.scorer_model import AnswerFeatures, ScorerSet

COPY = "copy"  # who decided a grade the copy rule gave
# The anchored reading's weight beside the scorer's share: picked from 0.25 and 0.5 on the
# development seed sets 1 and 3 (Pearson 0.50 -> 0.54), held out on set 2 (0.58 -> 0.62),
# docs/research/benchmarks-log.md "Wrong answers on instructor rubrics".
ANCHORED_WEIGHT = 0.25


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


def readable(scorer: ScorerSet, features: AnswerFeatures) -> bool:
    """Whether one of the scorer's first-stage models has every feature it needs, read as
    ``ScorerSet.base`` reads them (``usable``); an answer to a question without a reference
    has none that does, and keeps the judge's points."""
    usable = scorer.usable(features)
    return any(s.serves(usable) for s in scorer.first_stage)


def decide(reading: ScorerInput, scorer: ScorerSet) -> tuple[str, float]:
    """(who decided, the share): the copy rule, else the scorer (with the anchored reading)."""
    if reading.copies:
        return COPY, copied_share(reading.copies)
    decided, share = scorer.score(reading.features)
    if reading.anchored is None:
        return decided, share
    return decided, (1 - ANCHORED_WEIGHT) * share + ANCHORED_WEIGHT * reading.anchored
