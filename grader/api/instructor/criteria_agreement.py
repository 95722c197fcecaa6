"""Agreement per criterion: instructors enter points per criterion, so the pages compare the
judge's points with theirs criterion by criterion (n, QWK, MAE, exact, with 95 % bootstrap
intervals), over the answers an instructor scored on every criterion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.models import Criterion, Grade, GradeStatus
from grader.service.store import HumanEntry

if TYPE_CHECKING:
    from grader.calibrate import Agreement

BOOTSTRAP = 500  # intervals on a page: enough to show their width, quick on a few hundred


@dataclass(frozen=True)
class CriterionAgreement:
    criterion: Criterion
    agreement: Agreement | None  # None: no answer scored on this criterion and graded


def per_criterion(
    criteria: Sequence[Criterion],
    pairs: Sequence[tuple[HumanEntry | None, Grade | None]],
    bootstrap: int = BOOTSTRAP,
) -> list[CriterionAgreement]:
    """For each criterion, the instructor's points against the judge's on the answers that
    have both (an instructor's total alone says nothing of a criterion)."""
    from grader.calibrate import agreement  # the calibrate extra: numpy, SciPy

    found = []
    for criterion in criteria:
        human, judge = [], []
        for entry, grade in pairs:
            if entry is None or not entry.criteria or criterion.id not in entry.criteria:
                continue
            points = _judge_points(grade, criterion.id)
            if points is not None:
                human.append(entry.criteria[criterion.id])
                judge.append(points)
        figures = agreement(human, judge, criterion.points, bootstrap=bootstrap) if human else None
        found.append(CriterionAgreement(criterion, figures))
    return found


def _judge_points(grade: Grade | None, criterion_id: str) -> float | None:
    if grade is None or grade.status != GradeStatus.GRADED:
        return None
    return next((c.points for c in grade.criteria if c.id == criterion_id), None)
