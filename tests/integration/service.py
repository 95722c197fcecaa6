"""Real processes for the grading-service tests: redis-server, Celery workers, a webhook
receiver. Every wait is bounded; every process is killed in teardown."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from grader.service.webhooks import DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify

ROOT = Path(__file__).resolve().parents[2]

CHROMIUM = Path("/usr/bin/chromium")


def chromium() -> Path:
    """Debian's chromium for Playwright: a skip without it, a failure where CI requires it."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (Debian's chromium package)"
        if os.environ.get("GRADER_REQUIRE_EMBEDDED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


def browser_page(playwright, browser_path: Path):
    """A new 1280×900 page of headless Chromium (``chromium()``'s binary; no sandbox as root),
    from a running ``sync_playwright()``."""
    browser = playwright.chromium.launch(
        executable_path=str(browser_path),
        headless=True,
        args=["--no-sandbox"] if os.geteuid() == 0 else [],
    )
    return browser.new_page(viewport={"width": 1280, "height": 900})


def screenshot(page, name: str) -> None:
    """The whole page saved as test-artifacts/NAME.png, for a person to look at after a run."""
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)


def grader_cli(env: dict, cwd: Path, *args: str) -> str:
    """``python -m grader ARGS`` in a subprocess; its stdout, or the test fails with stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def printed_value(stdout: str, name: str) -> str:
    """``NAME=value`` printed once by a command (keys shown at creation)."""
    return next(x for x in stdout.splitlines() if x.startswith(f"{name}="))[len(name) + 1 :]


def pages_service(tmp_path: Path, bank: Path, exam: str, embed_model: str) -> tuple[dict, str, str]:
    """A `serve --inline` environment for the instructor pages on one exam (SQLite under
    ``tmp_path``, the scripted judge, no Redis, the embedding model given) with a platform
    "acme" and an instructor "li" on it: (env, the platform's API key, the instructor's key)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(bank)]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": embed_model,
        "GRADER_REDIS_URL": "redis://127.0.0.1:1/0",
    }
    env.pop("GRADER_SCORER", None)
    api_key = printed_value(
        grader_cli(env, tmp_path, "platform", "add", "acme", "--exam", exam), "api_key"
    )
    key = printed_value(
        grader_cli(env, tmp_path, "instructor", "add", "li", "--exam", exam), "instructor_key"
    )
    return env, api_key, key


# The grading-service tests: slow, and they need a redis-server (or GRADER_TEST_REDIS_URL).
NEEDS_REDIS = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("redis-server") is None and "GRADER_TEST_REDIS_URL" not in os.environ,
        reason="needs redis-server (Debian package redis-server); CI installs it",
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], object], timeout: float, what: str, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")


@contextmanager
def inline_server(env: dict, cwd: Path) -> Iterator[str]:
    """``grader serve --inline`` on a free port, answering /healthz (200, or 503 while a
    dependency is away); yields its base URL, its log in ``cwd/serve.log``; stopped on exit."""
    port = free_port()
    log = cwd / "serve.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=cwd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return httpx.get(f"{base}/healthz", timeout=1).status_code in (200, 503)
        except httpx.HTTPError:
            return server.poll() is not None  # stop waiting if it died

    try:
        wait_for(healthy, 60, "grader serve --inline to answer")
        assert server.poll() is None, log.read_text()
        yield base
    finally:
        server.terminate()
        server.wait(20)


class RedisServer:
    """A redis-server with AOF on, in its own folder; restartable on the same port."""

    def __init__(self, folder: Path):
        self.folder, self.port = folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
             "--dir", str(self.folder), "--daemonize", "no"],
            stdout=(self.folder / "redis.log").open("a"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for(self._pings, 10, "redis-server to answer")

    def kill(self) -> None:
        """SIGKILL: no chance to flush, what AOF has not synced is gone."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def _pings(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


class SharedRedis:
    """A redis-server someone else runs (CI): only its URL, and a way to empty our database."""

    def __init__(self, url: str):
        self.url = url

    def flush(self) -> None:
        import redis

        client = redis.Redis.from_url(self.url, socket_timeout=5)
        try:
            client.flushdb()
        finally:
            client.close()


class Worker:
    """``grader worker`` as a process group of its own, so it can be SIGKILLed whole."""

    def __init__(self, env: dict[str, str], log: Path, concurrency: int = 2):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader", "worker", "--concurrency", str(concurrency),
             "--pool", "prefork", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(5)

    def stop(self) -> None:
        """Warm shutdown, then force: teardown must not leave processes behind."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()


class WebhookReceiver:
    """A platform's endpoint on 127.0.0.1: checks each signature; refuses some first tries
    (503) so the retries are exercised. ``fault`` (the fault soak) picks posts to fail at
    random: ``"fail"`` answers 500, ``"hang"`` answers only after ``hang_s`` (past the
    sender's timeout); neither counts as received. With ``keep_alive`` it speaks HTTP/1.1
    and keeps connections open between posts, as a platform's web server does."""

    def __init__(
        self,
        secret: str,
        refuse_first: Callable[[str], bool] = lambda _: False,
        fault: Callable[[], str | None] = lambda: None,
        hang_s: float = 0.0,
        keep_alive: bool = False,
    ):
        self.secret, self.refuse_first = secret, refuse_first
        self.received: list[dict] = []
        self.refused: set[str] = set()
        self.faults = {"fail": 0, "hang": 0}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                payload = json.loads(body)
                sid = payload["submission_id"]
                kind = fault()
                if kind is not None:
                    with receiver.lock:
                        receiver.faults[kind] += 1
                    time.sleep(hang_s if kind == "hang" else 0)
                    with contextlib.suppress(OSError):  # the sender gave up on a hang
                        self.send_response(500)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    return
                with receiver.lock:
                    if receiver.refuse_first(sid) and sid not in receiver.refused:
                        receiver.refused.add(sid)
                        self.send_response(503)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    receiver.received.append(
                        {
                            "submission_id": sid,
                            "delivery": self.headers[DELIVERY_HEADER],
                            "valid": verify(
                                receiver.secret,
                                self.headers[TIMESTAMP_HEADER],
                                body,
                                self.headers[SIGNATURE_HEADER],
                            ),
                            "payload": payload,
                            "headers": dict(self.headers.items()),
                            "body": body,
                            "at": time.monotonic(),
                        }
                    )
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def ids(self) -> set[str]:
        with self.lock:
            return {r["submission_id"] for r in self.received}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
