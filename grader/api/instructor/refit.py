"""The scorer refit on the pages: propose a refit of an exam's scorer from its instructors'
scores, read its agreement before and after on held-out questions, apply it — the exam's
stored grades re-scored from what they recorded, the judge never called (``service.refits``).

Fitting and re-scoring run in a worker thread, the embedder made there too (importing
sentence-transformers takes seconds), so a refit never holds the event loop that answers the
platforms. Every form is POST with the session's CSRF token, and a refit is found only through
an exam of the signed-in instructor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from grader.api.instructor.context import Ctx, Pages, SignedIn, Who, checked_form
from grader.api.instructor.refit_advice import advise
from grader.errors import GraderError
from grader.service import refits
from grader.service.exams import Exam
from grader.service.store import AnswerCounts
from grader.service.store.scorers import ExamScorer

if TYPE_CHECKING:
    from grader.calibrate.metrics import Agreement
    from grader.calibrate.refit import BandCheck
    from grader.calibrate.summary import Comparison

router = APIRouter(prefix="/instructor/exams/{exam}/scorer", include_in_schema=False)

Count = Annotated[int | None, Query(ge=0, le=10**9)]
ScorerId = Annotated[int, Path(ge=1, le=2**31 - 1)]


@dataclass(frozen=True)
class Report:
    """A proposal's stored report, read back into the calibrate models the page shows."""

    answers: int
    questions: int
    folds: int
    neighbours: bool
    base_version: str | None
    comparison: Comparison  # before: the grades as they are; after: held out
    stage1: Agreement  # the refit's first stage alone, held out
    bands: list[BandCheck]
    notes: list[str]

    @classmethod
    def of(cls, report: dict) -> Report:
        from grader.calibrate.metrics import Agreement
        from grader.calibrate.refit import BandCheck
        from grader.calibrate.summary import Comparison

        return cls(
            answers=report["answers"],
            questions=report["questions"],
            folds=report["folds"],
            neighbours=report["neighbours"],
            base_version=report.get("base_version"),
            comparison=Comparison.model_validate(report["comparison"]),
            stage1=Agreement.model_validate(report["stage1"]),
            bands=[BandCheck.model_validate(b) for b in report["bands"]],
            notes=list(report["notes"]),
        )


@router.get("", response_class=HTMLResponse)
def scorer_page(request: Request, exam: str, who: Who, ctx: Ctx) -> HTMLResponse:
    return _scorer_page(request, ctx, who, ctx.exam_of(who.instructor, exam))


@router.post("/propose")
async def propose(request: Request, exam: str, who: Who, ctx: Ctx):
    await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    try:
        proposal = await run_in_threadpool(
            lambda: refits.propose(
                ctx.settings, ctx.store, found, who.instructor.name, ctx.embedder
            )
        )
    except GraderError as exc:
        return _scorer_page(request, ctx, who, found, error=getattr(exc, "message", str(exc)))
    return RedirectResponse(f"{_url(found)}/{proposal.id}?done=proposed", status_code=303)


@router.get("/{scorer_id}", response_class=HTMLResponse)
def proposal_page(
    request: Request,
    exam: str,
    scorer_id: ScorerId,
    who: Who,
    ctx: Ctx,
    rescored: Count = None,
    changed: Count = None,
    kept: Count = None,
) -> HTMLResponse:
    found = ctx.exam_of(who.instructor, exam)
    done = None
    if request.query_params.get("done") == "proposed":
        done = "Refit proposed. Compare before and after, then apply it, or leave it."
    elif request.query_params.get("done") == "applied" and None not in (rescored, changed, kept):
        done = (
            f"Refit applied: {rescored} grade(s) re-scored without the judge ({changed} "
            f"changed); {kept} kept as they were (not decided by the scorer)."
        )
    return _proposal_page(request, ctx, who, found, _proposal(ctx, found, scorer_id), done=done)


@router.post("/{scorer_id}/apply")
async def apply(request: Request, exam: str, scorer_id: ScorerId, who: Who, ctx: Ctx):
    await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    proposal = _proposal(ctx, found, scorer_id)
    try:
        applied = await run_in_threadpool(
            lambda: refits.apply(
                ctx.settings, ctx.store, found, proposal, who.instructor.name, ctx.embedder
            )
        )
    except GraderError as exc:
        error = getattr(exc, "message", str(exc))
        return _proposal_page(request, ctx, who, found, proposal, error=error)
    ctx.dispatcher.announce(applied.deliveries)
    url = (
        f"{_url(found)}/{proposal.id}?done=applied&rescored={applied.rescored}"
        f"&changed={applied.changed}&kept={applied.kept}"
    )
    return RedirectResponse(url, status_code=303)


def _proposal(ctx: Pages, exam: Exam, scorer_id: int) -> ExamScorer:
    found = ctx.store.scorers.get(exam.name, scorer_id)
    if found is None:
        raise HTTPException(404, f"no refit {scorer_id} of {exam.name}")
    return found


def _url(exam: Exam) -> str:
    return f"/instructor/exams/{quote(exam.name, safe='')}/scorer"


def _scorer_page(
    request: Request, ctx: Pages, who: SignedIn, exam: Exam, *, error: str | None = None
) -> HTMLResponse:
    """The exam's scorer, its refits, and the form that proposes one; 422 with a refusal."""
    from grader.calibrate.refit_rows import MIN_ANSWERS, MIN_QUESTIONS

    total = sum(ctx.store.reviews.counts(exam.name).values(), AnswerCounts())
    return ctx.render(
        request,
        "scorer.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        here=_url(exam),
        applied=ctx.store.scorers.applied(exam.name),
        proposals=ctx.store.scorers.proposals(exam.name),
        human=total.human,
        min_answers=MIN_ANSWERS,
        min_questions=MIN_QUESTIONS,
        error=error,
    )


def _proposal_page(
    request: Request,
    ctx: Pages,
    who: SignedIn,
    exam: Exam,
    proposal: ExamScorer,
    *,
    done: str | None = None,
    error: str | None = None,
) -> HTMLResponse:
    from grader.calibrate.metrics import METRIC_LABELS

    applied = ctx.store.scorers.applied(exam.name)
    report = Report.of(proposal.report)
    before, after = report.comparison.before, report.comparison.after
    advice = advise(before.overall, after.overall, METRIC_LABELS)
    return ctx.render(
        request,
        "refit.html.j2",
        status=422 if error else 200,
        instructor=who.instructor,
        csrf=who.session.csrf,
        exam=exam,
        here=_url(exam),
        proposal=proposal,
        report=report,
        per_question=list(zip(before.questions, after.questions, strict=True)),
        current=applied is not None and applied.id == proposal.id,
        metrics=METRIC_LABELS,
        advice=advice,
        done=done,
        error=error,
    )
