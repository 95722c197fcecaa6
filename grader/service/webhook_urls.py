"""Webhook URLs the service will call: http or https, in a form httpx can send to, and never
to an address inside the service's own network unless the operator allows it
(``GRADER_WEBHOOK_ALLOW_PRIVATE``).

A platform's webhook URL is the one place where someone else says where the service sends
requests; unchecked, it could reach 127.0.0.1, the cloud metadata address (169.254.169.254) or
the private network. Names are resolved when a platform is added, and the addresses are
checked again on every connection a delivery makes (``webhook_transport``), with the very
answer the connection then uses: a name's addresses can change after it was checked.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

SCHEMES = ("http", "https")
ALLOW_VARIABLE = "GRADER_WEBHOOK_ALLOW_PRIVATE"

Resolver = Callable[..., list]


class AddressRefused(Exception):
    """The host resolved to an address the service must not call: the delivery is refused
    for good, not retried."""


def url_problem(url: str) -> str | None:
    """What is wrong with the URL's form (scheme, host, port), or None. A URL httpx would
    refuse to send to (a full-width host, a control character) is refused here, where a
    platform is added, rather than failing every delivery later."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # reading it checks it: ValueError when out of range
        parsed = httpx.URL(url)
    except (ValueError, TypeError, httpx.InvalidURL) as exc:
        return f"not a URL ({exc})"
    if parsed.scheme not in SCHEMES:
        return f"scheme {parsed.scheme + ':' if parsed.scheme else '(none)'} refused: use http or https"
    if not parsed.host or not parts.hostname:
        return "the URL names no host"
    return None


def address_problem(
    url: str, allow_private: bool, resolve: Resolver = socket.getaddrinfo
) -> str | None:
    """Why the service must not call ``url``, or None. Raises ``OSError`` when its host name
    does not resolve now (registering one is allowed with a warning)."""
    problem = url_problem(url)
    if problem or allow_private:
        return problem
    parsed = httpx.URL(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        checked_addresses(parsed.host, port, allow_private, resolve)
    except AddressRefused as exc:
        return str(exc)
    return None


def checked_addresses(
    host: str, port: int, allow_private: bool, resolve: Resolver = socket.getaddrinfo
) -> list[str]:
    """The addresses ``host`` resolves to now, in the resolver's order, after checking every
    one of them: ``AddressRefused`` if any is inside the network (unless ``allow_private``),
    ``OSError`` if the name does not resolve."""
    found: list[str] = []
    for *_, sockaddr in resolve(host, port, proto=socket.IPPROTO_TCP):
        text = str(sockaddr[0]).split("%")[0]
        address = ipaddress.ip_address(text)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if not allow_private and (not address.is_global or address.is_multicast):
            raise AddressRefused(
                f"{host} is {address}, a {_kind(address)} address: refused "
                f"(set {ALLOW_VARIABLE}=true to allow addresses inside your network)"
            )
        if sockaddr[0] not in found:  # as resolved: an IPv6 scope stays on it
            found.append(str(sockaddr[0]))
    if not found:
        raise OSError(f"{host} resolved to no address")
    return found


def _kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_private:
        return "private"
    return "non-public"
