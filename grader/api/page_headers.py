"""The instructor pages' security headers, on every response under ``/instructor`` (pages,
redirects, errors alike): a Content-Security-Policy, no framing, no caching, no referrer to
other sites. A pure ASGI middleware, so streamed and error responses get them too.

The pages run no scripts at all (``script-src 'none'``); their CSS is inline (one ``<style>``
block and a few ``style`` attributes), hence ``style-src 'unsafe-inline'``, which cannot run
code. Forms post only to this server, and no other site may frame the pages (clickjacking).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFIX = "/instructor"
CSP = (
    "default-src 'self'; script-src 'none'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"referrer-policy", b"same-origin"),
    (b"x-content-type-options", b"nosniff"),
]
_NAMES = {name for name, _ in HEADERS}


def is_page(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


class PageHeaders:
    """Add HEADERS to every HTTP response under /instructor, replacing any of the same name."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_page(scope["path"]):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": kept + HEADERS}
            await send(message)

        await self.app(scope, receive, send_with_headers)
