"""The pages an instructor reads: their exams, an exam's questions with live agreement, one
question's answers, and the review queue."""

from __future__ import annotations

from collections import defaultdict

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from grader.api.instructor.context import Ctx, Who
from grader.api.instructor.views import DONE, marking, question_page, summary
from grader.service.store import AnswerRow

router = APIRouter(prefix="/instructor", include_in_schema=False)


@router.get("", response_class=HTMLResponse)
def exam_list(request: Request, who: Who, ctx: Ctx) -> HTMLResponse:
    listed = []
    for name in sorted(who.instructor.exams & ctx.exams.keys()):
        rows = ctx.store.reviews.answers(name)
        listed.append(
            {
                "name": name,
                "questions": len(ctx.exams[name].bank.questions),
                "answers": len(rows),
                "human": sum(r.human is not None for r in rows),
                "open_reviews": sum(r.open_review is not None for r in rows),
            }
        )
    return ctx.render(
        request, "exams.html.j2", instructor=who.instructor, csrf=who.session.csrf, exams=listed
    )


@router.get("/exams/{exam}", response_class=HTMLResponse)
def question_list(request: Request, exam: str, who: Who, ctx: Ctx) -> HTMLResponse:
    found = ctx.exam_of(who.instructor, exam)
    by_question: dict[str, list[AnswerRow]] = defaultdict(list)
    for row in ctx.store.reviews.answers(exam):
        by_question[row.submission.question_id].append(row)
    summaries = [
        summary(q, by_question[q.id], marking(ctx, found, q, by_question[q.id][0]))
        for q in found.bank.questions
        if by_question.get(q.id)
    ]
    return ctx.render(
        request,
        "questions.html.j2",
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=found,
        summaries=summaries,
        unanswered=len(found.bank.questions) - len(summaries),
    )


@router.get("/exams/{exam}/questions/{question_id}", response_class=HTMLResponse)
def answers(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx) -> HTMLResponse:
    return question_page(request, ctx, who, ctx.exam_of(who.instructor, exam), question_id)


@router.get("/exams/{exam}/review", response_class=HTMLResponse)
def review_queue(request: Request, exam: str, who: Who, ctx: Ctx) -> HTMLResponse:
    found = ctx.exam_of(who.instructor, exam)
    rows = [r for r in ctx.store.reviews.answers(exam) if r.open_review is not None]
    return ctx.render(
        request,
        "review.html.j2",
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=found,
        rows=rows,
        scales={
            r.submission.id: marking(ctx, found, found.bank.get(r.submission.question_id), r)
            for r in rows
        },
        done=DONE.get(request.query_params.get("done", "")),
    )
