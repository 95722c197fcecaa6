"""The service's HTTP app: the platforms' ``/v1`` intake, health and metrics, and the
instructor pages, over one store, the exams served and a dispatcher; OpenAPI at /docs."""

from __future__ import annotations

from fastapi import FastAPI

from grader.api.deps import Services
from grader.api.instructor import install as install_instructor_pages
from grader.api.intake import intake_router
from grader.api.limits import BodyLimit
from grader.api.metrics import router as health_router
from grader.api.page_headers import PageHeaders
from grader.config import Settings
from grader.service.dispatch import Dispatcher
from grader.service.exams import Exam
from grader.service.store import Store
from grader.version import __version__


def create_app(
    settings: Settings, store: Store, exams: dict[str, Exam], dispatcher: Dispatcher
) -> FastAPI:
    app = FastAPI(
        title="grader",
        version=__version__,
        description="Grade exam answers: post submissions, get grades back by poll or webhook.",
    )
    app.state.services = Services(settings, store, exams, dispatcher)
    app.include_router(intake_router(settings.bulk_limit))
    app.include_router(health_router)
    install_instructor_pages(app)
    app.add_middleware(PageHeaders)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, form_limit=settings.max_form_bytes)
    return app
