"""``fault_soak --webhooks N``: webhook deliveries per second, for this code and an older
checkout side by side, to a receiver that answers at once and to one that answers 500 to 5 %
of posts and hangs past the sender's timeout on 1 %.

Each run: a fresh database on one throwaway PostgreSQL cluster holds ``n`` graded answers,
each with its delivery due; then the sender starts and the receiver (``Receiver``, a process
of its own on asyncio, HTTP/1.1 with keep-alive as a platform's web server, checking every
signature) counts what arrives. Senders: a webhook worker (``grader worker
--queues io`` with 8 pool processes, as the soak deployed it, and with 2; the older code
delivers one webhook per task, so the task a grading worker sends after each commit is sent
first; the newer runs a courier in each pool process), and ``grader serve --inline`` (its
courier). The rate is the distinct deliveries received over
the time from the first to the last, or to ``cap_s`` when not all arrived by then; beside it,
the CPU time the sender used per delivery (its processes together), which a machine shared
with other work does not change as much.
Retries and timeouts are the soak's: ``GRADER_WEBHOOK_TIMEOUT_S=2``,
``GRADER_RETRY_BACKOFF_S=0.2``, 12 retries.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import psutil
import sqlalchemy as sa

from benchmarks.lib.common import ROOT
from grader.config import ServiceSettings, Settings
from grader.models import Grade, GradeStatus, Method
from grader.service.store import NewSubmission, Store
from grader.service.webhooks import DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from tests.integration.service import RedisServer, free_port, wait_for
from tests.postgres_cluster import Cluster, server_binaries
from workers.app import create_app

EXAM, QUESTION, SECRET = "grad_accum_engineer", "004-s1-q1", "whsec_webhook-rate"
OLD_WEBHOOK_TASK = "workers.tasks.deliver_webhook"  # what the older grading worker sent
RECEIVERS = {"fast": (0.0, 0.0), "faulty": (0.05, 0.01)}  # share failing, share hanging
SENDERS = (("io", 8), ("io", 2), ("inline", 0))  # a webhook worker's pool processes; inline


def compare(before: Path | None, workdir: Path, n: int, cap_s: float) -> dict:
    """Every sender, code and receiver, on one throwaway PostgreSQL cluster."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries (Debian package postgresql)")
    cluster = Cluster.start(binaries)
    runs: dict[str, dict] = {}
    try:
        for receiver in RECEIVERS:
            for label, code in (("before", before), ("after", ROOT)):
                if code is None:
                    continue
                for sender, processes in SENDERS:
                    name = f"{sender}{processes or ''}_{receiver}_{label}"
                    url = _database(cluster.url, name)
                    runs[name] = measure(code, sender, receiver, url, workdir / name, n, cap_s,
                                         processes)  # fmt: skip
                    print(name, runs[name]["per_s"], "deliveries/s", file=sys.stderr)
    finally:
        cluster.stop()
    return runs


def measure(code: Path, sender: str, receiver_kind: str, database_url: str, workdir: Path,
            n: int, cap_s: float, processes: int = 8) -> dict:  # fmt: skip
    workdir.mkdir(parents=True, exist_ok=True)
    receiver = Receiver(*RECEIVERS[receiver_kind])
    store = Store(database_url)
    store.migrate()
    deliveries = _graded(store, receiver.url, n)
    redis = RedisServer(workdir)
    redis.start()
    env = _env(code, database_url, redis.url)
    if sender == "io":
        args = [
            "worker",
            "--queues",
            "io",
            "--concurrency",
            str(processes),
            "--loglevel",
            "WARNING",
        ]
        if (code / "workers" / "tasks.py").read_text().count("deliver_webhook"):
            app = create_app(Settings(service=ServiceSettings(redis_url=redis.url)))
            for delivery_id in deliveries:
                app.send_task(OLD_WEBHOOK_TASK, args=[delivery_id], queue="io")
    else:
        args = ["serve", "--inline", "--port", str(free_port())]
    log = workdir / f"{sender}.log"
    process = subprocess.Popen([sys.executable, "-m", "grader", *args], cwd=code, env=env,
                               stdout=log.open("w"), stderr=subprocess.STDOUT)  # fmt: skip
    try:
        wait_for(lambda: receiver.count() or process.poll() is not None, 120, "a first webhook")
        first = time.monotonic()
        wait_for(lambda: receiver.count() >= n or time.monotonic() - first > cap_s
                 or process.poll() is not None, cap_s + 30, "the webhooks", every=0.05)  # fmt: skip
    finally:
        cpu_s = _cpu_seconds(process.pid)
        process.terminate()
        process.wait(30)
        redis.kill()
        received, faults = receiver.close()
    firsts: dict[str, float] = {}
    for sid, _, _, at in received:
        firsts.setdefault(sid, at)
    times = sorted(firsts.values())
    span = (times[-1] - times[0]) if len(times) == n else cap_s
    return {
        "code": str(code),
        "sender": " ".join(["grader", *args[:-2]] if sender == "inline" else ["grader", *args]),
        "deliveries": n,
        "received": len(firsts),
        "seconds": round(span, 2),
        "per_s": round(len(firsts) / span, 1) if span > 0 else None,
        "sender_cpu_s": round(cpu_s, 2),
        "sender_cpu_ms_per_delivery": round(1000 * cpu_s / len(firsts), 2) if firsts else None,
        "posts_received": len(received),
        "unsigned": sum(not valid for _, _, valid, _ in received),
        "receiver_faults": faults,
        "delivery_statuses": _statuses(store),
    }


