"""``grade_many``: the one entry point that turns submissions into grades, batch-first.

Objective questions are graded exactly. Subjective questions need the judge; until one is
configured they get status ``needs_judge`` — an explicit "not graded yet", never a silent 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from grader import __version__
from grader.config import Settings
from grader.models import Bank, Grade, GradeStatus, Method, Question, ReviewReason, Submission
from grader.objective import grade_objective


def grade_many(
    submissions: Sequence[Submission], bank: Bank, settings: Settings | None = None
) -> list[Grade]:
    """Grade ``submissions``, one grade per submission in the same order.

    Question ids must already be resolved against ``bank`` (``grader.submissions`` does that
    with errors that name the input line).
    """
    settings = settings or Settings()
    questions = {q.id: q for q in bank.questions}
    return [_grade_one(s, questions[s.question_id], settings) for s in submissions]


def _grade_one(submission: Submission, question: Question, settings: Settings) -> Grade:
    base = {
        "submission_id": submission.id,
        "question_id": question.id,
        "student": submission.student,
    }
    if not question.type.objective:
        return Grade(
            **base,
            status=GradeStatus.NEEDS_JUDGE,
            score=None,
            max_score=question.points,
            method=Method.NONE,
            review_reasons=[
                ReviewReason(
                    code="needs_judge",
                    message=f"{question.type} questions need the LLM judge, none is configured",
                )
            ],
            provenance=_provenance(settings),
        )
    max_points = (
        question.points if question.points is not None else settings.default_objective_points
    )
    if question.answer is None:
        return Grade(
            **base,
            status=GradeStatus.NO_KEY,
            score=None,
            max_score=max_points,
            method=Method.NONE,
            needs_review=True,
            review_reasons=[ReviewReason(code="no_key", message="the bank has no answer key")],
            provenance=_provenance(settings),
        )
    if not submission.answer.strip():
        return Grade(
            **base,
            status=GradeStatus.GRADED,
            score=0.0,
            max_score=max_points,
            method=Method.RULE,
            review_reasons=[ReviewReason(code="blank", message="no answer given")],
            details={"expected": question.answer},
            provenance=_provenance(settings),
        )
    result = grade_objective(
        question, submission.answer, max_points, settings.multiple_choice_credit
    )
    return Grade(
        **base,
        status=GradeStatus.GRADED,
        score=result.points,
        max_score=max_points,
        method=Method.EXACT,
        confidence=1.0 if not result.reasons else None,
        needs_review=bool(result.reasons),
        review_reasons=result.reasons,
        details={"read_as": result.read_as, "expected": question.answer, "correct": result.correct},
        provenance=_provenance(settings),
    )


def _provenance(settings: Settings) -> dict:
    return {
        "engine": f"grader {__version__}",
        "multiple_choice_credit": settings.multiple_choice_credit.value,
    }
