"""What a request says about its client, its scheme and the server's own origin, read from the
``X-Forwarded-*`` headers only when ``GRADER_TRUST_PROXY`` is set.

Behind a reverse proxy the TCP peer is the proxy and the scheme is the proxy's (often plain
http after TLS ends there); the proxy's headers say what the browser used. Without a proxy
those headers are whatever the client chose to send, so they are ignored.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from fastapi import Request

DEFAULT_PORTS = {"http": 80, "https": 443}


def _first(request: Request, header: str) -> str | None:
    """The first entry of a comma-separated forwarded header (the one the first proxy saw)."""
    value = request.headers.get(header)
    first = value.split(",")[0].strip() if value else ""
    return first or None


def client_address(request: Request, trust_proxy: bool) -> str:
    """The client's IP address: with a trusted proxy the first address of X-Forwarded-For
    (when it is an IP address), else the TCP peer's."""
    if trust_proxy:
        forwarded = _first(request, "x-forwarded-for")
        try:
            return str(ipaddress.ip_address(forwarded)) if forwarded else _peer(request)
        except ValueError:  # not an address: a throttle key must not be what a client wrote
            pass
    return _peer(request)


def _peer(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def scheme(request: Request, trust_proxy: bool) -> str:
    """``https`` or ``http`` as the browser used it: X-Forwarded-Proto behind a trusted proxy."""
    forwarded = _first(request, "x-forwarded-proto") if trust_proxy else None
    if forwarded and forwarded.lower() in DEFAULT_PORTS:
        return forwarded.lower()
    return request.url.scheme


def same_origin(origin: str, request: Request, trust_proxy: bool) -> bool:
    """Whether an ``Origin`` header names this server: same scheme, host and port as the
    request (X-Forwarded-Proto and X-Forwarded-Host behind a trusted proxy)."""
    own_scheme = scheme(request, trust_proxy)
    host = (_first(request, "x-forwarded-host") if trust_proxy else None) or request.headers.get(
        "host", ""
    )
    try:
        theirs, ours = urlsplit(origin), urlsplit(f"{own_scheme}://{host}")
        their_port = theirs.port or DEFAULT_PORTS.get(theirs.scheme)
        our_port = ours.port or DEFAULT_PORTS.get(own_scheme)
    except ValueError:  # a port that is not a number, a malformed host
        return False
    return (
        theirs.scheme == own_scheme
        and bool(theirs.hostname)
        and theirs.hostname == ours.hostname
        and their_port == our_port
    )
