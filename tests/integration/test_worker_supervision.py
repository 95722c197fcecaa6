"""Workers and what supervises them: a worker that Redis dies under exits non-zero (so a
supervisor restarting on failure brings it back), a deliberate stop exits 0, and a pool
process that takes longer than Celery's 4 s default to start (the judge loading) is not
killed for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from grader.config import ServiceSettings, Settings
from grader.service.store import NewSubmission, Store
from tests.integration.service import NEEDS_REDIS, ROOT, RedisServer, wait_for
from workers.app import create_app
from workers.queues import GRADE_QUEUE, GRADE_TASK, IO_QUEUE, WEBHOOK_TASK

pytestmark = NEEDS_REDIS

EXAM = "grad_accum_engineer"


@pytest.fixture
def redis(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()


def worker_env(tmp_path: Path, redis: RedisServer) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_REDIS_URL": redis.url,
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
    }


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def test_a_webhook_worker_exits_non_zero_when_redis_dies_under_it(tmp_path, redis):
    """The soak's case: a delivery retry waiting on its countdown (unacknowledged) when Redis
    is SIGKILLed. Celery stops on "Unrecoverable error"; the worker must not report success."""
    log = tmp_path / "worker.log"
    env = worker_env(tmp_path, redis)
    worker = start([sys.executable, "-m", "grader", "worker", "--queues", "io",
                    "--concurrency", "1"], env, log)  # fmt: skip
    try:
        wait_for(lambda: " ready." in log.read_text(), 60, "the worker to start")
        app = create_app(Settings(service=ServiceSettings(redis_url=redis.url)))
        app.send_task(WEBHOOK_TASK, args=[1], countdown=120, queue=IO_QUEUE)
        wait_for(lambda: "] received" in log.read_text(), 30, "the task to be received")
        redis.kill()
        wait_for(lambda: worker.poll() is not None, 60, "the worker to stop")
        assert worker.returncode != 0, log.read_text()[-3000:]
        assert "the worker stopped on an error" in log.read_text()
    finally:
        stop(worker)


def test_a_worker_stopped_on_purpose_exits_zero(tmp_path, redis):
    """SIGTERM (systemctl stop, docker stop): a warm shutdown, status 0, not restarted."""
    log = tmp_path / "worker.log"
    worker = start([sys.executable, "-m", "grader", "worker", "--queues", "io",
                    "--concurrency", "1"], worker_env(tmp_path, redis), log)  # fmt: skip
    try:
        wait_for(lambda: " ready." in log.read_text(), 60, "the worker to start")
        worker.send_signal(signal.SIGTERM)
        wait_for(lambda: worker.poll() is not None, 30, "the worker to stop")
        assert worker.returncode == 0, log.read_text()[-3000:]
    finally:
        stop(worker)


def test_a_pool_process_slower_to_start_than_celerys_default_is_not_killed(tmp_path, redis):
    """Each pool process takes 6 s to start; when one dies, Celery's default allows its
    replacement 4 s, then kills it and every replacement after it: the worker never grades
    again. The replacement must be let start, and grade."""
    env = {**worker_env(tmp_path, redis), "SLOW_START_S": "6"}
    store = Store(env["GRADER_DATABASE_URL"])
    store.migrate()
    platform = store.accounts.add_platform("p", [EXAM], "kid", "hash", "secret")
    ((stored, _),) = store.intake.submit(platform, [NewSubmission("s1", EXAM, "004-s1-q1", "C")])
    log = tmp_path / "worker.log"
    worker = start([sys.executable, "-m", "celery", "-A", "tests.integration.slow_start",
                    "worker", "-Q", GRADE_QUEUE, "-c", "1", "-P", "prefork", "--loglevel", "INFO",
                    "--without-mingle", "--without-gossip"], env, log)  # fmt: skip
    try:
        wait_for(lambda: " ready." in log.read_text(), 60, "the worker to start")
        # The pool process dies (the kernel's OOM killer, say): Celery starts a replacement,
        # and the replacement has worker_proc_alive_timeout to report up.
        (child,) = psutil.Process(worker.pid).children()
        child.kill()
        wait_for(lambda: [c for c in psutil.Process(worker.pid).children() if c.pid != child.pid],
                 30, "a replacement pool process")  # fmt: skip
        create_app(Settings(service=ServiceSettings(redis_url=redis.url))).send_task(
            GRADE_TASK, args=[[stored.id]], queue=GRADE_QUEUE
        )
        graded = lambda: store.intake.submission(platform, "s1").status == "graded"  # noqa: E731
        wait_for(graded, 60, "the answer to be graded")
        assert "Timed out waiting for UP message" not in log.read_text()
    finally:
        stop(worker)
