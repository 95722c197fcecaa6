"""Slow clients: a connection whose request head or body does not arrive in time is closed,
under the uvicorn configuration ``grader serve`` runs."""

from __future__ import annotations

import socket
import threading

import pytest
import uvicorn

from grader.api.server import ReadDeadlines, server_config
from grader.config import LimitSettings, Settings
from tests.integration.service import wait_for

WAIT_S = 20  # a bound on each read, never reached when the server closes in time


async def echo_length(scope, receive, send):
    """Reads the whole body, then answers its length."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size, more = size + len(message.get("body", b"")), message.get("more_body", False)
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def server():
    settings = Settings(
        limits=LimitSettings(request_header_timeout_s=0.5, request_body_timeout_s=0.5)
    )
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    config = server_config(settings.limits, echo_length, "127.0.0.1", 0)
    config.log_level = "warning"
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    wait_for(lambda: running.started, 20, "uvicorn to start")
    yield listening.getsockname()
    running.should_exit = True
    thread.join(10)


def connect(address) -> socket.socket:
    conn = socket.create_connection(address, timeout=WAIT_S)
    conn.settimeout(WAIT_S)
    return conn


def read_all(conn: socket.socket) -> bytes:
    """Everything until the server closes the connection (a timeout fails the test)."""
    got = b""
    while chunk := conn.recv(4096):
        got += chunk
    return got


def test_the_served_configuration_has_the_deadlines_and_keep_alive():
    settings = Settings(
        limits=LimitSettings(
            request_header_timeout_s=7, request_body_timeout_s=30, keep_alive_timeout_s=3
        )
    )
    config = server_config(settings.limits, echo_length, "127.0.0.1", 8080)
    assert issubclass(config.http, ReadDeadlines)
    assert (config.http.head_timeout_s, config.http.body_timeout_s) == (7, 30)
    assert config.timeout_keep_alive == 3


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: a", b"GET / HTTP/1.1\r\n"],
    ids=["nothing", "half a head", "a request line only"],
)
def test_a_connection_whose_head_does_not_arrive_is_closed(server, sent):
    with connect(server) as conn:
        conn.sendall(sent)
        assert read_all(conn) == b""  # closed, no answer


def test_a_request_whose_body_does_not_arrive_is_closed(server):
    with connect(server) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)
        assert read_all(conn) == b""


def test_a_whole_request_is_answered_and_the_deadline_rearms_per_request(server):
    request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
    with connect(server) as conn:
        conn.sendall(request)
        first = conn.recv(4096)
        assert first.startswith(b"HTTP/1.1 200") and first.endswith(b"\r\n\r\n5")
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # the next request's head stalls
        assert read_all(conn) == b""
