"""The instructor pages: answers with the judge's evidence, human scores, live agreement,
anchors, the review queue and overrides. Server-rendered, plain forms, POST-redirect-GET.

Instructors log in with their own key (``grader instructor add``) and see only their exams.
Answers are addressed by the store's own submission id: platform ids may repeat across
platforms. Every template autoescapes: answers are untrusted text.
"""

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from grader.api import keys
from grader.api.instructor_forms import (
    FormError,
    criterion_field,
    parse_human_score,
    parse_override,
)
from grader.api.session import COOKIE, MAX_AGE_S, Session, csrf_ok, decode, encode, new_session
from grader.api.session import new_secret as new_session_secret
from grader.config import Settings
from grader.engine.rubrics import rubric_for
from grader.errors import GraderError
from grader.models import Criterion, GradeStatus, Question
from grader.service.exams import Exam
from grader.service.store import AnswerRow, Instructor, Store

if TYPE_CHECKING:
    from grader.calibrate import Agreement

TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "instructor"
DONE = {
    "score": "Human score saved.",
    "override": "Grade overridden.",
    "anchor": "Answer promoted to an anchor.",
    "accept": "Judge's grade accepted.",
}


@dataclass(frozen=True)
class Scale:
    max_score: float
    criteria: list[Criterion]


@dataclass(frozen=True)
class QuestionSummary:
    question: Question
    answers: int
    graded: int
    human: int
    open_reviews: int
    agreement: "Agreement | None"


class _Login(Exception):
    """Not logged in: the page sends the browser to the login form."""


