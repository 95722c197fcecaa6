"""How ``grader serve`` runs the app under uvicorn, with deadlines for slow clients.

uvicorn closes a keep-alive connection that stays idle (``timeout_keep_alive``), but has no
deadline for a request still arriving: a client that opens a connection and sends its head a
byte at a time, or never sends its body, holds the connection for as long as it likes, and a
few hundred such clients hold the server. ``ReadDeadlines`` closes a connection whose request
head is not complete ``GRADER_REQUEST_HEADER_TIMEOUT_S`` after it began (or after the
connection opened), or whose body is not complete ``GRADER_REQUEST_BODY_TIMEOUT_S`` after the
head. Behind a reverse proxy, set the proxy's own (nginx: ``client_header_timeout``,
``client_body_timeout``) too: it meets slow clients first.
"""

from __future__ import annotations

import asyncio

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from grader.config import LimitSettings

_PHASES = {h11.IDLE: "head", h11.SEND_BODY: "body"}


class ReadDeadlines(H11Protocol):
    """uvicorn's h11 protocol with a deadline on reading each request's head and body."""

    head_timeout_s = 10.0
    body_timeout_s = 60.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._arm(None)
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Arm the deadline of the phase the request is in (head, body), or none once it
        has all arrived; a phase's deadline runs from when the phase began."""
        phase = None if self.transport.is_closing() else _PHASES.get(self.conn.their_state)
        if phase != self._phase:
            self._arm(phase)

    def _arm(self, phase: str | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._phase, self._deadline = phase, None
        if phase is not None:
            seconds = self.head_timeout_s if phase == "head" else self.body_timeout_s
            self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _expired(self, phase: str) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
            self.logger.info(
                "%s: request %s not received in time; connection closed", client, phase
            )
            self.transport.close()  # a handler reading the body gets http.disconnect


def deadline_protocol(head_timeout_s: float, body_timeout_s: float) -> type[ReadDeadlines]:
    """``ReadDeadlines`` with these deadlines (uvicorn builds the protocol from a class)."""
    return type(
        "ReadDeadlines",
        (ReadDeadlines,),
        {"head_timeout_s": head_timeout_s, "body_timeout_s": body_timeout_s},
    )


def server_config(limits: LimitSettings, app, host: str, port: int) -> uvicorn.Config:
    """uvicorn's configuration for the service: the read deadlines and the keep-alive timeout
    from ``limits``."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=deadline_protocol(limits.request_header_timeout_s, limits.request_body_timeout_s),
        timeout_keep_alive=limits.keep_alive_timeout_s,
    )
