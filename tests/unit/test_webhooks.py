"""Webhook signatures and delivery attempts, against httpx's MockTransport, and the address
checks of the service's own client against a scripted resolver and local listeners."""

import asyncio
import json
import socket
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpcore
import httpx
import pytest
import sqlalchemy as sa

from grader.models import Grade, GradeStatus, Method
from grader.service.store import NewSubmission, Store
from grader.service.store.schema import webhook_deliveries
from grader.service.webhook_transport import webhook_client
from grader.service.webhooks import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    attempt,
    backoff,
    settle,
    sign,
    verify,
)

# A client on httpx's MockTransport sends nowhere, so it checks no address: the address
# checks are made by the service's own client (``webhook_client``), tested below.


def deliver(store, delivery_id, *, client, retries, backoff_s=2.0, timeout_s=None):
    """One try of a due delivery and its record, as the courier makes them (it runs many on
    one event loop): the seconds until the next try, or None when it is settled."""
    (delivery,) = store.outbox.deliveries([delivery_id])
    assert delivery.status == "pending"
    tried = asyncio.run(attempt(client, delivery, timeout_s))
    return settle(store, [tried], retries, backoff_s)[0]


def nothing_due(store) -> bool:
    """No sender would take a delivery now (a claim for no time, which moves nothing)."""
    return store.outbox.claim_due(10, timedelta(0)) == []


def closed(client):
    """Close an asynchronous client (its connections) outside any event loop."""
    asyncio.run(client.aclose())


def test_signature_round_trip_and_tampering():
    body, now = b'{"a":1}', int(time.time())
    signature = sign("s3cret", now, body)
    assert signature.startswith("sha256=") and len(signature) == 7 + 64
    assert verify("s3cret", str(now), body, signature)
    assert not verify("s3cret", str(now), b'{"a":2}', signature)
    assert not verify("other", str(now), body, signature)
    assert not verify("s3cret", str(now - 3600), body, sign("s3cret", now - 3600, body))
    assert not verify("s3cret", "yesterday", body, signature)


def test_backoff_doubles_up_to_the_cap():
    assert [backoff(n, 2.0, 20.0) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 16.0, 20.0]


@pytest.fixture
def delivery(tmp_path):
    return _delivery(tmp_path, "http://platform/hook")


def _delivery(tmp_path, url: str):
    store = Store(f"sqlite:///{tmp_path / 'g.db'}")
    store.migrate()
    platform = store.accounts.add_platform("p", ["e"], "kid", "hash", "s3cret", url)
    ((stored, _),) = store.intake.submit(platform, [NewSubmission("x1", "e", "q1", "A")])
    grade = Grade(submission_id="x1", question_id="q1", status=GradeStatus.GRADED, score=1.0,
                  max_score=1.0, method=Method.EXACT)  # fmt: skip
    (delivery_id,) = store.queue.record([(stored, grade)])
    return store, delivery_id


def client(status, seen):
    def handler(request):
        seen.append(request)
        return httpx.Response(status)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def test_a_delivered_webhook_is_signed_and_not_sent_again(delivery):
    store, delivery_id = delivery
    seen = []
    assert deliver(store, delivery_id, retries=3, client=client(204, seen)) is None
    request = seen[0]
    assert verify("s3cret", request.headers[TIMESTAMP_HEADER], request.content,
                  request.headers[SIGNATURE_HEADER])  # fmt: skip
    payload = json.loads(request.content)
    assert payload["submission_id"] == "x1" and payload["grade"]["score"] == 1.0
    assert store.outbox.delivery(delivery_id).status == "delivered"
    assert nothing_due(store)  # never due again: no courier sends it twice


def test_a_refused_webhook_is_retried_with_backoff_then_given_up(delivery):
    store, delivery_id = delivery
    seen = []
    waits = [
        deliver(
            store,
            delivery_id,
            retries=2,
            backoff_s=1,
            client=client(500, seen),
        )
        for _ in range(3)
    ]
    assert waits == [1, 2, None]
    final = store.outbox.delivery(delivery_id)
    assert (final.status, final.attempts) == ("failed", 3)
    assert nothing_due(store)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9/hook", "127.0.0.1, a loopback address"),
        ("http://localhost/hook", "a loopback address"),  # resolved now, not read as text
        ("http://169.254.169.254/latest/meta-data", "a link-local address"),
        ("http://10.1.2.3/hook", "a private address"),
        ("http://[::1]:9/hook", "::1, a loopback address"),
        ("http://[::ffff:192.168.0.7]/hook", "192.168.0.7, a private address"),
        ("file:///etc/passwd", "scheme file: refused"),
    ],
)
def test_a_webhook_to_an_address_inside_the_network_is_refused_at_delivery(tmp_path, url, why):
    store, delivery_id = _delivery(tmp_path, url)
    dialled = Dialled()
    service = webhook_client(1, allow_private=False, network=dialled)
    assert deliver(store, delivery_id, retries=3, client=service) is None
    assert dialled.calls == []  # nothing was sent
    final = store.outbox.delivery(delivery_id)
    assert final.status == "failed" and nothing_due(store)
    assert _last_error(store, delivery_id).startswith("refused: ") and why in _last_error(
        store, delivery_id
    )


