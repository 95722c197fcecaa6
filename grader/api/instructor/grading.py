"""Grading with the keyboard alone: a question's answers one at a time, on a compact page with
the answer, the judge's points, the levels of each criterion and the reference at hand, and
one field, focused, that takes the score and the moves.

In the field: the points of every criterion (``11011``, or ``1 1 0.5 1 0``; ``=3.5`` for a
total) and Enter saves the score (it is the grade: ``reviews.set_human_score``) and opens the
next answer no instructor has scored; ``n`` / ``p`` move to the next / previous answer, ``u``
to the next unscored one, Enter on an empty field too. No script runs (the pages' policy):
each Enter is one form post and one page load, the field focused again by ``autofocus``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from grader.api.instructor.context import Ctx, Pages, SignedIn, Who, checked_form, question_url
from grader.api.instructor.forms import POINTS_HELP, FormError, parse_points
from grader.api.instructor.views import marking
from grader.engine.reading.rubrics import rubric_for
from grader.models import Question
from grader.service.exams import Exam
from grader.service.store import AnswerRow

router = APIRouter(
    prefix="/instructor/exams/{exam}/questions/{question_id}/grade", include_in_schema=False
)
AnswerId = Annotated[int | None, Query(ge=1, le=2**31 - 1)]
MOVES = {"n": 1, "j": 1, "p": -1, "k": -1}


@dataclass(frozen=True)
class Place:
    """Where an answer is among its question's: its index, and the rows in order."""

    rows: list[AnswerRow]
    index: int

    @property
    def row(self) -> AnswerRow:
        return self.rows[self.index]

    @property
    def scored(self) -> int:
        return sum(r.human is not None for r in self.rows)

    def step(self, by: int) -> AnswerRow:
        return self.rows[(self.index + by) % len(self.rows)]

    def next_unscored(self) -> AnswerRow | None:
        """The first answer after this one (wrapping round) that no instructor scored."""
        count = len(self.rows)
        for k in range(1, count + 1):
            candidate = self.rows[(self.index + k) % count]
            if candidate.human is None:
                return candidate
        return None


@router.get("", response_class=HTMLResponse)
def grade_page(
    request: Request, exam: str, question_id: str, who: Who, ctx: Ctx, at: AnswerId = None
) -> HTMLResponse:
    """The answer ``at``, else the first one not scored yet (else the first)."""
    found = ctx.exam_of(who.instructor, exam)
    question = _question(found, question_id)
    rows = ctx.store.reviews.answers(exam, question.id)
    if not rows:
        raise HTTPException(404, f"no answers to {question_id} yet")
    place = _place(rows, at)
    return _page(request, ctx, who, found, question, place, saved=_saved(request, rows))


@router.post("")
async def grade(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    form = await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    question = _question(found, question_id)
    at = form.get("at", "")
    place = _place(ctx.store.reviews.answers(exam, question.id), int(at) if at.isdigit() else None)
    text = (form.get("points") or "").strip().lower()
    if text in MOVES:
        return _go(found, question, place.step(MOVES[text]))
    if text in ("", "u"):
        return _go(found, question, place.next_unscored() or place.row)
    points = marking(ctx, found, question, place.row)
    try:
        entry = parse_points(text, points.max_score, points.criteria)
    except FormError as exc:
        return _page(request, ctx, who, found, question, place, error=str(exc), typed=text)
    saved = ctx.store.reviews.set_human_score(
        place.row.submission.id, who.instructor.id, entry.score, entry.criteria
    )
    ctx.dispatcher.announce(saved.deliveries)
    rows = ctx.store.reviews.answers(exam, question.id)
    after = Place(rows, place.index)
    return _go(found, question, after.next_unscored(), saved=place.row.submission.id)


def _place(rows: list[AnswerRow], at: int | None) -> Place:
    ids = [r.submission.id for r in rows]
    if at is not None and at in ids:
        return Place(rows, ids.index(at))
    first = next((i for i, r in enumerate(rows) if r.human is None), 0)
    return Place(rows, first)


def _go(exam: Exam, question: Question, row: AnswerRow | None, saved: int | None = None):
    url = f"{question_url(exam.name, question.id)}/grade"
    query = [f"at={row.submission.id}"] if row is not None else ["all=1"]
    if saved is not None:
        query.append(f"saved={saved}")
    return RedirectResponse(f"{url}?{'&'.join(query)}", status_code=303)


def _saved(request: Request, rows: list[AnswerRow]) -> str | None:
    """The notice after a save: the answer just scored and its score, read from the store."""
    saved = request.query_params.get("saved", "")
    row = next((r for r in rows if saved.isdigit() and r.submission.id == int(saved)), None)
    if row is None or row.human is None:
        return None
    points = " ".join(f"{p:g}" for p in (row.human.criteria or {}).values())
    return f"{row.submission.external_id}: {row.human.score:g}" + (f" ({points})" if points else "")


def _page(
    request: Request,
    ctx: Pages,
    who: SignedIn,
    exam: Exam,
    question: Question,
    place: Place,
    *,
    saved: str | None = None,
    error: str | None = None,
    typed: str = "",
) -> HTMLResponse:
    return ctx.render(
        request,
        "grade.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        question=question,
        rubric=rubric_for(question, exam.rubrics),
        place=place,
        row=place.row,
        scale=marking(ctx, exam, question, place.row),
        all_scored=place.scored == len(place.rows),
        saved=saved,
        error=error,
        typed=typed,
        help=POINTS_HELP,
        here=question_url(exam.name, question.id),
    )


def _question(exam: Exam, question_id: str) -> Question:
    question = exam.bank.get(question_id)
    if question is None:
        raise HTTPException(404, f"no question {question_id!r} in {exam.name}")
    return question
