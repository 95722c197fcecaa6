"""The instructor pages: answers with the judge's evidence, human scores, live agreement,
anchors, the review queue and overrides. Server-rendered, plain forms, POST-redirect-GET.

Instructors log in with their own key (``grader instructor add``) and see only their exams.
Answers are addressed by the store's own submission id: platform ids may repeat across
platforms. Every template autoescapes: answers are untrusted text.

- ``context``: what handlers share (``Pages`` on the app), the signed-in instructor, CSRF;
- ``session``: the signed cookie; ``auth``: log in and out;
- ``pages``: what instructors read; ``actions``: the forms they post; ``forms``: their fields;
- ``rubric_edits``: a known wrong claim from an answer or from the exam's own items, the
  conclusion's gate on or off;
- ``rubric_editor``, ``rubric_form``: the whole rubric edited, checked, previewed, saved;
- ``grading``: a question's answers one at a time, scored and moved through by keyboard;
- ``group_grading``, ``answer_groups``: a question's answer groups, each scored at once;
- ``refit``: the exam's scorer refit, proposed, compared before/after, applied;
- ``first``: a question's answers to grade first, and its grades re-scored once they are in;
- ``regrade_pages``: a question's answers regraded against its rubric as it stands, what moved;
- ``criteria_agreement``: agreement with the instructors per criterion, with intervals;
- ``views``: points, summaries and the question page both use.
"""

from __future__ import annotations

import functools
import logging

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from grader.api.instructor import (
    actions,
    auth,
    first,
    grading,
    group_grading,
    pages,
    refit,
    regrade_pages,
    rubric_editor,
    rubric_edits,
)
from grader.api.instructor.context import LoginRequired, Pages
from grader.api.instructor.session import new_secret

log = logging.getLogger(__name__)


@functools.cache  # once per process, however many apps it builds
def warn_key_in_database() -> None:
    log.warning(
        "GRADER_SECRET_KEY is not set: instructor sessions are signed with a key kept in the "
        "database, so whoever reads the database (a backup, a dump) can forge them; set "
        "GRADER_SECRET_KEY (at least 32 bytes) in the environment"
    )


def install(app: FastAPI) -> None:
    """Mount the pages on the service's app (its ``state.services``); a page asked for without
    a session logs in."""
    services = app.state.services
    settings, store = services.settings, services.store
    if settings.pages.secret_key:
        secret = settings.pages.secret_key.get_secret_value()
    else:
        warn_key_in_database()
        secret = store.accounts.secret("session_key", new_secret)
    app.state.instructor_pages = Pages.build(
        settings, store, services.exams, secret, services.dispatcher
    )
    # each under /instructor, none in the OpenAPI docs
    modules = (auth, pages, actions, refit, rubric_edits, rubric_editor, first, regrade_pages,
               grading, group_grading)  # fmt: skip
    for module in modules:
        app.include_router(module.router)

    @app.exception_handler(LoginRequired)
    async def _to_login(request: Request, exc: LoginRequired):
        if request.method == "GET":
            return RedirectResponse("/instructor/login", status_code=303)
        return HTMLResponse("not logged in: open /instructor/login", status_code=401)
