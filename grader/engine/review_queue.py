"""The review queue: a question's grades ranked by expected error, reviewed within a budget.

A queue that holds most answers points at none. So every model-scored grade gets an expected
error in points, from the scorer's confidence (the chance it is within a quarter of the points)
through a line fit on development grades (``benchmarks/review_queue.py``), and review is:

- every grade with a *hard* reason, one a person must settle whatever the ranking says
  (suspected injection, unscored, judge failure, an undecidable conclusion, …: any code that
  is not soft below);
- the top of the ranking, at most ``review_share`` of the question's answers.

Soft reasons (low confidence, the signals or the scorer disagreeing with the judge) explain
the ranking, they are not flags of their own: they move into ``details["review"]``, and a
grade the budget picks carries one ``expected_error`` reason that names them.
``near_duplicate`` is an integrity matter, not a grading one: it leaves the queue (the
grade's signals still name the copies; ``grader integrity`` reports them).

A pure post-pass over one call's grades, run again over a service exam's stored grades of a
question as answers arrive (``service.store.review_rank``); applying it twice changes nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from grader.models import Grade, GradeStatus, Method, ReviewCode, ReviewReason

SOFT = frozenset(
    {
        ReviewCode.LOW_CONFIDENCE,
        ReviewCode.SEMANTIC_DISAGREEMENT,
        ReviewCode.COVERAGE_DISAGREEMENT,
        ReviewCode.SCORER_DISAGREEMENT,
    }
)
INTEGRITY = frozenset({ReviewCode.NEAR_DUPLICATE})
RANKING = SOFT | INTEGRITY | {ReviewCode.EXPECTED_ERROR}  # codes this pass decides
# E|grade − human| as a share of the points = BASE + SLOPE · (1 − confidence): least squares
# on out-of-fold development grades, ADS and Mohler dev, every graded-answer setting
# (benchmarks/review_queue.py, "expected_error_fit" in benchmarks/results/review_queue.json).
ERROR_BASE = 0.062
ERROR_SLOPE = 0.428
UNKNOWN_CONFIDENCE = 0.5  # a model grade without a confidence ranks in the middle


def expected_error(grade: Grade) -> float | None:
    """Expected distance to the instructor's grade, in points; None for a grade no model
    scored (exact, by rule, unscored): the ranking leaves it alone."""
    if grade.status != GradeStatus.GRADED or grade.method != Method.JUDGE or not grade.max_score:
        return None
    sure = UNKNOWN_CONFIDENCE if grade.confidence is None else grade.confidence
    share = max(0.0, ERROR_BASE + ERROR_SLOPE * (1 - sure))
    return round(share * grade.max_score, 2)


def is_hard(grade: Grade) -> bool:
    """Flagged for a reason the ranking cannot weigh: a person always looks."""
    return grade.needs_review and any(r.code not in RANKING for r in grade.review_reasons)


def explanations(grade: Grade) -> list[ReviewReason]:
    """The soft reasons of a grade: in its reasons before this pass, in details after it."""
    kept = (grade.details.get("review") or {}).get("explanations") or []
    found = [ReviewReason.model_validate(r) for r in kept]
    found += [r for r in grade.review_reasons if r.code in SOFT]
    return list({(r.code, r.message): r for r in found}.values())


def budget(answers: int, share: float) -> int:
    """How many of a question's ``answers`` the ranking may send to review: at most
    ``share`` of them."""
    return math.floor(answers * share + 1e-9)


def rank_question(grades: Sequence[Grade], share: float) -> list[Grade]:
    """One question's grades (same order) with the budget applied: hard ones kept, the
    ``share`` with the largest expected error queued, every other soft flag lifted."""
    errors = [expected_error(g) for g in grades]
    order = sorted(
        (i for i, e in enumerate(errors) if e is not None), key=lambda i: -(errors[i] or 0.0)
    )
    rank = {i: n for n, i in enumerate(order, start=1)}
    picked = set([i for i in order if not is_hard(grades[i])][: budget(len(grades), share)])
    return [
        _queued(g, errors[i], rank.get(i), len(order), i in picked) for i, g in enumerate(grades)
    ]


def rank_grades(grades: Sequence[Grade], share: float) -> list[Grade]:
    """``rank_question`` per question over one call's grades; same order."""
    by_question: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(grades):
        by_question[g.question_id].append(i)
    out = list(grades)
    for members in by_question.values():
        ranked = rank_question([grades[i] for i in members], share)
        for i, g in zip(members, ranked, strict=True):
            out[i] = g
    return out


def queue_order(grades: Sequence[Grade]) -> list[Grade]:
    """The grades that need review, as an instructor should take them: hard reasons first,
    then by expected error, largest first."""
    return sorted(
        (g for g in grades if g.needs_review),
        key=lambda g: (not is_hard(g), -(review_of(g).get("expected_error") or 0.0)),
    )


def unranked(grade: Grade) -> Grade:
    """The grade as scoring left it, before this pass: soft reasons back among its reasons,
    no ranking. What a re-score starts from, so that it re-decides the scorer's own reasons
    (``engine.rescored_grade``) instead of keeping stale ones; rank again afterwards."""
    if "review" not in grade.details:
        return grade
    reasons = [r for r in grade.review_reasons if r.code != ReviewCode.EXPECTED_ERROR]
    reasons += [r for r in explanations(grade) if r not in reasons]
    details = {k: v for k, v in grade.details.items() if k != "review"}
    return grade.model_copy(
        update={"review_reasons": reasons, "needs_review": bool(reasons), "details": details}
    )


def review_of(grade: Grade) -> dict[str, Any]:
    """What this pass recorded on the grade (empty before it ran)."""
    return grade.details.get("review") or {}


def _queued(
    grade: Grade, error: float | None, rank: int | None, ranked: int, picked: bool
) -> Grade:
    soft = explanations(grade)
    reasons = [r for r in grade.review_reasons if r.code not in RANKING]
    if picked:
        why = "; ".join(r.message for r in soft)
        reasons.append(
            ReviewReason(
                code=ReviewCode.EXPECTED_ERROR,
                message=f"expected error {error:g} of {grade.max_score:g} points, "
                f"rank {rank} of {ranked}" + (f" ({why})" if why else ""),
            )
        )
    needs = bool(reasons) if grade.needs_review or picked else False
    details = dict(grade.details)
    if error is not None or soft:
        details["review"] = {
            "expected_error": error,
            "rank": rank,
            "ranked": ranked,
            "queued": needs,
            "explanations": [r.model_dump(mode="json") for r in soft],
        }
    return grade.model_copy(
        update={"review_reasons": reasons, "needs_review": needs, "details": details}
    )
