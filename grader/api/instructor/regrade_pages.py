"""Apply a rubric change to everyone, on the pages: start a regrade of a question's stored
answers against its rubric as it stands (``service.regrades``; a grading process works it in
the background), watch its progress (the page reloads itself, no script), then read what
moved: a before/after table and the agreement per criterion with the instructors' points,
before and after, on the answers they scored.

The instructors' own scores stay the grades their platforms read; the table shows the
judge's grade beneath, before and after, beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from grader.api.instructor.context import Ctx, Pages, Who, checked_form, question_url
from grader.api.instructor.criteria_agreement import CriterionAgreement, per_criterion
from grader.engine.reading.rubrics import rubric_for
from grader.errors import GraderError
from grader.models import Grade, Question
from grader.service import regrades
from grader.service.exams import Exam
from grader.service.store import AnswerRow
from grader.service.store.regrades import RegradeJob

router = APIRouter(
    prefix="/instructor/exams/{exam}/questions/{question_id}", include_in_schema=False
)
JobId = Annotated[int, Path(ge=1, le=2**31 - 1)]
REFRESH_S = 2  # the progress page reloads itself this often while the regrade runs


@dataclass(frozen=True)
class Moved:
    """One answer before and after the regrade (the judge's grades), beside the instructor's."""

    row: AnswerRow
    before: Grade | None
    after: Grade | None  # None until its batch is done

    @property
    def criteria(self) -> list[tuple[str, float, float]]:
        """The criteria whose points moved: (id, before, after)."""
        if self.before is None or self.after is None:
            return []
        old = {c.id: c.points for c in self.before.criteria}
        return [(c.id, old[c.id], c.points) for c in self.after.criteria
                if c.id in old and old[c.id] != c.points]  # fmt: skip

    @property
    def moved(self) -> bool:
        return bool(self.delta or self.criteria)

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        if self.before.score is None or self.after.score is None:
            return None
        return self.after.score - self.before.score


@router.post("/regrade-rubric")
async def start(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    try:
        job = regrades.start(ctx.store, found, question_id, who.instructor.name)
    except GraderError as exc:
        raise HTTPException(400, getattr(exc, "message", str(exc))) from exc
    ctx.dispatcher.regrade(job.id)
    return RedirectResponse(
        f"{question_url(found.name, question_id)}/regrades/{job.id}", status_code=303
    )


@router.get("/regrades/{job_id}", response_class=HTMLResponse)
async def progress(
    request: Request, exam: str, question_id: str, job_id: JobId, who: Who, ctx: Ctx
) -> HTMLResponse:
    found = ctx.exam_of(who.instructor, exam)
    job = ctx.store.regrades.get(job_id)
    question = found.bank.get(question_id)
    if job is None or job.exam != exam or job.question_id != question_id or question is None:
        raise HTTPException(404, f"no regrade {job_id} of {exam}/{question_id}")
    # the comparison reads the question's answers and bootstraps intervals: off the loop
    moved, before, after = await run_in_threadpool(_compare, ctx, found, question, job)
    return ctx.render(
        request,
        "regrade.html.j2",
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=found,
        question=question,
        job=job,
        moved=moved,
        changed=[m for m in moved if m.moved],
        agreement=list(zip(before, after, strict=True)),
        refresh_s=None if job.finished else REFRESH_S,
        here=question_url(found.name, question_id),
    )


def _compare(
    ctx: Pages, exam: Exam, question: Question, job: RegradeJob
) -> tuple[list[Moved], list[CriterionAgreement], list[CriterionAgreement]]:
    rows = {r.submission.id: r for r in ctx.store.reviews.answers(exam.name, question.id)}
    old = ctx.store.regrades.grades(list(job.before.values()))
    moved = []
    for submission_id, grade_id in sorted(job.before.items()):
        row = rows.get(submission_id)
        if row is None:
            continue
        now = row.submission.grade
        regraded = now is not None and now.provenance.rubric_version == job.rubric_version
        moved.append(Moved(row, old.get(grade_id), now if regraded else None))
    moved.sort(key=lambda m: (-(abs(m.delta) if m.delta else 0), not m.moved, m.row.submission.id))
    criteria = rubric_for(question, exam.rubrics).criteria
    return (
        moved,
        per_criterion(criteria, [(m.row.human, m.before) for m in moved]),
        per_criterion(criteria, [(m.row.human, m.after) for m in moved]),
    )
