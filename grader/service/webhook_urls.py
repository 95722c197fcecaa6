"""Webhook URLs the service will call: http or https, and never an address inside the
service's own network unless the operator allows it (``GRADER_WEBHOOK_ALLOW_PRIVATE``).

A platform's webhook URL is the one place where someone else says where the service sends
requests; unchecked, it could reach 127.0.0.1, the cloud metadata address (169.254.169.254) or
the private network. Names are resolved when a platform is added and again at every delivery,
since a name's addresses can change after it was checked.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit

SCHEMES = ("http", "https")
ALLOW_VARIABLE = "GRADER_WEBHOOK_ALLOW_PRIVATE"

Resolver = Callable[..., list]


def url_problem(url: str) -> str | None:
    """What is wrong with the URL's form (scheme, host, port), or None."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # reading it checks it: ValueError when out of range
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme.lower() not in SCHEMES:
        return (
            f"scheme {parts.scheme + ':' if parts.scheme else '(none)'} refused: use http or https"
        )
    if not parts.hostname:
        return "the URL names no host"
    return None


def address_problem(
    url: str, allow_private: bool, resolve: Resolver = socket.getaddrinfo
) -> str | None:
    """Why the service must not call ``url``, or None. Raises ``OSError`` when its host name
    does not resolve now (a delivery retries; registering one is allowed with a warning)."""
    problem = url_problem(url)
    if problem or allow_private:
        return problem
    parts = urlsplit(url)
    for *_, sockaddr in resolve(parts.hostname, _port(parts), proto=socket.IPPROTO_TCP):
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if not address.is_global or address.is_multicast:
            return (
                f"{parts.hostname} is {address}, a {_kind(address)} address: refused "
                f"(set {ALLOW_VARIABLE}=true to allow addresses inside your network)"
            )
    return None


def _port(parts: SplitResult) -> int:
    return parts.port or (443 if parts.scheme.lower() == "https" else 80)


def _kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_private:
        return "private"
    return "non-public"