class Receiver:
    """A platform's endpoint in a process of its own, on asyncio (HTTP/1.1, keep-alive), so the
    receiving end is not what the figures measure: it checks every signature, answers 500 to
    ``fail`` of the posts and hangs ``hang_s`` on ``hang`` of them (then 500), and records
    (submission id, delivery id, signed, when) for each post it took (204)."""

    def __init__(self, fail: float, hang: float, hang_s: float = 3.0):
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe()
        self.process = context.Process(target=_receive, args=(theirs, fail, hang, hang_s),
                                       daemon=True)  # fmt: skip
        self.process.start()
        self.url = f"http://127.0.0.1:{self._pipe.recv()}/hook"

    def count(self) -> int:
        """Distinct submissions received so far."""
        self._pipe.send("count")
        return self._pipe.recv()

    def close(self) -> tuple[list[tuple[str, str, bool, float]], dict[str, int]]:
        """Stop; what it took, and how many posts it failed and hung."""
        self._pipe.send("stop")
        received, faults = self._pipe.recv()
        self.process.join(10)
        return received, faults


def _receive(pipe, fail: float, hang: float, hang_s: float) -> None:
    asyncio.run(_serve(pipe, fail, hang, hang_s))


async def _serve(pipe, fail: float, hang: float, hang_s: float) -> None:
    rng = random.Random(0)
    received: list[tuple[str, str, bool, float]] = []
    ids: set[str] = set()
    faults = {"fail": 0, "hang": 0}

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")[1:]
                headers = {k.strip().lower(): v.strip() for k, _, v in
                           (line.partition(":") for line in lines if line)}  # fmt: skip
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                x = rng.random()
                if x < fail + hang:
                    faults["fail" if x < fail else "hang"] += 1
                    if x >= fail:
                        await asyncio.sleep(hang_s)
                    writer.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                valid = verify(SECRET, headers[TIMESTAMP_HEADER.lower()], body,
                               headers[SIGNATURE_HEADER.lower()])  # fmt: skip
                sid = json.loads(body)["submission_id"]
                received.append((sid, headers[DELIVERY_HEADER.lower()], valid, time.monotonic()))
                ids.add(sid)
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=1024)
    pipe.send(server.sockets[0].getsockname()[1])
    loop = asyncio.get_running_loop()
    while True:
        message = await loop.run_in_executor(None, pipe.recv)
        if message == "stop":
            server.close()
            pipe.send((received, faults))
            return
        pipe.send(len(ids))


def _cpu_seconds(pid: int) -> float:
    """CPU time the sender has used: its process and every process under it."""
    try:
        root = psutil.Process(pid)
        total = 0.0
        for process in (root, *root.children(recursive=True)):
            times = process.cpu_times()
            total += times.user + times.system
        return total
    except psutil.NoSuchProcess:
        return float("nan")


def _env(code: Path, database_url: str, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(code),
        "GRADER_DATABASE_URL": database_url,
        "GRADER_REDIS_URL": redis_url,
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_WEBHOOK_TIMEOUT_S": "2",
        "GRADER_WEBHOOK_RETRIES": "12",
        "GRADER_RETRY_BACKOFF_S": "0.2",
        "GRADER_WEBHOOK_ALLOW_PRIVATE": "true",
        "GRADER_SWEEP_AFTER_S": "3600",
    }


def _graded(store: Store, receiver_url: str, n: int) -> list[int]:
    """``n`` graded answers of one platform, each with its delivery due: the delivery ids."""
    platform = store.accounts.add_platform("p", [EXAM], "kid", "hash", SECRET, receiver_url)
    deliveries: list[int] = []
    for start in range(0, n, 500):
        new = [NewSubmission(f"s{i}", EXAM, QUESTION, "批次大小")
               for i in range(start, min(n, start + 500))]  # fmt: skip
        stored = [s for s, _ in store.intake.submit(platform, new)]
        deliveries += store.queue.record([(s, _grade(s.external_id)) for s in stored])
    return sorted(deliveries)


def _grade(submission_id: str) -> Grade:
    return Grade(submission_id=submission_id, question_id=QUESTION, status=GradeStatus.GRADED,
                 score=1.0, max_score=1.0, method=Method.EXACT)  # fmt: skip


def _database(admin_url: str, name: str) -> str:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return str(sa.make_url(admin_url).set(database=name).render_as_string(hide_password=False))


def _statuses(store: Store) -> dict[str, int]:
    from grader.service.store.schema import webhook_deliveries

    with store.engine.connect() as conn:
        return dict(conn.execute(
            sa.select(webhook_deliveries.c.status, sa.func.count())
            .group_by(webhook_deliveries.c.status)
        ).all())  # fmt: skip
