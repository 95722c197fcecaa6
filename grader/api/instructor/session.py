"""Instructor sessions: a signed cookie, and a CSRF token that lives inside it.

The cookie holds ``<payload>.<signature>``: the payload is the instructor id, their session
generation, a random CSRF token and the time it was issued (base64 JSON); the signature is
HMAC-SHA256 with the server secret (``GRADER_SECRET_KEY``, or one made once and kept in the
database). The cookie is HttpOnly and SameSite=Strict, and every state-changing form carries
the session's CSRF token. The generation is what makes a session end: logout and removal bump
the instructor's generation in the database, and a cookie of another generation is refused,
even a copy taken before.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

COOKIE = "grader_session"
MAX_AGE_S = 12 * 3600


@dataclass(frozen=True)
class Session:
    instructor_id: int
    csrf: str
    issued: int
    generation: int = 0  # the instructor's session generation when it was made


def new_session(instructor_id: int, generation: int) -> Session:
    return Session(instructor_id, secrets.token_urlsafe(24), int(time.time()), generation)


def encode(session: Session, secret: str) -> str:
    blob = json.dumps(
        {
            "i": session.instructor_id,
            "c": session.csrf,
            "t": session.issued,
            "g": session.generation,
        }
    )
    payload = base64.urlsafe_b64encode(blob.encode()).decode().rstrip("=")
    return f"{payload}.{_sign(payload, secret)}"


def decode(cookie: str | None, secret: str, now: float | None = None) -> Session | None:
    """The session in a cookie, or None when it is missing, forged or expired."""
    if not cookie or "." not in cookie:
        return None
    payload, signature = cookie.rsplit(".", 1)
    if not hmac.compare_digest(_sign(payload, secret), signature):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        session = Session(int(data["i"]), str(data["c"]), int(data["t"]), int(data["g"]))
    except (ValueError, KeyError, TypeError):
        return None
    if (now if now is not None else time.time()) - session.issued > MAX_AGE_S:
        return None
    return session


def csrf_ok(session: Session, token: str | None) -> bool:
    return token is not None and hmac.compare_digest(session.csrf, token)


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def _sign(payload: str, secret: str) -> str:
    return hmac.new(secret.encode(), payload.encode(), hashlib.sha256).hexdigest()
