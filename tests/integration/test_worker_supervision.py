"""Workers and what supervises them: a worker rides out Redis restarts in its own process,
with or without a task unacknowledged, a deliberate stop exits 0, and a pool process that
takes longer than Celery's 4 s default to start (the judge loading) is not killed for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from grader.config import ServiceSettings, Settings
from grader.service.store import NewSubmission, Store
from tests.integration.service import NEEDS_REDIS, ROOT, RedisServer, wait_for
from workers.app import create_app
from workers.queues import GRADE_QUEUE, GRADE_TASK

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


def test_a_grading_worker_rides_out_redis_restarts_and_grades_the_rest(tmp_path, redis):
    """Redis SIGKILLed while the worker grades a batch (unacknowledged) and holds another on
    its countdown (the case where Celery stopped with "Unrecoverable error"), then again while
    it is idle: the worker process never exits, and every answer is graded, those sent before
    each restart and those sent after."""
    env = {**worker_env(tmp_path, redis), "GRADER_SCRIPTED_LATENCY_S": "3",
           "GRADER_VISIBILITY_TIMEOUT_S": "5", "GRADER_SWEEP_AFTER_S": "3600"}  # fmt: skip
    store = Store(env["GRADER_DATABASE_URL"])
    store.migrate()
    platform = store.accounts.add_platform("p", [EXAM], "kid", "hash", "secret")
    new = [NewSubmission(f"s{i}", EXAM, "004-s1-q1", "C") for i in range(7)]
    ids = [s.id for s, _ in store.intake.submit(platform, new)]
    log = tmp_path / "worker.log"
    worker = start([sys.executable, "-m", "grader", "worker", "--queues", "grade",
                    "--concurrency", "1"], env, log)  # fmt: skip
    app = create_app(Settings(service=ServiceSettings(redis_url=redis.url)))

    def send(i: int, **options) -> None:
        app.send_task(GRADE_TASK, args=[[ids[i]]], queue=GRADE_QUEUE, **options)

    def graded(indexes) -> bool:
        assert worker.poll() is None, log.read_text()[-3000:]
        return not store.queue.queued([ids[i] for i in indexes])

    try:
        wait_for(lambda: " ready." in log.read_text(), 60, "the worker to start")
        send(0, countdown=2)  # held, unacknowledged, until its countdown ends
        send(1)  # graded for 3 s: unacknowledged while Redis dies
        send(2)
        wait_for(lambda: log.read_text().count("] received") >= 2, 30, "the tasks to arrive")
        time.sleep(1.5)  # inside the batch, and past Redis' once-a-second AOF write
        redis.kill()
        time.sleep(1)
        redis.start()
        send(3)
        wait_for(lambda: graded(range(4)), 90, "the answers sent before and after the restart")
        redis.kill()  # idle this time
        time.sleep(1)
        redis.start()
        send(4)
        send(5, countdown=1)
        send(6)
        wait_for(lambda: graded(range(7)), 60, "the answers sent after the second restart")
        assert worker.poll() is None
        assert "Unrecoverable error" not in log.read_text()
        assert log.read_text().count("Connected to") >= 3  # it reconnected, in-process, twice
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
