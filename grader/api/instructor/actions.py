"""The forms an instructor posts about one answer: a human score, an override, accepting the
judge's grade, promoting the answer to a rubric anchor. POST-redirect-GET; a bad field
re-shows the question page with the error (422)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from grader.api.instructor.context import Ctx, Who, checked_form
from grader.api.instructor.forms import FormError, parse_human_score, parse_override
from grader.api.instructor.views import back_to, marking, question_page
from grader.errors import GraderError
from grader.service import rubric_versions

router = APIRouter(prefix="/instructor/answers/{submission_id}", include_in_schema=False)


@router.post("/score")
async def enter_score(request: Request, submission_id: int, who: Who, ctx: Ctx):
    form = await checked_form(request, who)
    exam, row = ctx.answer_of(who.instructor, submission_id)
    question = exam.bank.question(row.submission.question_id)
    points = marking(ctx, exam, question, row)
    try:
        entry = parse_human_score(form, points.max_score, points.criteria)
    except FormError as exc:
        return question_page(
            request, ctx, who, exam, question.id, error=exc, error_answer=row.submission.id
        )
    saved = ctx.store.reviews.set_human_score(
        row.submission.id, who.instructor.id, entry.score, entry.criteria
    )
    ctx.dispatcher.announce(saved.deliveries)
    return back_to(row, form, "score")


@router.post("/override")
async def override(request: Request, submission_id: int, who: Who, ctx: Ctx):
    form = await checked_form(request, who)
    exam, row = ctx.answer_of(who.instructor, submission_id)
    question = exam.bank.question(row.submission.question_id)
    try:
        entry = parse_override(form, marking(ctx, exam, question, row).max_score)
    except FormError as exc:
        return question_page(
            request, ctx, who, exam, question.id, error=exc, error_answer=row.submission.id
        )
    saved = ctx.store.reviews.add_override(
        row.submission.id, entry.score, entry.reason, who.instructor.name
    )
    ctx.dispatcher.announce(saved.deliveries)
    return back_to(row, form, "override")


@router.post("/accept")
async def accept(request: Request, submission_id: int, who: Who, ctx: Ctx) -> RedirectResponse:
    form = await checked_form(request, who)
    _, row = ctx.answer_of(who.instructor, submission_id)
    ctx.store.reviews.accept_judge(row.submission.id, who.instructor.name)
    return back_to(row, form, "accept")


@router.post("/promote")
async def promote(request: Request, submission_id: int, who: Who, ctx: Ctx):
    """The answer becomes an anchor of its rubric: a new rubric version, kept in the service
    and written to the bank's rubric file, graded with at once by every grading process. The anchor is
    named by the store's id (``answer-<id>``, ``answer_id``), not the platform's submission id:
    two platforms may both post "s1" to this exam, and the rubric grades both."""
    from grader.calibrate import HumanScore, plan_promotions

    form = await checked_form(request, who)
    exam, row = ctx.answer_of(who.instructor, submission_id)
    s = row.submission
    question = exam.bank.question(s.question_id)
    try:
        if question.type.objective:
            raise FormError("promote", "objective questions have no rubric anchors")
        if row.human is None:
            raise FormError("promote", "enter a human score for this answer first")
        human = HumanScore(
            submission_id=f"answer-{s.id}",
            answer_id=s.id,
            question_id=s.question_id,
            score=row.human.score,
            criteria=row.human.criteria or {},
            answer=s.answer,
            line=0,
        )
        note = f"promoted by {who.instructor.name}"
        promotions = plan_promotions(exam.bank, exam.rubrics, [human], {}, note=note)
    except GraderError as exc:
        error = FormError("promote", getattr(exc, "message", str(exc)))
        return question_page(request, ctx, who, exam, s.question_id, error=error, error_answer=s.id)
    except FormError as exc:
        return question_page(request, ctx, who, exam, s.question_id, error=exc, error_answer=s.id)
    for promotion in promotions:
        rubric_versions.save(exam, ctx.store, question, promotion.after, who.instructor.name,
                             f"answer {s.id} promoted to an anchor")  # fmt: skip
    return back_to(row, form, "anchor")
