"""The answers to grade first, on the pages: per question, the K answers whose instructor scores
help the rest most (``engine.review.suggest``, what ``grader suggest`` writes), each with the human
score form; then one form that re-scores the question's stored grades with those scores as
graded neighbours, by the exam's scorer as it stands, the judge never called
(``service.refits.regrade``).

Choosing encodes the question's answers (the embedder's disk cache holds those the workers
encoded) and re-scoring reads every grade of the question: both run off the event loop.
Answers are addressed by the store's id, since two platforms may both post ``s1``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from grader.api.instructor.answer_groups import group_ids, one_per_group_first
from grader.api.instructor.context import Ctx, Pages, SignedIn, Who, checked_form, question_url
from grader.api.instructor.forms import criterion_field
from grader.api.instructor.views import DONE, marking
from grader.errors import GraderError
from grader.models import Question, Submission
from grader.service import refits
from grader.service.exams import Exam
from grader.service.store import AnswerRow

router = APIRouter(
    prefix="/instructor/exams/{exam}/questions/{question_id}", include_in_schema=False
)

MAX_K = 50  # a page of answers to read and score by hand, not the whole question
DEFAULT_K = 10  # the measured lever: 10 graded answers per question
PerQuestion = Annotated[int, Query(ge=1, le=MAX_K)]
Count = Annotated[int | None, Query(ge=0, le=10**9)]


@router.get("/first", response_class=HTMLResponse)
def first_page(
    request: Request,
    exam: str,
    question_id: str,
    who: Who,
    ctx: Ctx,
    k: PerQuestion = DEFAULT_K,
    rescored: Count = None,
    changed: Count = None,
) -> HTMLResponse:
    """The question's K answers to grade first, in the order chosen (a sync handler: FastAPI
    runs it in a worker thread, where the embedder may load)."""
    found = ctx.exam_of(who.instructor, exam)
    done = DONE.get(request.query_params.get("done", ""))
    if request.query_params.get("done") == "regraded" and None not in (rescored, changed):
        done = f"Regraded without the judge: {rescored} grade(s) re-scored, {changed} changed."
    return _page(request, ctx, who, found, _question(found, question_id), k, done=done)


@router.post("/regrade")
async def regrade(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    form = await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    question = _question(found, question_id)
    k = _k(form.get("k", ""))
    try:
        done = await run_in_threadpool(
            lambda: refits.regrade(
                ctx.settings, ctx.store, found, question.id, who.instructor.name, ctx.embedder
            )
        )
    except GraderError as exc:
        error = getattr(exc, "message", str(exc))
        return await run_in_threadpool(
            lambda: _page(request, ctx, who, found, question, k, error=error)
        )
    ctx.dispatcher.announce(done.deliveries)
    page = question_url(found.name, question.id)
    url = f"{page}/first?k={k}&done=regraded&rescored={done.rescored}"
    return RedirectResponse(f"{url}&changed={done.changed}", status_code=303)


def _k(text: str) -> int:
    """The form's K, as the page's query bounds it."""
    if text.isascii() and text.isdigit() and len(text) < 4:
        return max(1, min(int(text), MAX_K))
    return DEFAULT_K


def _question(exam: Exam, question_id: str) -> Question:
    question = exam.bank.get(question_id)
    if question is None:
        raise HTTPException(404, f"no question {question_id!r} in {exam.name}")
    if question.type.objective:
        raise HTTPException(
            400, f"{question_id} is an objective question: its answers are scored by the key, "
            "there is nothing to grade first",
        )  # fmt: skip
    return question


def first_rows(ctx: Pages, exam: Exam, question: Question, k: int) -> list[AnswerRow]:
    """The question's ``k`` answers to grade first, as ``engine.review.suggest`` picks them (over
    every platform's answers: the choice reads meaning, not who posted), one of each answer
    group first (``answer_groups``)."""
    from grader.engine.review.suggest import suggest

    embedder = ctx.embedder
    if embedder is None:
        raise _NoEmbedder()
    rows = {str(r.submission.id): r for r in ctx.store.reviews.answers(exam.name, question.id)}
    answers = [
        Submission(id=sid, question_id=question.id, answer=r.submission.answer)
        for sid, r in rows.items()
    ]
    picked = [rows[s.id] for s in suggest(exam.bank, answers, embedder, ctx.settings.rules, k)]
    return one_per_group_first(picked, group_ids(ctx, list(rows.values())))


class _NoEmbedder(Exception):
    """The service runs without an embedding model: nothing to choose by."""


def _page(
    request: Request,
    ctx: Pages,
    who: SignedIn,
    exam: Exam,
    question: Question,
    k: int,
    *,
    done: str | None = None,
    error: str | None = None,
) -> HTMLResponse:
    try:
        rows = first_rows(ctx, exam, question, k)
    except _NoEmbedder:
        rows = None
        error = error or (
            "The service has no embedding model (GRADER_EMBED_MODEL=none): the answers to "
            "grade first are chosen by their meaning, so none can be chosen here."
        )
    return ctx.render(
        request,
        "first.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        question=question,
        here=question_url(exam.name, question.id),
        k=k,
        max_k=MAX_K,
        rows=rows,
        scale=marking(ctx, exam, question),
        criterion_field=criterion_field,
        done=done,
        error=error,
    )
