"""Key-point coverage without a model: how much of each key point's wording the answer has.

Character bigrams for Chinese and words for Latin text, on match keys (Simplified, NFKC,
case-folded: ``grader.text.features``). It cannot be talked into anything and fails on
different answers than the LLM judge does (reworded or English answers), which is why the
pipeline uses the two together: a large gap between them sends the grade to review.
"""

from __future__ import annotations

from grader.models import Criterion, Rubric
from grader.text import features, match_key, point_coverage


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


MIN_PASTED_CHARS = 6  # shorter descriptions ("累加梯度") are words students use too
MIN_RUN_POINTS = 3  # a criterion's key points pasted as one run, in the rubric's order


def pastes_rubric(answer: str, rubric: Rubric) -> bool:
    """The answer copies the rubric's own text: for at least half of the criteria (and at
    least two), the criterion's description, or its whole list of key points in order, stands
    in the answer verbatim (letters, digits and CJK only). A student writes the content in
    sentences; a paste of the marking scheme is what a small judge would pay for in full."""
    have = _bare(answer)
    pasted = 0
    for criterion in rubric.criteria:
        description = _bare(criterion.description)
        run = _bare("".join(criterion.key_points))
        if (len(description) >= MIN_PASTED_CHARS and description in have) or (
            len(criterion.key_points) >= MIN_RUN_POINTS and run in have
        ):
            pasted += 1
    return pasted >= max(2, (len(rubric.criteria) + 1) // 2)


def _bare(text: str) -> str:
    return "".join(ch for ch in match_key(text) if ch.isalnum())
