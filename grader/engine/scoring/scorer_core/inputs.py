"""The scorer's one input: an answer as it reads it.

Grading, re-scoring and an instructor's refit read an answer against its question's graded
pool (``scorer_core.pool.read_answer``); the default fit reads a row of its training table
(``grader.calibrate.scorer_rows.reading``), whose neighbours and copies the benchmarks found
by the same rule (``rules.graded_split``). Either way ``rules.decide`` takes a ``ScorerInput``.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.engine.scoring.scorer_model import AnswerFeatures
from grader.models import GradedAnswer


@dataclass(frozen=True)
class Copy:
    """A graded answer with the answer's very text."""

    id: str
    share: float  # its human share of the points: what the copy rule takes
    score: float | None = None  # its human points, shown on the grade (None: not known)


@dataclass(frozen=True)
class ScorerInput:
    """One answer as the scorer reads it: its features (its own and, when its question has
    graded answers, the neighbour ones), the graded copies of its text, and the graded
    answers nearest to it with their cosines (shown to the instructor, not read), and under
    plan ``anchored`` the judge's anchored reading (``grader.engine.scoring.anchored``)."""

    features: AnswerFeatures
    copies: tuple[Copy, ...] = ()
    nearest: tuple[tuple[GradedAnswer, float], ...] = ()
    anchored: float | None = None
