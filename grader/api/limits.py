"""Bounded requests: one body limit for every route, enforced before the body is read, and
forms read with limits on their fields.

``BodyLimit`` is plain ASGI middleware, outside every route, so no handler, form parser or
dependency can read more than the limit: a declared ``Content-Length`` over it is answered
413 without reading a byte, and a streamed body is cut off at the limit. Forms (the
instructor pages) have a smaller limit than JSON: what instructors type is short.
"""

from __future__ import annotations

import json

from fastapi import HTTPException, Request
from starlette.datastructures import UploadFile
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FORM_TYPES = (b"multipart/form-data", b"application/x-www-form-urlencoded")
MAX_FORM_FIELDS = 64  # a rubric has at most a few criteria; every form fits easily
MAX_FIELD_CHARS = 8192


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a body passes the limit: an HTTPException, so whatever is
    reading the body (FastAPI, a form parser, a handler) lets it through as a 413."""

    def __init__(self, limit: int):
        super().__init__(413, f"request body over {limit} bytes")


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int, form_limit: int):
        self.app, self.limit, self.form_limit = app, limit, min(limit, form_limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        content_type = headers.get(b"content-type", b"").lower()
        limit = self.form_limit if content_type.startswith(FORM_TYPES) else self.limit
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            status = 413 if declared.isdigit() else 400
            detail = f"request body over {limit} bytes" if status == 413 else "bad Content-Length"
            await _reply(send, status, detail)
            return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except BodyTooLarge as exc:  # escaped every handler: answer it here
            if started:
                raise
            await _reply(send, 413, exc.detail)


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def read_form(request: Request) -> dict[str, str]:
    """A form's text fields, with no file parts, at most ``MAX_FORM_FIELDS`` fields of at most
    ``MAX_FIELD_CHARS`` characters each (400 otherwise); the body is already bounded by
    ``BodyLimit``."""
    # starlette enforces these limits on multipart bodies; URL-encoded ones are checked below
    form = await request.form(
        max_files=0, max_fields=MAX_FORM_FIELDS, max_part_size=4 * MAX_FIELD_CHARS
    )
    items = form.multi_items()
    if len(items) > MAX_FORM_FIELDS:
        raise HTTPException(400, f"more than {MAX_FORM_FIELDS} form fields")
    fields: dict[str, str] = {}
    for name, value in items:
        if isinstance(value, UploadFile):
            raise HTTPException(400, "file parts are not accepted here")
        if len(value) > MAX_FIELD_CHARS:
            raise HTTPException(400, f"form field {name[:50]!r} over {MAX_FIELD_CHARS} characters")
        fields[name] = value  # a repeated name: the last one, as starlette reads it
    return fields