def instructor_router(settings: Settings, store: Store, exams: dict[str, Exam]) -> APIRouter:
    router = APIRouter(prefix="/instructor", include_in_schema=False)
    secret = (
        settings.secret_key.get_secret_value()
        if settings.secret_key
        else store.accounts.secret("session_key", new_session_secret)
    )
    env = Environment(
        loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined
    )

    def render(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        html = env.get_template(name).render(request=request, **context)
        return HTMLResponse(html, status_code=status)

    def signed_in(request: Request) -> tuple[Instructor, Session]:
        session = decode(request.cookies.get(COOKIE), secret)
        found = store.accounts.instructor(instructor_id=session.instructor_id) if session else None
        if session is None or found is None:
            raise _Login()
        return found, session

    Who = Annotated[tuple[Instructor, Session], Depends(signed_in)]

    async def checked_form(request: Request, session: Session) -> dict[str, str]:
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        if not csrf_ok(session, form.get("csrf")):
            raise HTTPException(403, "missing or wrong CSRF token: reload the page and retry")
        return form

    def exam_of(instructor: Instructor, name: str) -> Exam:
        if name not in instructor.exams or name not in exams:
            raise HTTPException(404, f"no exam {name!r} for you")
        return exams[name]

    def answer_of(instructor: Instructor, submission_id: int) -> tuple[Exam, AnswerRow]:
        row = store.reviews.answer(submission_id)
        if row is None or row.submission.exam not in instructor.exams:
            raise HTTPException(404, f"no answer {submission_id} for you")
        return exam_of(instructor, row.submission.exam), row

    def scale(exam: Exam, question: Question, row: AnswerRow | None = None) -> Scale:
        if not question.type.objective:
            rubric = rubric_for(question, exam.rubrics)
            return Scale(rubric.points, rubric.criteria)
        grade = row.submission.grade if row else None
        if grade is not None and grade.max_score is not None:
            return Scale(grade.max_score, [])
        return Scale(question.points or settings.default_objective_points, [])

    def question_page(
        request: Request,
        who: tuple[Instructor, Session],
        exam: Exam,
        question_id: str,
        *,
        error: FormError | str | None = None,
        error_answer: int | None = None,
    ) -> HTMLResponse:
        question = exam.bank.get(question_id)
        if question is None:
            raise HTTPException(404, f"no question {question_id!r} in {exam.name}")
        rows = store.reviews.answers(exam.name, question_id)
        rubric = None if question.type.objective else rubric_for(question, exam.rubrics)
        points = scale(exam, question, rows[0] if rows else None)
        return render(
            request,
            "question.html.j2",
            status=422 if error else 200,
            instructor=who[0],
            csrf=who[1].csrf,
            exam=exam,
            question=question,
            rubric=rubric,
            anchors={a.id for a in rubric.anchors} if rubric else set(),
            scale=points,
            rows=rows,
            summary=_summary(question, rows, points),
            criterion_field=criterion_field,
            error=str(error) if error else None,
            error_answer=error_answer,
            done=DONE.get(request.query_params.get("done", "")),
        )

    def back_to(row: AnswerRow, form: dict[str, str], done: str) -> RedirectResponse:
        s = row.submission
        if form.get("back") == "review":
            url = f"/instructor/exams/{s.exam}/review?done={done}"
        else:
            url = f"/instructor/exams/{s.exam}/questions/{s.question_id}?done={done}#a{s.id}"
        return RedirectResponse(url, status_code=303)

    @router.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> HTMLResponse:
        return render(request, "login.html.j2", error=None)

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request):
        key = str((await request.form()).get("key") or "").strip()
        key_id = keys.key_id_of(key, keys.INSTRUCTOR_PREFIX)
        found = store.accounts.instructor(key_id=key_id) if key_id else None
        if found is None or not keys.matches(key, found.key_hash):
            return render(request, "login.html.j2", status=401, error="key: not a valid key")
        response = RedirectResponse("/instructor", status_code=303)
        response.set_cookie(
            COOKIE,
            encode(new_session(found.id), secret),
            max_age=MAX_AGE_S,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/instructor",
        )
        return response

    @router.post("/logout")
    async def logout(request: Request, who: Who) -> RedirectResponse:
        await checked_form(request, who[1])
        response = RedirectResponse("/instructor/login", status_code=303)
        response.delete_cookie(COOKIE, path="/instructor")
        return response

    @router.get("", response_class=HTMLResponse)
    def exam_list(request: Request, who: Who) -> HTMLResponse:
        listed = []
        for name in sorted(who[0].exams & exams.keys()):
            rows = store.reviews.answers(name)
            listed.append(
                {
                    "name": name,
                    "questions": len(exams[name].bank.questions),
                    "answers": len(rows),
                    "human": sum(r.human is not None for r in rows),
                    "open_reviews": sum(r.open_review is not None for r in rows),
                }
            )
        return render(request, "exams.html.j2", instructor=who[0], csrf=who[1].csrf, exams=listed)

    @router.get("/exams/{exam}", response_class=HTMLResponse)
    def question_list(request: Request, exam: str, who: Who) -> HTMLResponse:
        found = exam_of(who[0], exam)
        by_question: dict[str, list[AnswerRow]] = defaultdict(list)
        for row in store.reviews.answers(exam):
            by_question[row.submission.question_id].append(row)
        summaries = [
            _summary(q, by_question[q.id], scale(found, q, by_question[q.id][0]))
            for q in found.bank.questions
            if by_question.get(q.id)
        ]
        return render(
            request,
            "questions.html.j2",
            instructor=who[0],
            csrf=who[1].csrf,
            exam=found,
            summaries=summaries,
            unanswered=len(found.bank.questions) - len(summaries),
        )

    @router.get("/exams/{exam}/questions/{question_id}", response_class=HTMLResponse)
    def answers(request: Request, exam: str, question_id: str, who: Who) -> HTMLResponse:
        return question_page(request, who, exam_of(who[0], exam), question_id)

    @router.get("/exams/{exam}/review", response_class=HTMLResponse)
    def review_queue(request: Request, exam: str, who: Who) -> HTMLResponse:
        found = exam_of(who[0], exam)
        rows = [r for r in store.reviews.answers(exam) if r.open_review is not None]
        return render(
            request,
            "review.html.j2",
            instructor=who[0],
            csrf=who[1].csrf,
            exam=found,
            rows=rows,
            scales={
                r.submission.id: scale(found, found.bank.get(r.submission.question_id), r)
                for r in rows
            },
            done=DONE.get(request.query_params.get("done", "")),
        )

    @router.post("/answers/{submission_id}/score")
    async def enter_score(request: Request, submission_id: int, who: Who):
        form = await checked_form(request, who[1])
        exam, row = answer_of(who[0], submission_id)
        question = exam.bank.get(row.submission.question_id)
        s = scale(exam, question, row)
        try:
            entry = parse_human_score(form, s.max_score, s.criteria)
        except FormError as exc:
            return question_page(
                request, who, exam, question.id, error=exc, error_answer=row.submission.id
            )
        store.reviews.set_human_score(row.submission.id, who[0].id, entry.score, entry.criteria)
        return back_to(row, form, "score")

    @router.post("/answers/{submission_id}/override")
    async def override(request: Request, submission_id: int, who: Who):
        form = await checked_form(request, who[1])
        exam, row = answer_of(who[0], submission_id)
        question = exam.bank.get(row.submission.question_id)
        try:
            entry = parse_override(form, scale(exam, question, row).max_score)
        except FormError as exc:
            return question_page(
                request, who, exam, question.id, error=exc, error_answer=row.submission.id
            )
        store.reviews.add_override(row.submission.id, entry.score, entry.reason, who[0].name)
        return back_to(row, form, "override")

    @router.post("/answers/{submission_id}/accept")
    async def accept(request: Request, submission_id: int, who: Who) -> RedirectResponse:
        form = await checked_form(request, who[1])
        _, row = answer_of(who[0], submission_id)
        store.reviews.accept_judge(row.submission.id, who[0].name)
        return back_to(row, form, "accept")

    @router.post("/answers/{submission_id}/promote")
    async def promote(request: Request, submission_id: int, who: Who):
        form = await checked_form(request, who[1])
        exam, row = answer_of(who[0], submission_id)
        s = row.submission
        question = exam.bank.get(s.question_id)
        from grader.calibrate import HumanScore, plan_promotions, save_promotions

        try:
            if question.type.objective:
                raise FormError("promote", "objective questions have no rubric anchors")
            if row.human is None:
                raise FormError("promote", "enter a human score for this answer first")
            human = HumanScore(
                submission_id=s.external_id,
                question_id=s.question_id,
                score=row.human.score,
                criteria=row.human.criteria or {},
                answer=s.answer,
                line=0,
            )
            promotions = plan_promotions(
                exam.bank, exam.rubrics, [human], {}, note=f"promoted by {who[0].name}"
            )
        except GraderError as exc:
            error = FormError("promote", getattr(exc, "message", str(exc)))
            return question_page(request, who, exam, s.question_id, error=error, error_answer=s.id)
        except FormError as exc:
            return question_page(request, who, exam, s.question_id, error=exc, error_answer=s.id)
        save_promotions(promotions, exam.path, exam.rubrics)  # graders here use it from now on
        return back_to(row, form, "anchor")

    return router


def install(app: FastAPI, settings: Settings, store: Store, exams: dict[str, Exam]) -> None:
    """Mount the pages on the service's app; a page asked for without a session logs in."""
    app.include_router(instructor_router(settings, store, exams))

    @app.exception_handler(_Login)
    async def _to_login(request: Request, exc: _Login):
        if request.method == "GET":
            return RedirectResponse("/instructor/login", status_code=303)
        return HTMLResponse("not logged in: open /instructor/login", status_code=401)


def _summary(question: Question, rows: list[AnswerRow], scale: Scale) -> QuestionSummary:
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
            agreement([h for h, _ in pairs], [j for _, j in pairs], scale.max_score, bootstrap=0)
            if pairs
            else None
        ),
    )
