"""The forms that change a question's rubric from its page: mark a sentence of a
graded answer as a known wrong claim of one criterion, accept one of the exam's own false
statements on the question's topic as one (``claims.exam``: the rubric editor lists them), and
switch the conclusion's gate off or on. Each saves a new rubric version the way promoting an anchor does: checked, kept in the
service's store (``service.rubric_versions``), written back to the bank's rubric file as a
small diff, and read by every grading process before its next batch, so new answers are
graded with it at once, here and on the workers. Stored grades keep the rubric they were
graded with until the question is regraded against it."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse

from grader.api.instructor.context import (
    Ctx,
    Pages,
    SignedIn,
    Who,
    checked_form,
    question_url,
    rubric_question,
)
from grader.api.instructor.forms import FormError, parse_wrong_claim
from grader.api.instructor.views import back_to, question_page
from grader.engine.reading.claims.exam import propose
from grader.engine.reading.rubrics import rubric_for, with_wrong_claim
from grader.errors import RubricError
from grader.models import Question, Rubric
from grader.service import rubric_versions
from grader.service.exams import Exam
from grader.text import match_key

router = APIRouter(prefix="/instructor", include_in_schema=False)


@router.post("/answers/{submission_id}/wrong-claim")
async def add_wrong_claim(request: Request, submission_id: int, who: Who, ctx: Ctx):
    """A new rubric version whose criterion lists the claim; the answer it came from keeps
    its grade (re-grading it would not be a new answer's grade)."""
    form = await checked_form(request, who)
    exam, row = ctx.answer_of(who.instructor, submission_id)
    s = row.submission
    question = exam.bank.get(s.question_id)
    try:
        question = _subjective(question, "claim")
        rubric = rubric_for(question, exam.rubrics)
        entry = parse_wrong_claim(form, rubric)
        new = with_wrong_claim(rubric, entry.criterion, entry.claim)
        _save(ctx, who, exam, question, new, "claim", f"wrong claim of {entry.criterion} added")
    except FormError as exc:
        return question_page(request, ctx, who, exam, s.question_id, error=exc, error_answer=s.id)
    return back_to(row, form, "claim")


@router.post("/exams/{exam}/questions/{question_id}/exam-claim")
async def accept_exam_claim(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    """A new rubric version whose ``criterion`` lists ``claim``, one of the false statements
    the exam's objective items make on this question's topic (a statement the key marks true,
    or one the rubric lists already, is refused on the form)."""
    form = await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    question = rubric_question(found, question_id)  # the editor's question: 404 otherwise
    try:
        rubric = rubric_for(question, found.rubrics)
        wanted = match_key(form.get("claim") or "")
        proposal = next((p for p in propose(found.bank, question, rubric)
                         if match_key(p.claim) == wanted), None)  # fmt: skip
        if proposal is None:
            raise FormError("claim", "not one of the exam's false statements on this topic "
                            "that the rubric lacks")  # fmt: skip
        entry = parse_wrong_claim({**form, "claim": proposal.claim, "points": ""}, rubric)
        new = with_wrong_claim(rubric, entry.criterion, entry.claim)
        note = f"the exam's claim ({proposal.source}) added to {entry.criterion}"
        _save(ctx, who, found, question, new, "claim", note)
    except FormError as exc:
        return question_page(request, ctx, who, found, question_id, error=exc)
    url = f"{question_url(exam, question_id)}/rubric?done=exam_claim#exam-claims"
    return RedirectResponse(url, status_code=303)


@router.post("/exams/{exam}/questions/{question_id}/gate")
async def switch_gate(request: Request, exam: str, question_id: str, who: Who, ctx: Ctx):
    """Set the gate of the rubric's conclusion to the form's ``gate`` (``on`` or ``off``): the
    state asked for, not a flip, so a form sent twice does not undo itself."""
    form = await checked_form(request, who)
    found = ctx.exam_of(who.instructor, exam)
    question = found.bank.get(question_id)
    if question is None:
        raise HTTPException(404, f"no question {question_id!r} in {exam}")
    try:
        rubric = rubric_for(_subjective(question, "gate"), found.rubrics)
        if rubric.conclusion is None:
            raise FormError("gate", "this rubric names no conclusion")
        wanted = form.get("gate")
        if wanted not in ("on", "off"):
            raise FormError("gate", "must be on or off")
        gate = wanted == "on"
        if rubric.conclusion.gate != gate:
            conclusion = rubric.conclusion.model_copy(update={"gate": gate})
            new = rubric.model_copy(update={"conclusion": conclusion})
            _save(ctx, who, found, question, new, "gate", f"conclusion's gate {wanted}")
    except FormError as exc:
        return question_page(request, ctx, who, found, question_id, error=exc)
    page = question_url(exam, question_id)
    url = f"{page}?done=gate_{wanted}#rubric"
    return RedirectResponse(url, status_code=303)


def _subjective(question: Question | None, field: str) -> Question:
    """``question``, refused on the form when it has no rubric (objective, or gone)."""
    if question is None or question.type.objective:
        raise FormError(field, "objective questions are graded exactly, without a rubric")
    return question


def _save(ctx: Pages, who: SignedIn, exam: Exam, question: Question, rubric: Rubric,
          field: str, note: str) -> None:  # fmt: skip
    """Check the new version, keep it in the service (the file written as a small diff), and
    grade with it from now on, here and in every grading process."""
    try:
        rubric_versions.save(exam, ctx.store, question, rubric, who.instructor.name, note)
    except RubricError as exc:
        raise FormError(field, exc.message) from exc
