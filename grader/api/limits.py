"""Bounded requests: one body limit for every route, enforced before the body is read, and
forms read with limits on their fields.

``BodyLimit`` is plain ASGI middleware, outside every route, so no handler, form parser or
dependency can read more than the limit: a declared ``Content-Length`` over it is answered
413 without reading a byte, and a streamed body is cut off at the limit. Forms (the
instructor pages) have a smaller limit than JSON: what instructors type is short.

A response sent before its request's body has all been read (a 401, a 413 part-way, a
refusal before the body) closes the connection: kept alive, the server would read and
discard the rest of the body (uvicorn does), so a refused 8 MiB post would cost the event
loop all 8 MiB anyway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fastapi import HTTPException, Request
from starlette.datastructures import UploadFile
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FORM_TYPES = (b"multipart/form-data", b"application/x-www-form-urlencoded")
MAX_FORM_FIELDS = 128  # the rubric editor: 7 fields for each of up to 12 criteria, and more
MAX_FIELD_CHARS = 8192
CLOSE = (b"connection", b"close")


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
            await refuse(send, status, detail)
            return
        received = 0
        started = False
        unread = _has_body(headers)  # until its last chunk has been received

        async def limited() -> Message:
            nonlocal received, unread
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
                unread = unread and message.get("more_body", False)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if unread and CLOSE not in message.get("headers", []):
                    message = {**message, "headers": [*message.get("headers", []), CLOSE]}
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except BodyTooLarge as exc:  # escaped every handler: answer it here
            if started:
                raise
            await refuse(send, 413, exc.detail)


def _has_body(headers: dict[bytes, bytes]) -> bool:
    """Whether the request's head announces a body (HTTP/1.1: a length or chunks); a
    ``Content-Length`` here is digits (``BodyLimit`` refused any other)."""
    declared = headers.get(b"content-length")
    return b"transfer-encoding" in headers or (declared is not None and int(declared) > 0)


async def refuse(
    send: Send, status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer ``{"detail": detail}`` with ``status`` and close the connection: whatever the
    client is still sending is never read."""
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                CLOSE,
                *headers,
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
