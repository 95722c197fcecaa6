"""What the instructor pages' handlers share: the app's parts, templates, and who is signed in.

``install`` puts a ``Pages`` on ``app.state``; each handler asks for it (``Ctx``) and for the
signed-in instructor (``Who``) as FastAPI dependencies.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from grader.api.instructor.session import COOKIE, Session, csrf_ok, decode
from grader.api.limits import read_form
from grader.config import Settings
from grader.models import Question
from grader.service.dispatch import Dispatcher
from grader.service.exams import Exam
from grader.service.rubric_versions import refresh
from grader.service.store import AnswerRow, Instructor, Store

if TYPE_CHECKING:
    from grader.embed import Embedder

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "instructor"


@dataclass(frozen=True)
class Pages:
    settings: Settings
    store: Store
    exams: dict[str, Exam]
    secret: str  # signs the session cookies
    templates: Environment
    dispatcher: Dispatcher  # sends the webhooks of the grade versions the pages make

    @classmethod
    def build(
        cls,
        settings: Settings,
        store: Store,
        exams: dict[str, Exam],
        secret: str,
        dispatcher: Dispatcher,
    ) -> Pages:
        # autoescape: answers are untrusted text
        env = Environment(
            loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined
        )
        return cls(settings, store, exams, secret, env, dispatcher)

    @functools.cached_property
    def embedder(self) -> Embedder | None:
        """The answer embedder a refit's graded neighbours need, made on the first refit: its
        disk cache holds the answers the workers encoded, so the model loads only on a miss."""
        from grader.embed import make_embedder

        return make_embedder(self.settings)

    def render(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        html = self.templates.get_template(name).render(request=request, **context)
        return HTMLResponse(html, status_code=status)

    def exam_of(self, instructor: Instructor, name: str) -> Exam:
        """The exam, its rubrics as the store has them now (another API process may have
        saved one)."""
        if name not in instructor.exams or name not in self.exams:
            raise HTTPException(404, f"no exam {name!r} for you")
        refresh(self.exams[name], self.store)
        return self.exams[name]

    def answer_of(self, instructor: Instructor, submission_id: int) -> tuple[Exam, AnswerRow]:
        row = self.store.reviews.answer(submission_id)
        if row is None or row.submission.exam not in instructor.exams:
            raise HTTPException(404, f"no answer {submission_id} for you")
        return self.exam_of(instructor, row.submission.exam), row


def pages(request: Request) -> Pages:
    return request.app.state.instructor_pages


Ctx = Annotated[Pages, Depends(pages)]


class LoginRequired(Exception):
    """Not logged in: the page sends the browser to the login form."""


@dataclass(frozen=True)
class SignedIn:
    instructor: Instructor
    session: Session


def signed_in(request: Request, ctx: Ctx) -> SignedIn:
    session = decode(request.cookies.get(COOKIE), ctx.secret)
    found = ctx.store.accounts.instructor(instructor_id=session.instructor_id) if session else None
    # removed (None), logged out or removed since (another generation): the cookie is dead
    if session is None or found is None or found.session_generation != session.generation:
        raise LoginRequired()
    return SignedIn(found, session)


Who = Annotated[SignedIn, Depends(signed_in)]


async def checked_form(request: Request, who: SignedIn) -> dict[str, str]:
    """The form's fields, once its CSRF token matches the session's (else 403)."""
    form = await read_form(request)
    if not csrf_ok(who.session, form.get("csrf")):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and retry")
    return form


def question_url(exam: str, question_id: str) -> str:
    """A question's page, which every question's form returns to."""
    return f"/instructor/exams/{quote(exam, safe='')}/questions/{quote(question_id, safe='')}"


def rubric_question(exam: Exam, question_id: str) -> Question:
    """The exam's question that has a rubric (not an objective one); 404 otherwise."""
    question = exam.bank.get(question_id)
    if question is None or question.type.objective:
        raise HTTPException(404, f"no question with a rubric {question_id!r} in {exam.name}")
    return question
