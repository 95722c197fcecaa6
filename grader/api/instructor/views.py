"""What the pages show about a question: the points an answer may get, counts and live
agreement with the judge, and the question page itself (also re-shown with a form's error)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from grader.api.instructor.context import Pages, SignedIn
from grader.api.instructor.forms import FormError, criterion_field
from grader.engine.rubrics import rubric_for
from grader.models import Criterion, GradeStatus, Question
from grader.service.exams import Exam
from grader.service.store import AnswerRow

if TYPE_CHECKING:
    from grader.calibrate import Agreement

DONE = {
    "score": "Human score saved.",
    "override": "Grade overridden.",
    "anchor": "Answer promoted to an anchor.",
    "accept": "Judge's grade accepted.",
}


@dataclass(frozen=True)
class Marking:
    """The points an instructor may give an answer: the total and, for a rubric, each
    criterion's (calibration's ``Scale`` is the same idea for CSV rows)."""

    max_score: float
    criteria: list[Criterion]


@dataclass(frozen=True)
class QuestionSummary:
    question: Question
    answers: int
    graded: int
    human: int
    open_reviews: int
    agreement: Agreement | None


def marking(ctx: Pages, exam: Exam, question: Question, row: AnswerRow | None = None) -> Marking:
    if not question.type.objective:
        rubric = rubric_for(question, exam.rubrics)
        return Marking(rubric.points, rubric.criteria)
    grade = row.submission.grade if row else None
    if grade is not None and grade.max_score is not None:
        return Marking(grade.max_score, [])
    return Marking(question.points or ctx.settings.default_objective_points, [])


def summary(question: Question, rows: list[AnswerRow], points: Marking) -> QuestionSummary:
    """Counts, and agreement over the answers scored by both a human and the judge."""
    from grader.calibrate import agreement  # the calibrate extra: numpy, SciPy, scikit-learn

    pairs = [
        (r.human.score, r.submission.grade.score)
        for r in rows
        if r.human is not None
        and r.submission.grade is not None
        and r.submission.grade.status == GradeStatus.GRADED
        and r.submission.grade.score is not None
    ]
    return QuestionSummary(
        question=question,
        answers=len(rows),
        graded=sum(r.submission.grade is not None for r in rows),
        human=sum(r.human is not None for r in rows),
        open_reviews=sum(r.open_review is not None for r in rows),
        agreement=(
            agreement([h for h, _ in pairs], [j for _, j in pairs], points.max_score, bootstrap=0)
            if pairs
            else None
        ),
    )


def question_page(
    request: Request,
    ctx: Pages,
    who: SignedIn,
    exam: Exam,
    question_id: str,
    *,
    error: FormError | str | None = None,
    error_answer: int | None = None,
) -> HTMLResponse:
    """A question with its rubric and every answer; 422 when re-shown with a form's error."""
    question = exam.bank.get(question_id)
    if question is None:
        raise HTTPException(404, f"no question {question_id!r} in {exam.name}")
    rows = ctx.store.reviews.answers(exam.name, question_id)
    rubric = None if question.type.objective else rubric_for(question, exam.rubrics)
    points = marking(ctx, exam, question, rows[0] if rows else None)
    return ctx.render(
        request,
        "question.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        question=question,
        rubric=rubric,
        anchors={a.id for a in rubric.anchors} if rubric else set(),
        scale=points,
        rows=rows,
        summary=summary(question, rows, points),
        criterion_field=criterion_field,
        error=str(error) if error else None,
        error_answer=error_answer,
        done=DONE.get(request.query_params.get("done", "")),
    )


def back_to(row: AnswerRow, form: dict[str, str], done: str) -> RedirectResponse:
    """After a form: back to the review queue or to the answer on its question page."""
    s = row.submission
    if form.get("back") == "review":
        url = f"/instructor/exams/{s.exam}/review?done={done}"
    else:
        url = f"/instructor/exams/{s.exam}/questions/{s.question_id}?done={done}#a{s.id}"
    return RedirectResponse(url, status_code=303)
