"""A whole grading service on 127.0.0.1, under a supervisor, for the fault soak.

Two ``grader serve`` processes (Celery mode), two grading workers (``--queues grade``), one
webhook worker (``--queues io``, two pool processes), a throwaway PostgreSQL cluster and a redis-server with AOF,
the scripted judge and no embedding model. Each service process runs in a process group of
its own (SIGKILL takes the worker with its pool) and is restarted the way
``workers/deploy/`` restarts it: ``Restart=on-failure`` — a non-zero exit (a SIGKILL
included) brings it back after ``RESTART_S``; an exit with status 0 leaves it stopped, and
the soak reports it (a worker that exits 0 when Redis dies would be lost).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import psutil
import sqlalchemy as sa

from benchmarks.lib.common import ROOT
from grader.api.keys import new_key
from grader.service.store import Store
from grader.service.store.schema import grade_overrides, submissions
from tests.integration.service import RedisServer, free_port, wait_for
from tests.postgres_cluster import DURABLE, Cluster, server_binaries

RESTART_S = 1.0  # the supervisor's RestartSec, short: the soak measures recovery
LOCK_WAIT_MS = 200  # PostgreSQL logs a lock wait longer than this
EXAMS = ("grad_accum_engineer", "ai_trainer_l2", "llm_trainer_solutions")
PLATFORMS = {"alpha": EXAMS[:2], "beta": (EXAMS[2], EXAMS[0])}
SECRET = "whsec_fault-soak"


def settings(database_url: str, redis_url: str, latency_s: float) -> dict[str, str]:
    """The service's settings: short timeouts so that lost work comes back within the run."""
    return {
        "GRADER_DATABASE_URL": database_url,
        "GRADER_REDIS_URL": redis_url,
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{e}.yaml") for e in EXAMS]),
        "GRADER_JUDGE": "scripted",
        "GRADER_SCRIPTED_LATENCY_S": str(latency_s),
        "GRADER_EMBED_MODEL": "none",
        "GRADER_BATCH_SIZE": "25",
        "GRADER_BATCH_WAIT_MS": "50",
        "GRADER_VISIBILITY_TIMEOUT_S": "10",  # a killed worker's tasks come back after this
        "GRADER_SWEEP_INTERVAL_S": "2",
        "GRADER_SWEEP_AFTER_S": "20",  # tasks lost with Redis are enqueued again after this
        "GRADER_TASK_RETRIES": "12",  # outlive a database outage of several seconds
        "GRADER_RETRY_BACKOFF_S": "0.2",
        "GRADER_WEBHOOK_RETRIES": "12",
        "GRADER_WEBHOOK_TIMEOUT_S": "2",
        "GRADER_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver listens on 127.0.0.1
        "GRADER_RATE_LIMIT_PER_MINUTE": "0",
        "GRADER_MAX_QUEUED_PER_PLATFORM": "1000000",
    }


