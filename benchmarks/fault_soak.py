"""The grading service under faults: every answer graded once and its webhook delivered, while
the API, Redis, PostgreSQL, the workers and the platform's endpoint are killed or failing.

The deployment (``fault_deployment.py``): 2 ``grader serve`` processes, 2 grading workers, 1
webhook worker, PostgreSQL, Redis, all on 127.0.0.1 under a restart-on-failure supervisor. A
webhook receiver answers 500 to ``--fail`` of the posts, hangs past the sender's timeout on
``--hang`` of them, and checks every signature. A client posts ``--answers`` answers of three
exams from two platforms in bulks of 25, to either API (the other when one does not answer),
keeping at most ``WINDOW`` answers ahead of grading, as a platform with a steady stream does.
At set shares of the answers graded it SIGKILLs one API, Redis (restarted after 1 s), stops
PostgreSQL immediately (started again after 3 s), SIGKILLs a whole grading worker, one
grading worker's pool process and the webhook worker; the supervisor restarts what exited
non-zero. Then it waits for every grade and webhook and checks, from the database and the
receiver: every answer graded exactly once (0 lost, 0 duplicate grades, none failed), one
webhook delivery per grade, each received and signed, and no service process that exited 0
(left stopped by its supervisor). Wall time, answers/s and the time to drain after the last
fault are reported, not checked.

    python -m benchmarks.fault_soak --answers 3000 --out benchmarks/results/fault_soak_3000.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import sqlalchemy as sa

from benchmarks.lib.common import ROOT, command
from benchmarks.lib.deployment import EXAMS, PLATFORMS, SECRET, Deployment, logs
from grader.service.store.schema import grades, submissions, webhook_deliveries
from tests.integration.service import WebhookReceiver

BULK = 25
WINDOW = 400  # answers posted and not yet graded, at most
POSTGRES_DOWN_S, REDIS_DOWN_S = 3.0, 1.0
FAULTS = ("api", "redis", "postgres", "grade_worker", "pool_process", "webhook_worker")
SHARES = (0.10, 0.25, 0.40, 0.55, 0.70, 0.85)  # of the answers graded, when each fault hits


def answers(n: int) -> list[tuple[str, list[dict]]]:
    """``n`` answers in bulks of ``BULK``: (platform, bulk), the platforms taking turns, each
    bulk one exam of the platform's, its answers the exam's examples cycled."""
    examples = {
        exam: [json.loads(x) for x in (ROOT / "examples" / f"{exam}.submissions.jsonl").open()]
        for exam in EXAMS
    }
    bulks, names = [], sorted(PLATFORMS)
    for k, start in enumerate(range(0, n, BULK)):
        name = names[k % len(names)]
        exam = PLATFORMS[name][(k // len(names)) % len(PLATFORMS[name])]
        pool = examples[exam]
        bulk = [{"id": f"s{i}", "exam": exam, "question_id": pool[i % len(pool)]["question_id"],
                 "answer": pool[i % len(pool)]["answer"]}
                for i in range(start, min(n, start + BULK))]  # fmt: skip
        bulks.append((name, bulk))
    return bulks


class Client(threading.Thread):
    """Posts every bulk until it is answered 202, to either API; ``ahead`` bounds the work
    waiting to be graded. ``refused`` counts the answers that were not 202, by reason."""

    def __init__(self, deployment: Deployment, bulks: list[tuple[str, list[dict]]],
                 graded: Callable[[], int], window: int):  # fmt: skip
        super().__init__(name="client", daemon=True)
        self.deployment, self.bulks, self.graded = deployment, bulks, graded
        self.window = window
        self.posted, self.refused = 0, Counter()

    def run(self) -> None:
        with httpx.Client(timeout=30) as http:
            for k, (name, bulk) in enumerate(self.bulks):
                while self.posted - self.graded() >= self.window:
                    time.sleep(0.05)
                self._post(http, k, name, bulk)
                self.posted += len(bulk)

    def _post(self, http: httpx.Client, k: int, name: str, bulk: list[dict]) -> None:
        headers = {"Authorization": f"Bearer {self.deployment.keys[name]}"}
        bases = self.deployment.bases
        for attempt in range(10_000):  # a retried bulk is idempotent: the same ids
            base = bases[(k + attempt) % len(bases)]
            try:
                response = http.post(f"{base}/v1/submissions", json=bulk, headers=headers)
            except httpx.HTTPError as exc:
                self.refused[type(exc).__name__] += 1
            else:
                if response.status_code == 202:
                    return
                self.refused[str(response.status_code)] += 1
            time.sleep(0.2)
        raise RuntimeError(f"bulk {k} was never accepted")


def inject(deployment: Deployment, fault: str) -> None:
    """One fault; the supervisor restarts the processes it kills."""
    if fault == "api":
        deployment.apis[0].kill()
    elif fault == "redis":
        deployment.restart_redis(REDIS_DOWN_S)
    elif fault == "postgres":
        deployment.restart_postgres(POSTGRES_DOWN_S)
    elif fault == "grade_worker":
        deployment.graders[0].kill()
    elif fault == "pool_process":
        for child in deployment.graders[1].children()[:1]:  # Celery starts another
            child.kill()
    elif fault == "webhook_worker":
        deployment.io.kill()


def tally(deployment: Deployment, receiver: WebhookReceiver, n: int) -> dict:
    """What the database and the receiver say, and whether it is all exactly once."""
    with deployment.store.engine.connect() as conn:
        statuses = dict(conn.execute(
            sa.select(submissions.c.status, sa.func.count()).group_by(submissions.c.status)
        ).all())  # fmt: skip
        grade_rows, graded_ids = conn.execute(
            sa.select(sa.func.count(), sa.func.count(sa.distinct(grades.c.submission_id)))
        ).one()
        graded_names = set(conn.execute(
            sa.select(submissions.c.external_id).where(submissions.c.status == "graded")
        ).scalars())  # fmt: skip
        delivery_statuses = dict(conn.execute(
            sa.select(webhook_deliveries.c.status, sa.func.count())
            .group_by(webhook_deliveries.c.status)
        ).all())  # fmt: skip
    with receiver.lock:
        received = list(receiver.received)
    deliveries_by_answer: dict[str, set[str]] = {}
    for r in received:
        deliveries_by_answer.setdefault(r["submission_id"], set()).add(r["delivery"])
    stored = sum(statuses.values())
    return {
        "answers": n,
        "stored": stored,
        "submission_statuses": statuses,
        "lost": n - statuses.get("graded", 0),
        "lost_sample": sorted(set(f"s{i}" for i in range(n)) - graded_names)[:20],
        "grade_rows": grade_rows,
        "duplicate_grades": grade_rows - graded_ids,
        "delivery_statuses": delivery_statuses,
        "webhooks_received": len(received),
        "answers_with_webhook": len(deliveries_by_answer),
        "answers_with_two_deliveries": sum(len(d) > 1 for d in deliveries_by_answer.values()),
        "webhook_retransmissions": len(received) - sum(map(len, deliveries_by_answer.values())),
        "unsigned_webhooks": sum(not r["valid"] for r in received),
        "receiver_faults": dict(receiver.faults),
    }


def correct(t: dict) -> bool:
    """Exactly once: every answer stored and graded once, one webhook each, received signed."""
    n = t["answers"]
    return (t["stored"] == n and t["lost"] == 0 and t["duplicate_grades"] == 0
            and t["submission_statuses"] == {"graded": n}
            and t["delivery_statuses"] == {"delivered": n}
            and t["answers_with_webhook"] == n and t["answers_with_two_deliveries"] == 0
            and t["unsigned_webhooks"] == 0)  # fmt: skip


def run(n: int, workdir: Path, fail: float = 0.05, hang: float = 0.01, seed: int = 0,
        latency_s: float = 0.0, window: int = WINDOW,
        drain_timeout_s: float | None = None) -> dict:  # fmt: skip
    """The soak at ``n`` answers in ``workdir``: the report (``ok`` says whether it held)."""
    rng, rng_lock = random.Random(seed), threading.Lock()

    def fault() -> str | None:
        with rng_lock:
            x = rng.random()
        return "fail" if x < fail else "hang" if x < fail + hang else None

    receiver = WebhookReceiver(SECRET, fault=fault, hang_s=3.0)  # past the 2 s sender timeout
    deployment = Deployment(workdir, receiver.url, latency_s)
    try:
        return _soak(deployment, receiver, n, window, drain_timeout_s or 120 + n / 10)
    finally:
        deployment.close()
        receiver.close()


def _soak(deployment: Deployment, receiver: WebhookReceiver, n: int, window: int,
          timeout: float) -> dict:  # fmt: skip
    latest = [0]

    def graded() -> int:
        count = deployment.graded()
        latest[0] = latest[0] if count is None else count
        return latest[0]

    client = Client(deployment, answers(n), lambda: latest[0], window)
    faults, pending = [], list(zip(FAULTS, SHARES, strict=True))
    start = time.monotonic()
    client.start()
    deadline = start + timeout
    while time.monotonic() < deadline and pending:
        after = min(n, faults[-1]["graded"] + 1) if faults else 0  # graded since the last
        if graded() >= max(after, pending[0][1] * n) and deployment.settled():
            fault, _ = pending.pop(0)
            at = time.monotonic() - start
            inject(deployment, fault)
            faults.append({"fault": fault, "graded": latest[0], "at_s": round(at, 1)})
        time.sleep(0.1)
    last_fault = time.monotonic()
    while time.monotonic() < deadline and graded() < n:
        time.sleep(0.2)
    all_graded = time.monotonic()
    while time.monotonic() < deadline and _deliveries_pending(deployment, receiver, n):
        time.sleep(0.2)
    drained = time.monotonic()
    client.join(5)
    t = tally(deployment, receiver, n)
    return {
        "ok": correct(t) and not pending and not any(p.clean_exits for p in deployment.processes),
        **t,
        "faults": faults,
        "faults_not_reached": [f for f, _ in pending],
        "restarts": {p.name: p.restarts for p in deployment.processes},
        "exited_0": {p.name: p.clean_exits for p in deployment.processes if p.clean_exits},
        "refused_posts": dict(client.refused),
        "wall_s": round(drained - start, 1),
        "graded_per_s": round(n / (all_graded - start), 1),
        "drain_after_last_fault_s": round(drained - last_fault, 1),
        "timed_out": drained >= deadline,
    }


def _deliveries_pending(deployment: Deployment, receiver: WebhookReceiver, n: int) -> bool:
    try:
        with deployment.store.engine.connect() as conn:
            delivered = conn.execute(
                sa.select(sa.func.count())
                .select_from(webhook_deliveries)
                .where(webhook_deliveries.c.status == "delivered")
            ).scalar()
    except sa.exc.SQLAlchemyError:
        return True
    return delivered < n or len(receiver.ids()) < n


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m benchmarks.fault_soak", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--answers", type=int, default=3000)
    found.add_argument("--fail", type=float, default=0.05, help="receiver: share of 500s")
    found.add_argument("--hang", type=float, default=0.01, help="receiver: share of hangs")
    found.add_argument("--latency", type=float, default=0.0, help="scripted judge, s/batch")
    found.add_argument("--window", type=int, default=WINDOW, help="answers posted ahead")
    found.add_argument("--seed", type=int, default=0)
    found.add_argument("--workdir", type=Path, help="keep the logs here (default: a temp dir)")
    found.add_argument("--out", type=Path)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fault-soak-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        report = run(args.answers, workdir, args.fail, args.hang, args.seed, args.latency,
                     args.window)  # fmt: skip
        if not report["ok"]:
            print(logs(workdir))
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    report |= {"command": command(), "machine": machine, "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
