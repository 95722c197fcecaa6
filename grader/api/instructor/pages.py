"""The pages an instructor reads: their exams, an exam's questions with live agreement, one
question's answers, the review queue, and near-copies (integrity). Counts come from the database; long lists are paged
(``?page=N``) so that no page reads or renders a whole exam."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from grader.api.instructor.answer_groups import differences
from grader.api.instructor.context import Ctx, Who
from grader.api.instructor.views import (
    DONE,
    Pager,
    copied_pairs,
    marking,
    question_page,
    ranked_rows,
    summary,
)
from grader.service.store import AnswerCounts, AnswerRow

router = APIRouter(prefix="/instructor", include_in_schema=False)

PageNumber = Annotated[int, Query(ge=1, le=10**6)]
AnswerId = Annotated[int | None, Query(ge=1, le=2**31 - 1)]


@router.get("", response_class=HTMLResponse)
def exam_list(request: Request, who: Who, ctx: Ctx) -> HTMLResponse:
    listed = []
    for name in sorted(who.instructor.exams & ctx.exams.keys()):
        total = sum(ctx.store.reviews.counts(name).values(), AnswerCounts())
        listed.append(
            {
                "name": name,
                "questions": len(ctx.exams[name].bank.questions),
                "answers": total.answers,
                "human": total.human,
                "open_reviews": total.open_reviews,
            }
        )
    return ctx.render(
        request, "exams.html.j2", instructor=who.instructor, csrf=who.session.csrf, exams=listed
    )


@router.get("/exams/{exam}", response_class=HTMLResponse)
def question_list(request: Request, exam: str, who: Who, ctx: Ctx) -> HTMLResponse:
    found = ctx.exam_of(who.instructor, exam)
    counts = ctx.store.reviews.counts(exam)
    scored: dict[str, list[AnswerRow]] = defaultdict(list)
    for row in ctx.store.reviews.answers(exam, scored_only=True):
        scored[row.submission.question_id].append(row)
    summaries = [
        summary(
            q, counts[q.id], scored[q.id], marking(ctx, found, q, next(iter(scored[q.id]), None))
        )
        for q in found.bank.questions
        if q.id in counts
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
def answers(
    request: Request,
    exam: str,
    question_id: str,
    who: Who,
    ctx: Ctx,
    page: PageNumber = 1,
    at: AnswerId = None,
) -> HTMLResponse:
    """One page of the question's answers; ``at``: the page with that answer on it."""
    found = ctx.exam_of(who.instructor, exam)
    return question_page(request, ctx, who, found, question_id, page=page, at=at)


@router.get("/exams/{exam}/review", response_class=HTMLResponse)
def review_queue(
    request: Request, exam: str, who: Who, ctx: Ctx, page: PageNumber = 1
) -> HTMLResponse:
    found = ctx.exam_of(who.instructor, exam)
    total = sum(ctx.store.reviews.counts(exam).values(), AnswerCounts()).open_reviews
    pager = Pager.of(total, page)
    # in ranked order (hard reasons first, then the largest expected error): the open queue is
    # a budgeted share of the answers, so it is read whole and paged here
    ranked = ranked_rows(ctx.store.reviews.answers(exam, open_only=True))
    rows = ranked[pager.offset : pager.offset + pager.size]
    return ctx.render(
        request,
        "review.html.j2",
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=found,
        rows=rows,
        pager=pager,
        scales={
            r.submission.id: marking(ctx, found, found.bank.question(r.submission.question_id), r)
            for r in rows
        },
        done=DONE.get(request.query_params.get("done", "")),
    )


@router.get("/exams/{exam}/integrity", response_class=HTMLResponse)
def integrity(
    request: Request, exam: str, who: Who, ctx: Ctx, page: PageNumber = 1
) -> HTMLResponse:
    """Different students' near-identical answers, side by side: for the instructor to
    judge, apart from the review queue (their grades are not in doubt for it)."""
    found = ctx.exam_of(who.instructor, exam)
    pairs = copied_pairs(ctx.store.reviews.answers(exam))
    pager = Pager.of(len(pairs), page)
    shown = pairs[pager.offset : pager.offset + pager.size]
    return ctx.render(
        request,
        "integrity.html.j2",
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=found,
        pairs=shown,
        # the second answer against the first: what one adds (or lacks) is what to judge
        marked=[differences(p.first.submission.answer, p.second.submission.answer) for p in shown],
        pager=pager,
    )