class Dialled(httpcore.AsyncNetworkBackend):
    """The sockets under ``webhook_client``: records every address dialled; ``routes`` sends a
    (public) address to a local listener instead, the rest cannot be reached."""

    def __init__(self, routes: dict[str, int] | None = None):
        self.routes, self.calls = routes or {}, []
        self.sockets = httpcore.AnyIOBackend()

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        self.calls.append((host, port))
        if host not in self.routes:
            raise httpcore.ConnectError(f"{host} is unreachable from the tests")
        return await self.sockets.connect_tcp("127.0.0.1", self.routes[host], timeout)

    async def sleep(self, seconds):
        await self.sockets.sleep(seconds)


class Listener:
    """An HTTP endpoint on 127.0.0.1 that records the Host header of every POST."""

    def __init__(self):
        self.hosts: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                listener.hosts.append(self.headers["Host"])
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listeners():
    made = [Listener(), Listener()]
    yield made
    for listener in made:
        listener.close()


def answers(*addresses: str):
    """A resolver that gives ``addresses[0]`` to the first lookup, ``[1]`` to the next..."""
    left = list(addresses)

    def resolve(host, port, **_):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (left.pop(0), port))]

    return resolve


def test_a_name_that_rebinds_to_loopback_never_reaches_the_loopback_listener(tmp_path, listeners):
    """DNS rebinding: the name answers a public address to the check, then 127.0.0.1. The
    connection goes to the address that was checked, and the next lookup is refused."""
    loopback, public = listeners
    url = f"http://localhost:{loopback.port}/hook"  # what the system resolves: 127.0.0.1
    dialled = Dialled(routes={"8.8.8.8": public.port})
    service = webhook_client(5, False, resolve=answers("8.8.8.8", "127.0.0.1"), network=dialled)
    store, first = _delivery(tmp_path, url)
    assert deliver(store, first, retries=3, client=service) is None
    assert store.outbox.delivery(first).status == "delivered"
    assert dialled.calls == [("8.8.8.8", loopback.port)]  # the checked address, nothing else
    assert public.hosts == [f"localhost:{loopback.port}"]  # the Host header is the URL's
    closed(service)  # a new connection for the next delivery: resolved and checked again
    service = webhook_client(5, False, resolve=answers("127.0.0.1"), network=dialled)
    (tmp_path / "again").mkdir()
    store, second = _delivery(tmp_path / "again", url)
    assert deliver(store, second, retries=3, client=service) is None
    assert "127.0.0.1, a loopback address" in _last_error(store, second)
    assert store.outbox.delivery(second).status == "failed"
    assert loopback.hosts == [] and len(dialled.calls) == 1


def test_https_keeps_the_host_name_for_sni_and_the_certificate_check(tmp_path):
    """Only the socket is pinned: TLS is started with the URL's host name, so the server's
    certificate is checked against the name, not against the address."""
    hostnames = []

    class Stream(httpcore.AsyncNetworkStream):
        async def start_tls(self, ssl_context, server_hostname=None, timeout=None):
            hostnames.append((server_hostname, ssl_context.check_hostname))
            raise httpcore.ConnectError("the test stops at the handshake")

        async def aclose(self):
            pass

    class Network(Dialled):
        async def connect_tcp(self, host, port, timeout=None, local_address=None,
                              socket_options=None):  # fmt: skip
            self.calls.append((host, port))
            return Stream()

    network = Network()
    store, delivery_id = _delivery(tmp_path, "https://hooks.example/hook")
    service = webhook_client(5, False, resolve=answers("8.8.8.8"), network=network)
    assert deliver(store, delivery_id, retries=3, backoff_s=1, client=service) == 1
    assert network.calls == [("8.8.8.8", 443)] and hostnames == [("hooks.example", True)]


def test_a_public_address_is_dialled_and_the_flag_allows_private_ones(tmp_path, listeners):
    local, public = listeners
    store, delivery_id = _delivery(tmp_path, "http://8.8.8.8/hook")
    dialled = Dialled(routes={"8.8.8.8": public.port})
    assert (
        deliver(store, delivery_id, retries=3, client=webhook_client(5, False, network=dialled))
        is None
    )
    assert store.outbox.delivery(delivery_id).status == "delivered" and public.hosts == ["8.8.8.8"]
    (tmp_path / "allowed").mkdir()
    store, delivery_id = _delivery(tmp_path / "allowed", f"http://127.0.0.1:{local.port}/hook")
    deliver(store, delivery_id, retries=3, client=webhook_client(5, allow_private=True))
    assert store.outbox.delivery(delivery_id).status == "delivered"
    assert local.hosts == [f"127.0.0.1:{local.port}"]


def test_a_host_that_does_not_resolve_is_retried_like_a_failed_post(tmp_path):
    store, delivery_id = _delivery(tmp_path, "http://no-such-host.invalid/hook")
    dialled = Dialled()
    service = webhook_client(1, allow_private=False, network=dialled)
    assert deliver(store, delivery_id, retries=3, backoff_s=1, client=service) == 1
    assert dialled.calls == []
    pending = store.outbox.delivery(delivery_id)
    assert pending.status == "pending" and "cannot resolve" in _last_error(store, delivery_id)


@pytest.mark.parametrize("url", ["http://１.１.１.１/hook", "http://platform/h\r\nX-Injected: 1"])
def test_a_url_no_client_can_send_to_is_refused_not_left_pending(tmp_path, url):
    """Stored before the check refused such forms: failed for good at the first try."""
    store, delivery_id = _delivery(tmp_path, url)
    seen = []
    assert deliver(store, delivery_id, retries=3, client=client(204, seen)) is None
    final = store.outbox.delivery(delivery_id)
    assert (final.status, final.attempts, seen) == ("failed", 1, [])
    assert _last_error(store, delivery_id).startswith("refused: not a URL")


def test_any_error_while_sending_is_a_failed_try_with_backoff(delivery):
    """Not only httpx's own errors: whatever the client raises counts as a try."""
    store, delivery_id = delivery

    def broken(request):
        raise RuntimeError("a bug in a transport")

    raising = httpx.AsyncClient(transport=httpx.MockTransport(broken))
    waits = [deliver(store, delivery_id, retries=1, backoff_s=1, client=raising) for _ in range(2)]
    assert waits == [1, None] and nothing_due(store)
    final = store.outbox.delivery(delivery_id)
    assert (final.status, final.attempts) == ("failed", 2)
    assert _last_error(store, delivery_id) == "RuntimeError: a bug in a transport"


def _last_error(store, delivery_id: int) -> str:
    with store.engine.connect() as conn:
        return conn.execute(
            sa.select(webhook_deliveries.c.last_error).where(webhook_deliveries.c.id == delivery_id)
        ).scalar_one()


def test_a_receiver_that_never_answers_is_a_failed_try_after_the_deadline(delivery):
    """The whole try is bounded, not each read: a receiver that keeps the request open ends
    the try at ``timeout_s`` and the delivery waits for its retry."""
    store, delivery_id = delivery

    async def never(request):
        await asyncio.sleep(60)

    silent = httpx.AsyncClient(transport=httpx.MockTransport(never))
    started = time.monotonic()
    assert deliver(store, delivery_id, retries=3, backoff_s=1, timeout_s=0.2, client=silent) == 1
    assert time.monotonic() - started < 5
    assert _last_error(store, delivery_id) == "no answer within 0.2 s"
    assert store.outbox.delivery(delivery_id).status == "pending"


def test_a_reply_is_drained_to_reuse_its_connection_and_a_long_one_is_not_read_whole(tmp_path):
    """An empty reply leaves the connection for the next delivery (one connection for two);
    a reply body of any size is read at most DRAINED_BYTES (and a chunk) before the try ends."""
    from grader.service.webhooks import DRAINED_BYTES
    from tests.integration.service import WebhookReceiver

    receiver = WebhookReceiver("s3cret", keep_alive=True)
    network = Dialled(routes={"127.0.0.1": receiver.server.server_port})
    service = webhook_client(5, allow_private=True, network=network)
    try:
        store, first = _delivery(tmp_path, receiver.url)
        (tmp_path / "second").mkdir()
        other, second = _delivery(tmp_path / "second", receiver.url)

        async def both():
            async with service:  # closed on this loop: its connection belongs to it
                for s, i in ((store, first), (other, second)):
                    (delivery,) = s.outbox.deliveries([i])
                    assert (await attempt(service, delivery)).error is None

        asyncio.run(both())
        assert len(network.calls) == 1 and len(receiver.received) == 2
    finally:
        receiver.close()

    sent = []

    async def endless():
        while True:
            sent.append(1)
            yield b"x" * 65536

    (tmp_path / "third").mkdir()
    store, delivery_id = _delivery(tmp_path / "third", "http://platform/hook")
    talkative = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, content=endless()))
    )
    assert deliver(store, delivery_id, retries=3, client=talkative) is None
    assert len(sent) * 65536 <= DRAINED_BYTES + 2 * 65536
