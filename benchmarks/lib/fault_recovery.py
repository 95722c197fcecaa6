"""``fault_soak --broker-restart``: how long a grading worker takes to grade again once Redis is
back, for this code and for an older checkout, side by side.

A real redis-server (AOF on) and one ``grader worker --queues grade --concurrency 1`` (the
scripted judge, SQLite) under the soak's restart-on-failure supervisor (``Supervised``, restart
after ``RESTART_S``). Each round: with ``hold``, a grading task with a long countdown is sent
and received first, so the worker holds an unacknowledged message (what made Celery stop);
then Redis is SIGKILLed, started again after ``down_s``, and as soon as it answers a new
answer is stored and its task sent. The figure is the time from Redis answering to that
answer's grade being committed; the worker's restarts are counted. A worker that stops is
restarted by the supervisor and loads its judge again: the scripted judge loads at once, a
model judge takes minutes more (the 1.5B on this CPU: about a minute).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from pathlib import Path

from benchmarks.lib.common import ROOT
from benchmarks.lib.deployment import Supervised
from grader.config import ServiceSettings, Settings
from grader.service.store import NewSubmission, Store
from tests.integration.service import RedisServer, wait_for
from workers.app import create_app
from workers.queues import GRADE_QUEUE, GRADE_TASK

EXAM, QUESTION = "grad_accum_engineer", "004-s1-q1"
HOLD_COUNTDOWN_S = 3600  # the held task waits on its countdown for the whole run


def worker_env(code: Path, database_url: str, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(code),
        "GRADER_DATABASE_URL": database_url,
        "GRADER_REDIS_URL": redis_url,
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_SWEEP_AFTER_S": "3600",  # the figure is the worker's, not the sweeper's
        "GRADER_RATE_LIMIT_PER_MINUTE": "0",
    }


def measure(code: Path, workdir: Path, rounds: int, hold: bool, down_s: float = 1.0) -> dict:
    """``rounds`` Redis restarts under one supervised worker running ``code``."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = RedisServer(workdir)
    server.start()
    store = Store(f"sqlite:///{workdir / 'grader.db'}")
    store.migrate()
    platform = store.accounts.add_platform("p", [EXAM], "kid", "hash", "secret")
    log = workdir / "worker.log"
    worker = Supervised("grade", ["worker", "--queues", "grade", "--concurrency", "1"],
                        worker_env(code, store.url, server.url), log, code)  # fmt: skip
    stop = threading.Event()

    def supervise() -> None:
        while not stop.wait(0.1):
            worker.check()

    threading.Thread(target=supervise, name="supervisor", daemon=True).start()
    app = create_app(Settings(service=ServiceSettings(redis_url=server.url)))
    seconds: list[float] = []
    try:
        wait_for(lambda: " ready." in log.read_text(), 120, "the worker to start")
        for r in range(rounds):
            if hold:
                received = log.read_text().count("] received")
                (held,) = _stored(store, platform, f"held{r}")
                app.send_task(GRADE_TASK, args=[[held]], countdown=HOLD_COUNTDOWN_S,
                              queue=GRADE_QUEUE)  # fmt: skip
                wait_for(lambda n=received: log.read_text().count("] received") > n, 30,
                         "the held task to be received")  # fmt: skip
                time.sleep(1.5)  # Redis' AOF is written every second
            server.kill()
            time.sleep(down_s)
            server.start()
            back = time.monotonic()
            (probe,) = _stored(store, platform, f"probe{r}")
            wait_for(lambda p=probe: _send(app, p), 60, "Redis to take the task")
            wait_for(lambda p=probe: _graded(store, p), 300, "the probe to be graded")
            seconds.append(round(time.monotonic() - back, 2))
    finally:
        stop.set()
        worker.stop()
        server.kill()
        store.engine.dispose()
    return {
        "holding_an_unacknowledged_task": hold,
        "redis_down_s": down_s,
        "seconds_from_redis_back_to_graded": seconds,
        "median_s": statistics.median(seconds) if seconds else None,
        "max_s": max(seconds, default=None),
        "worker_restarts": worker.restarts,
        "worker_exited_0": worker.clean_exits,
        "unrecoverable_errors_logged": log.read_text().count("Unrecoverable error"),
    }


def compare(before: Path | None, workdir: Path, rounds: int, down_s: float = 1.0) -> dict:
    """This code and ``before`` (a checkout of the older code), holding a task and not."""
    runs = {}
    for label, code in (("before", before), ("after", ROOT)):
        if code is None:
            continue
        for hold in (True, False):
            name = f"{label}_{'holding' if hold else 'idle'}"
            runs[name] = measure(code, workdir / name, rounds, hold, down_s)
            runs[name]["code"] = str(code)
    return runs


def _stored(store: Store, platform: int, name: str) -> list[int]:
    stored = store.intake.submit(platform, [NewSubmission(name, EXAM, QUESTION, "批次大小")])
    return [s.id for s, _ in stored]


def _send(app, submission_id: int) -> bool:
    try:
        app.send_task(GRADE_TASK, args=[[submission_id]], queue=GRADE_QUEUE)
        return True
    except Exception:  # Redis not accepting yet (still loading its file)
        return False


def _graded(store: Store, submission_id: int) -> bool:
    return store.queue.queued([submission_id]) == []
