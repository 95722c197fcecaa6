"""The service's HTTP app: the platforms' ``/v1`` intake, health and metrics, and the
instructor pages, over one store, the exams served and a dispatcher; OpenAPI at /docs, its
assets served from here (``docs_pages``).

While the database is away every route answers 503 with ``Retry-After`` (and a one-line
warning in the log), not a 500 with a traceback: a platform's client retries a 503.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from grader.api.admission import Admission
from grader.api.deps import Services
from grader.api.docs_pages import install_docs
from grader.api.instructor import install as install_instructor_pages
from grader.api.intake import intake_router
from grader.api.limits import BodyLimit
from grader.api.metrics import router as health_router
from grader.api.page_headers import PageHeaders
from grader.config import Settings
from grader.service.dispatch import Dispatcher
from grader.service.exams import Exam
from grader.service.outages import OUTAGE_ERRORS
from grader.service.rubric_versions import import_files
from grader.service.store import Store
from grader.version import __version__

log = logging.getLogger(__name__)
RETRY_AFTER_S = 5


def create_app(
    settings: Settings,
    store: Store,
    exams: dict[str, Exam],
    dispatcher: Dispatcher,
    on_shutdown: Callable[[], None] | None = None,
) -> FastAPI:
    """``on_shutdown`` runs (on a worker thread) when the server stops: ``grader serve`` stops
    its grading there, before uvicorn ends the process with the signal it was stopped by."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        if on_shutdown is not None:
            await run_in_threadpool(on_shutdown)

    app = FastAPI(
        title="grader",
        version=__version__,
        description="Grade exam answers: post submissions, get grades back by poll or webhook.",
        docs_url=None,  # ``install_docs``: the same pages with their assets served from here
        redoc_url=None,
        lifespan=lifespan,
    )
    install_docs(app)
    try:
        import_files(exams, store)  # a rubric file edited by hand is the newest version
    except OUTAGE_ERRORS as exc:  # the database is away: the pages read the store when back
        log.warning(
            "rubric files not compared with the database: it is away (%s)", type(exc).__name__
        )
    app.state.services = Services(settings, store, exams, dispatcher)
    app.include_router(intake_router(settings.limits.bulk_limit))
    app.include_router(health_router)
    install_instructor_pages(app)
    app.add_middleware(PageHeaders)
    app.add_middleware(
        Admission,
        max_in_flight=settings.limits.max_in_flight_per_key,
        refused_per_minute=settings.limits.refused_posts_per_minute,
    )
    app.add_middleware(
        BodyLimit, limit=settings.limits.max_body_bytes, form_limit=settings.limits.max_form_bytes
    )
    for error in OUTAGE_ERRORS:
        app.add_exception_handler(error, database_away)
    return app


async def database_away(request: Request, exc: Exception) -> JSONResponse:
    """503 + Retry-After for an error that means the database cannot be reached now."""
    log.warning(
        "%s %s: the database is unavailable (%s: %s)",
        request.method,
        request.url.path,
        type(exc).__name__,
        str(exc).splitlines()[0] if str(exc) else "",
    )
    return JSONResponse(
        {"detail": "the database is unavailable; retry later"},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )
