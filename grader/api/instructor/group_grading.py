"""Grade a group at once: a question's answer groups (``answer_groups``), each with its
representative answer and its members' differences marked, and one score (points per
criterion) for the group, given to every member the instructor keeps ticked; a member
ticked "detach" keeps its own score. Members an instructor scored already come detached.
The page focuses the score field of the first group with answers not scored yet.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from grader.api.instructor.answer_groups import question_groups
from grader.api.instructor.context import (
    Ctx,
    Pages,
    SignedIn,
    Who,
    checked_form,
    question_url,
    rubric_question,
)
from grader.api.instructor.forms import POINTS_HELP, FormError, parse_points
from grader.api.instructor.views import marking
from grader.engine.reading.rubrics import rubric_for
from grader.models import Question
from grader.service.exams import Exam

router = APIRouter(
    prefix="/instructor/exams/{exam}/questions/{question_id}/groups", include_in_schema=False
)
MAX_MEMBERS = 1000  # the ids a group's form carries (one field)
_GROUP = re.compile(r"g[0-9]{1,6}|single-[0-9]{1,10}|[a-z0-9_-]{1,20}")


@router.get("", response_class=HTMLResponse)
def groups_page(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    """A sync handler: FastAPI runs it in a worker thread, where the embedder may load."""
    found = ctx.exam_of(who.instructor, exam)
    question = rubric_question(found, question_id)
    return _page(request, ctx, who, found, question, done=_done(request))


@router.post("/score")
async def score_group(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    form = await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    question = rubric_question(found, question_id)
    rows = {r.submission.id: r for r in ctx.store.reviews.answers(exam, question.id)}
    listed = [int(i) for i in (form.get("members") or "").split(",") if i.isdigit()]
    members = [rows[i] for i in listed[:MAX_MEMBERS] if i in rows]
    kept = [r for r in members if form.get(f"d_{r.submission.id}") != "on"]
    group = (form.get("group") or "")[:40]
    try:
        if not kept:
            raise FormError("points", "every answer of the group is detached: nothing to score")
        points = marking(ctx, found, question, kept[0])
        entry = parse_points(form.get("points") or "", points.max_score, points.criteria)
    except FormError as exc:
        message = str(exc)
        return await run_in_threadpool(
            lambda: _page(request, ctx, who, found, question, error=message, failed=group)
        )
    deliveries = []
    for row in kept:
        saved = ctx.store.reviews.set_human_score(
            row.submission.id, who.instructor.id, entry.score, entry.criteria
        )
        deliveries += saved.deliveries
    ctx.dispatcher.announce(deliveries)
    page = question_url(found.name, question.id)
    url = f"{page}/groups?done=group&n={len(kept)}&group={quote(group)}"
    return RedirectResponse(f"{url}#group-{quote(group)}", status_code=303)


def _done(request: Request) -> str | None:
    """The notice after a group was scored, from the redirect's own numbers (never text)."""
    params = request.query_params
    count, group = params.get("n", ""), params.get("group", "")
    if params.get("done") != "group" or not count.isdigit() or not _GROUP.fullmatch(group):
        return None
    return f"{int(count)} answer(s) of group {group} scored."


def _page(
    request: Request,
    ctx: Pages,
    who: SignedIn,
    exam: Exam,
    question: Question,
    *,
    done: str | None = None,
    error: str | None = None,
    failed: str | None = None,
) -> HTMLResponse:
    rows = ctx.store.reviews.answers(exam.name, question.id)
    groups = question_groups(ctx, rows)
    if groups is None:
        error = error or (
            "The service has no embedding model (GRADER_EMBED_MODEL=none) and no grade recorded "
            "an answer group: these answers cannot be grouped."
        )
    first_open = next((g.id for g in groups or [] if g.scored < g.size), None)
    return ctx.render(
        request,
        "groups.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        question=question,
        rubric=rubric_for(question, exam.rubrics),
        groups=groups or [],
        focus=failed or first_open,
        scale=marking(ctx, exam, question, rows[0] if rows else None),
        help=POINTS_HELP,
        here=question_url(exam.name, question.id),
        done=done,
        error=error,
    )
