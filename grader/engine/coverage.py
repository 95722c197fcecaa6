"""Key-point coverage without a model: how much of each key point's wording the answer has.

Character bigrams for Chinese and words for Latin text, on match keys (Simplified, NFKC,
case-folded: ``grader.text.features``). It cannot be talked into anything and fails on
different answers than the LLM judge does (reworded or English answers), which is why the
pipeline uses the two together: a large gap between them sends the grade to review.
"""

from __future__ import annotations

from grader.models import Criterion, Rubric
from grader.text import features, point_coverage


def criterion_coverage(criterion: Criterion, answer: str) -> float:
    """Mean coverage of the criterion's key points (its description when it lists none)."""
    have = features(answer)
    points = criterion.key_points or [criterion.description]
    return sum(point_coverage(p, have) for p in points) / len(points)


def rubric_coverage(rubric: Rubric, answer: str) -> dict[str, float]:
    return {c.id: criterion_coverage(c, answer) for c in rubric.criteria}


def coverage_points(rubric: Rubric, answer: str) -> float:
    """Points the answer would get if each criterion paid out in proportion to its coverage."""
    covered = rubric_coverage(rubric, answer)
    return sum(c.points * covered[c.id] for c in rubric.criteria)
