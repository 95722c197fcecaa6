"""Points on a grade's scale: half points, as instructors give them, spread over the criteria.

Every step that sets a grade's score (the scorer, the substance rules, the conclusion's cap)
rounds with the one ``STEP`` here and spreads a new total over the criteria with ``allocate``.
"""

from __future__ import annotations

from grader.engine.judging.evidence import closest_evidence
from grader.models import CriterionScore, Grade, Rubric

STEP = 0.5  # grades in half points, as instructors give them


def to_points(share: float, points: float) -> float:
    """The grade's score: the share of the points, in half points."""
    return round(share * points / STEP) * STEP


def allocate(
    criteria: list[CriterionScore], rubric: Rubric, score: float, answer: str, grade: Grade
) -> list[CriterionScore]:
    """The total spread over the criteria in the judge's proportions (by their points when
    the judge gave nothing), none above its maximum; every criterion that gets points shows
    the answer's closest span as evidence."""
    weights = [c.points for c in criteria]
    if sum(weights) <= 0:
        weights = [c.max_points for c in criteria]
    points = _spread(score, weights, [c.max_points for c in criteria])
    by_id = {c.id: c for c in rubric.criteria}
    out = []
    for c, p in zip(criteria, points, strict=True):
        evidence = c.evidence or (
            closest_evidence(by_id[c.id], answer, grade.signals) if p > 0 else ""
        )
        out.append(c.model_copy(update={"points": round(p, 2), "evidence": evidence}))
    return out


def _spread(total: float, weights: list[float], caps: list[float]) -> list[float]:
    """``total`` split in proportion to ``weights``; what a capped share cannot hold passes
    to the others (water-filling)."""
    shares = [0.0] * len(weights)
    left, open_ = total, [i for i, cap in enumerate(caps) if cap > 0]
    while left > 1e-9 and open_:
        weight = sum(weights[i] for i in open_)
        for i in open_:
            shares[i] += left * (weights[i] / weight if weight > 0 else 1 / len(open_))
        left = sum(max(0.0, shares[i] - caps[i]) for i in open_)
        for i in open_:
            shares[i] = min(shares[i], caps[i])
        open_ = [i for i in open_ if shares[i] < caps[i] - 1e-9]
    return shares


def scaled_to(grade: Grade, score: float) -> Grade:
    """``grade`` capped at ``score``: its criteria scaled down with it."""
    scale = score / grade.score if grade.score else 0.0
    criteria = [c.model_copy(update={"points": round(c.points * scale, 2)}) for c in grade.criteria]
    return grade.model_copy(update={"score": score, "criteria": criteria})
