"""The HTTP client webhooks are sent with (asynchronous: one process sends many at once):
each connection resolves the host once, checks every address it got
(``webhook_urls.checked_addresses``) and connects to a checked one.

Checking a name, then letting httpx resolve it again to connect, leaves a gap: a name whose
answers change between the two (DNS rebinding) passes the check with a public address and is
connected to 127.0.0.1. Here the check and the connection use the same answer. Only the
socket's address is pinned: the URL, the ``Host`` header and TLS (SNI and the certificate's
name check) keep the host name, since httpcore takes those from the request's origin, not
from the address it dials. Environment proxies are not used (a proxy would resolve the name
itself), and redirects are not followed.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

import anyio
import httpcore
import httpx

from grader.service.webhook_urls import Resolver, checked_addresses

# Each address tried costs up to a connect timeout: a name with many dead ones stays bounded.
MAX_ADDRESSES_TRIED = 3
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the address check between resolving and dialling
    (the lookup on a worker thread: ``getaddrinfo`` blocks)."""

    def __init__(
        self,
        allow_private: bool,
        resolve: Resolver = socket.getaddrinfo,
        network: httpcore.AsyncNetworkBackend | None = None,
    ):
        self.allow_private, self.resolve = allow_private, resolve
        self.network = network or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Raises ``AddressRefused`` (not retried) for an address inside the network,
        ``httpcore.ConnectError`` (a failed try) when the name does not resolve."""
        try:
            addresses = await anyio.to_thread.run_sync(
                checked_addresses, host, port, self.allow_private, self.resolve
            )
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve the webhook's host {host}: {exc}") from exc
        failure: Exception | None = None
        for address in addresses[:MAX_ADDRESSES_TRIED]:
            try:
                return await self.network.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # checked_addresses returns at least one address
        raise failure

    async def connect_unix_socket(self, *args, **kwargs) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("webhooks go over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self.network.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a connection pool whose connections go through a
    ``PinnedBackend``: everything else (exceptions, streaming, TLS) is httpx's own."""

    def __init__(self, backend: PinnedBackend, limits: httpx.Limits):
        super().__init__(limits=limits)  # its pool is replaced before any connection is made
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend,
        )


def webhook_client(
    timeout_s: float,
    allow_private: bool,
    *,
    limits: httpx.Limits | None = None,
    resolve: Resolver = socket.getaddrinfo,
    network: httpcore.AsyncNetworkBackend | None = None,
) -> httpx.AsyncClient:
    """The client every webhook is sent with (one per courier: it pools connections).
    ``resolve`` and ``network`` replace the system's resolver and sockets."""
    backend = PinnedBackend(allow_private, resolve, network)
    transport = PinnedTransport(backend, limits or DEFAULT_LIMITS)
    return httpx.AsyncClient(timeout=timeout_s, transport=transport, follow_redirects=False)
