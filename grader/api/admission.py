"""Fairness between platforms, decided on a request's head before any byte of its body is
read, so that one platform cannot crowd the others out of an API process's one event loop.

Each platform API key may have at most GRADER_MAX_IN_FLIGHT_PER_KEY requests being served at
once; and GRADER_REFUSED_POSTS_PER_MINUTE posts refused (400, 413 or 422: malformed, too large,
invalid) a minute, at most ``BURST`` of them at once (a token bucket: the allowance refills
evenly, so a flood of refused posts is cut off after a few, not after a minute's worth at the
start of each minute); past it, the key waits until the allowance has refilled by one post.
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

BURST = 10  # refused posts one key may have at once (fewer when the minute allows fewer)
REFUSED = frozenset({400, 413, 422})  # the body was malformed, too large or invalid
IN_FLIGHT_RETRY_S = 1
PENALTY_DELAY_S = 1.0
MAX_KEYS = 10_000  # keys remembered at once; past it, those with nothing to remember go
_BEARER = b"bearer " + PREFIX.encode() + b"_"


@dataclass
class _Key:
    in_flight: int = 0
    allowance: float = 0.0  # refused posts the key may still have now
    updated: float = 0.0  # when ``allowance`` was last refilled


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
            await _too_many(send, self._refill_s(state), _penalty_detail(self.refused_per_minute))
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
            if self._idle(state):
                self.keys.pop(key, None)

    def _burst(self) -> int:
        return min(BURST, self.refused_per_minute)

    def _refill(self, state: _Key) -> None:
        now = time.monotonic()
        earned = (now - state.updated) * self.refused_per_minute / 60
        state.allowance, state.updated = min(self._burst(), state.allowance + earned), now

    def _penalized(self, state: _Key) -> bool:
        """Whether the key has no refused post left in its allowance."""
        if not self.refused_per_minute:
            return False
        self._refill(state)
        return state.allowance < 1

    def _refill_s(self, state: _Key) -> int:
        """Seconds until the key's allowance holds one refused post again."""
        self._refill(state)
        return max(1, math.ceil((1 - state.allowance) * 60 / self.refused_per_minute))

    def _count_refusal(self, state: _Key) -> None:
        if self.refused_per_minute:
            self._refill(state)
            state.allowance -= 1

    def _idle(self, state: _Key) -> bool:
        """Nothing to remember: none in flight, the allowance full again."""
        if state.in_flight:
            return False
        if self.refused_per_minute:
            self._refill(state)
        return not self.refused_per_minute or state.allowance >= self._burst()

    def _remember(self, key: bytes) -> _Key:
        """A new key's state; past MAX_KEYS, first forget the keys with nothing to remember
        (none in flight, their allowance full)."""
        if len(self.keys) >= MAX_KEYS:
            for old in [k for k, s in self.keys.items() if self._idle(s)]:
                del self.keys[old]
        state = self.keys[key] = _Key(allowance=self._burst(), updated=time.monotonic())
        return state


async def _too_many(send: Send, wait_s: int, detail: str) -> None:
    await refuse(send, 429, detail, [(b"retry-after", str(wait_s).encode())])


def _in_flight_detail(state: _Key) -> str:
    return (
        f"{state.in_flight} requests with this API key are being served "
        "(GRADER_MAX_IN_FLIGHT_PER_KEY): retry when one has been answered"
    )


def _penalty_detail(per_minute: int) -> str:
    return (
        f"more than {per_minute} posts a minute with this API key were refused as malformed, "
        "too large or invalid (GRADER_REFUSED_POSTS_PER_MINUTE): fix the requests, and retry "
        "after Retry-After seconds"
    )


def _platform_key(scope: Scope) -> bytes | None:
    """The SHA-256 of the platform API key in the request's ``Authorization`` header, or None
    when it carries none (the instructor pages, ``/healthz``, a missing key)."""
    for name, value in scope["headers"]:
        if name == b"authorization" and value[: len(_BEARER)].lower() == _BEARER:
            return hashlib.sha256(value[len(b"bearer ") :]).digest()
    return None