class Supervised:
    """One service process, restarted on failure (``Restart=on-failure``)."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log: Path,
                 code: Path = ROOT):  # fmt: skip
        """``code``: the checkout it runs (``python -m`` puts the working folder first)."""
        self.name, self.args, self.env, self.log, self.code = name, args, env, log, code
        self.process: subprocess.Popen | None = None
        self.restarts, self.clean_exits = 0, 0
        self.wanted = True
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader", *self.args], cwd=self.code, env=self.env,
            stdout=self.log.open("a"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def kill(self) -> None:
        """SIGKILL the process group: the main process and its pool processes."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)

    def children(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children()
        except psutil.NoSuchProcess:
            return []

    def check(self) -> None:
        """Restart after a failure; an exit with status 0 is left alone, and counted."""
        code = self.process.poll() if self.wanted else None
        if code is None:
            return
        if code == 0:
            self.clean_exits += 1
            self.wanted = False
            return
        time.sleep(RESTART_S)
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        self.wanted = False
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
                self.process.wait(10)


class Deployment:
    """Everything above in ``workdir``, running the checkout ``code``; ``close`` stops every
    process and the cluster. PostgreSQL logs every lock wait over ``LOCK_WAIT_MS``."""

    def __init__(self, workdir: Path, receiver_url: str, latency_s: float = 0.0,
                 code: Path = ROOT):  # fmt: skip
        self.workdir, self.code = workdir, code
        binaries = server_binaries()
        if binaries is None:
            raise RuntimeError("no PostgreSQL server binaries (Debian package postgresql)")
        # it is crashed on purpose, so durable; lock waits logged, for ``lock_waits``
        options = f"{DURABLE} -c log_lock_waits=on -c deadlock_timeout={LOCK_WAIT_MS}ms"
        self.postgres = Cluster.start(binaries, options)
        self.redis = RedisServer(workdir)
        self.processes: list[Supervised] = []
        self.lock_waits: dict[str, int] = {}
        try:
            self.redis.start()
            self.env = {
                **os.environ,
                "PYTHONPATH": str(code),
                **settings(self.postgres.url, self.redis.url, latency_s),
            }
            self.store = Store(self.postgres.url)
            self.store.migrate()
            self.keys = self._platforms(receiver_url)
            self.ports = [free_port(), free_port()]
            self.apis = [self._start(f"api{i}", ["serve", "--port", str(p)])
                         for i, p in enumerate(self.ports)]  # fmt: skip
            grade = ["worker", "--queues", "grade", "--concurrency", "2", "--loglevel", "INFO"]
            self.graders = [self._start(f"grade{i}", grade) for i in range(2)]
            io = ["worker", "--queues", "io", "--concurrency", "2", "--loglevel", "INFO"]
            self.io = self._start("io", io)
            for port in self.ports:
                wait_for(lambda port=port: _healthy(port), 120, f"the API on port {port}")
            for worker in (*self.graders, self.io):
                wait_for(lambda w=worker: " ready." in w.log.read_text(), 120, worker.name)
        except BaseException:
            self.close()
            raise
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._supervise, name="supervisor", daemon=True)
        self._thread.start()

    @property
    def bases(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def graded(self) -> int | None:
        """Submissions graded so far; None while the database does not answer."""
        try:
            return self.store.metrics.counts()["submissions"].get("graded", 0)
        except sa.exc.SQLAlchemyError:
            return None

    def override(self, n: int, reason: str) -> int:
        """An instructor's override (as the pages store one) of ``n`` graded answers not yet
        overridden: each a grade version 2 with its ``grade.updated``. Returns how many; none
        when the code under test keeps no grade versions."""
        if not (self.code / "grader" / "service" / "store" / "versions.py").exists():
            return 0
        with self.store.engine.connect() as conn:
            ids = conn.execute(
                sa.select(submissions.c.id)
                .where(submissions.c.status == "graded",
                       submissions.c.id.not_in(sa.select(grade_overrides.c.submission_id)))
                .order_by(submissions.c.id)
                .limit(n)
            ).scalars().all()  # fmt: skip
        for submission_id in ids:
            self.store.reviews.add_override(submission_id, 0.0, reason, "soak")
        return len(ids)

    def settled(self) -> bool:
        """Every process running and both APIs healthy (Redis and the database answering)."""
        running = all(p.process.poll() is None for p in self.processes if p.wanted)
        return running and all(_healthy(port) for port in self.ports)

    def restart_redis(self, down_s: float) -> None:
        self.redis.kill()
        time.sleep(down_s)
        self.redis.start()

    def restart_postgres(self, down_s: float) -> None:
        self.postgres.halt()
        time.sleep(down_s)
        self.postgres.resume()

    def close(self) -> None:
        if hasattr(self, "_closing"):
            self._closing.set()
            self._thread.join(10)
        for process in self.processes:
            process.stop()
        if hasattr(self, "store"):
            self.store.engine.dispose()
        self.redis.kill()
        log = self.postgres.folder / "server.log"
        if log.exists():
            text = log.read_text(errors="replace")
            self.lock_waits = lock_waits(text)
            (self.workdir / "postgres.log").write_text(text)
        self.postgres.stop()

    def _start(self, name: str, args: list[str]) -> Supervised:
        process = Supervised(name, args, self.env, self.workdir / f"{name}.log", self.code)
        self.processes.append(process)
        return process

    def _platforms(self, receiver_url: str) -> dict[str, str]:
        keys = {}
        for name, exams in PLATFORMS.items():
            key = new_key()
            self.store.accounts.add_platform(
                name, list(exams), key.key_id, key.key_hash, SECRET, f"{receiver_url}/{name}"
            )
            keys[name] = key.key
        return keys

    def _supervise(self) -> None:
        while not self._closing.wait(0.2):
            for process in self.processes:
                process.check()


def lock_waits(log: str) -> dict[str, int]:
    """PostgreSQL's logged lock waits, by the start of the statement that waited."""
    waits: Counter[str] = Counter()
    for entry in log.split("still waiting for")[1:]:
        statement = re.search(r"STATEMENT:\s+(.*)", entry)
        waits[" ".join(statement[1].split()[:4]) if statement else "?"] += 1
    return dict(waits)


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def logs(workdir: Path, tail: int = 3000) -> str:
    """The end of every process's log in ``workdir``, to show when a soak fails."""
    return "\n".join(
        f"== {p.name}\n{p.read_text(errors='replace')[-tail:]}"
        for p in sorted(workdir.glob("*.log"))
    )
