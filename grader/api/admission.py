"""Fairness between platforms, decided on a request's head before any byte of its body is
read, so that one platform cannot crowd the others out of an API process's one event loop.

Each platform API key may have at most GRADER_MAX_IN_FLIGHT_PER_KEY requests being served at
once; and a key whose posts were refused (400, 413 or 422: malformed, too large, invalid) more
than GRADER_REFUSED_POSTS_PER_MINUTE times in a minute is refused for the rest of that minute.
Either is a 429 with ``Retry-After`` that closes the connection without reading the body:
reading a refused 8 MiB post up to its refusal costs the loop milliseconds, this costs it the
head. A client that honours ``Retry-After`` never meets the second one; one that ignores it
and posts again at once gets that 429 ``PENALTY_DELAY_S`` late (the request counting as in
flight meanwhile), so it cannot make the loop answer hundreds of them a second; a request past
the in-flight limit is answered at once, so a key holds at most that many connections waiting.

Keys are told apart by the SHA-256 of the key a request carries: no database lookup on the
loop, and a wrong key never shares a real key's counts (the route checks the key itself, as
before). The counts are in memory, per API process: what they protect is that process's loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from grader.api.keys import PREFIX
from grader.api.limits import refuse

WINDOW_S = 60.0
REFUSED = frozenset({400, 413, 422})  # the body was malformed, too large or invalid
IN_FLIGHT_RETRY_S = 1
PENALTY_DELAY_S = 1.0
MAX_KEYS = 10_000  # keys remembered at once; past it, those with nothing to remember go
_BEARER = b"bearer " + PREFIX.encode() + b"_"


@dataclass
class _Key:
    in_flight: int = 0
    window_start: float = 0.0
    refused: int = 0


class Admission:
    """ASGI middleware: the per-key limits above, on requests with a platform API key."""

    def __init__(self, app: ASGIApp, max_in_flight: int, refused_per_minute: int):
        self.app = app
        self.max_in_flight, self.refused_per_minute = max_in_flight, refused_per_minute
        self.keys: dict[bytes, _Key] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = _platform_key(scope) if scope["type"] == "http" else None
        if key is None:
            await self.app(scope, receive, send)
            return
        state = self.keys.get(key) or self._remember(key)
        if state.in_flight >= self.max_in_flight:
            await _too_many(send, IN_FLIGHT_RETRY_S, _in_flight_detail(state))
            return
        if self._penalized(state):
            state.in_flight += 1
            try:  # it ignored Retry-After: answered late, not hundreds of times a second
                await asyncio.sleep(PENALTY_DELAY_S)
            finally:
                state.in_flight -= 1
            wait_s = max(1, math.ceil(state.window_start + WINDOW_S - time.monotonic()))
            await _too_many(send, wait_s, _penalty_detail(state))
            return
        state.in_flight += 1
        status = 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            state.in_flight -= 1
            if status in REFUSED and scope["method"] in ("POST", "PUT", "PATCH"):
                self._count_refusal(state)
            if _idle(state, time.monotonic()):
                self.keys.pop(key, None)

    def _penalized(self, state: _Key) -> bool:
        """Whether the key is past its refused posts in its current minute."""
        now = time.monotonic()
        if now - state.window_start >= WINDOW_S:
            state.window_start, state.refused = now, 0
        return bool(self.refused_per_minute) and state.refused >= self.refused_per_minute

    def _count_refusal(self, state: _Key) -> None:
        now = time.monotonic()
        if now - state.window_start >= WINDOW_S:
            state.window_start, state.refused = now, 0
        state.refused += 1

    def _remember(self, key: bytes) -> _Key:
        """A new key's state; past MAX_KEYS, first forget the keys with nothing to remember
        (none in flight, no refusal in their window)."""
        if len(self.keys) >= MAX_KEYS:
            now = time.monotonic()
            for old in [k for k, s in self.keys.items() if _idle(s, now)]:
                del self.keys[old]
        state = self.keys[key] = _Key(window_start=time.monotonic())
        return state


async def _too_many(send: Send, wait_s: int, detail: str) -> None:
    await refuse(send, 429, detail, [(b"retry-after", str(wait_s).encode())])


def _in_flight_detail(state: _Key) -> str:
    return (
        f"{state.in_flight} requests with this API key are being served "
        "(GRADER_MAX_IN_FLIGHT_PER_KEY): retry when one has been answered"
    )


def _penalty_detail(state: _Key) -> str:
    return (
        f"{state.refused} posts with this API key were refused as malformed, too large or "
        "invalid in the last minute (GRADER_REFUSED_POSTS_PER_MINUTE): fix the requests, and "
        "retry after Retry-After seconds"
    )


def _idle(state: _Key, now: float) -> bool:
    return state.in_flight == 0 and (state.refused == 0 or now - state.window_start >= WINDOW_S)


def _platform_key(scope: Scope) -> bytes | None:
    """The SHA-256 of the platform API key in the request's ``Authorization`` header, or None
    when it carries none (the instructor pages, ``/healthz``, a missing key)."""
    for name, value in scope["headers"]:
        if name == b"authorization" and value[: len(_BEARER)].lower() == _BEARER:
            return hashlib.sha256(value[len(b"bearer ") :]).digest()
    return None
