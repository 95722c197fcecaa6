"""Logging in with an instructor key, and out: a signed session cookie (``session``).

Logging out ends every session of the instructor (their session generation moves on), so a
copy of the cookie taken before is refused too."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from grader.api import keys
from grader.api.instructor.context import Ctx, Who, checked_form
from grader.api.instructor.session import COOKIE, MAX_AGE_S, encode, new_session
from grader.api.limits import read_form
from grader.api.proxy import same_origin, scheme
from grader.api.quotas import login_failed, login_wait_s

router = APIRouter(prefix="/instructor", include_in_schema=False)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, ctx: Ctx) -> HTMLResponse:
    return ctx.render(request, "login.html.j2", error=None)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, ctx: Ctx):
    """Sign in with an instructor key; after GRADER_LOGIN_FAILURES_PER_MINUTE failed tries
    from one client address, 429 (with Retry-After) until the minute is over.

    A login posted from another site's page is refused (403): its ``Origin`` is not ours. A
    request without ``Origin`` passes: browsers leave it out of some same-origin requests
    (and tools other than browsers never send it), and a cross-site browser POST carries it."""
    origin = request.headers.get("origin")
    if origin is not None and not same_origin(origin, request, ctx.settings.pages.trust_proxy):
        return HTMLResponse("login refused: posted from another site (Origin)", status_code=403)
    wait_s = login_wait_s(ctx.settings, ctx.store, request)
    if wait_s is not None:
        error = f"too many failed logins from your address: retry in {wait_s} s"
        page = ctx.render(request, "login.html.j2", status=429, error=error)
        page.headers["Retry-After"] = str(wait_s)
        return page
    key = (await read_form(request)).get("key", "").strip()
    key_id = keys.key_id_of(key, keys.INSTRUCTOR_PREFIX)
    found = ctx.store.accounts.instructor(key_id=key_id) if key_id else None
    if found is None or not keys.matches(key, found.key_hash):
        login_failed(ctx.settings, ctx.store, request)
        return ctx.render(request, "login.html.j2", status=401, error="key: not a valid key")
    response = RedirectResponse("/instructor", status_code=303)
    response.set_cookie(
        COOKIE,
        encode(new_session(found.id, found.session_generation), ctx.secret),
        max_age=MAX_AGE_S,
        httponly=True,
        samesite="strict",
        # Secure when the browser came over https (X-Forwarded-Proto with GRADER_TRUST_PROXY)
        secure=scheme(request, ctx.settings.pages.trust_proxy) == "https",
        path="/instructor",
    )
    return response


@router.post("/logout")
async def logout(request: Request, who: Who, ctx: Ctx) -> RedirectResponse:
    await checked_form(request, who)
    ctx.store.accounts.end_sessions(who.instructor.id)
    response = RedirectResponse("/instructor/login", status_code=303)
    response.delete_cookie(COOKIE, path="/instructor")
    return response
