"""What every handler takes from the app: the service's parts, and the calling platform.

``create_app`` puts a ``Services`` on ``app.state``; handlers are module-level functions that
ask for it (or for the platform its API key names) as a FastAPI dependency, so they can be
read, and tested, one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from grader.api import keys
from grader.api.quotas import count_request
from grader.config import Settings
from grader.service.dispatch import Dispatcher
from grader.service.exams import Exam
from grader.service.store import Platform, Store


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: Store
    exams: dict[str, Exam]
    dispatcher: Dispatcher


def services(request: Request) -> Services:
    return request.app.state.services


Svc = Annotated[Services, Depends(services)]

_bearer = HTTPBearer(auto_error=False, description="the platform's API key")


def platform(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)], svc: Svc
) -> Platform:
    """The platform whose API key the request carries, or 401; each request counts towards the
    key's rate limit (429 past it)."""
    unauthorized = HTTPException(
        401, "missing or invalid API key", headers={"WWW-Authenticate": "Bearer"}
    )
    if credentials is None:
        raise unauthorized
    key_id = keys.key_id_of(credentials.credentials)
    found = svc.store.accounts.platform_by_key_id(key_id) if key_id else None
    if not key_id or found is None or not keys.matches(credentials.credentials, found.key_hash):
        raise unauthorized
    count_request(svc.settings.limits, svc.store, key_id)
    return found


Caller = Annotated[Platform, Depends(platform)]
