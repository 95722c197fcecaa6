"""The grading service under faults: every answer graded once and its webhook delivered, while
the API, Redis, PostgreSQL, the workers and the platform's endpoint are killed or failing.

The deployment (``lib/deployment.py``): 2 ``grader serve`` processes, 2 grading workers, 1
webhook worker, PostgreSQL, Redis, all on 127.0.0.1 under a restart-on-failure supervisor. A
webhook receiver answers 500 to ``--fail`` of the posts, hangs past the sender's timeout on
``--hang`` of them, and checks every signature. A client posts ``--answers`` answers of three
exams from two platforms in bulks of 25, to either API (the other when one does not answer),
keeping at most ``WINDOW`` answers ahead of grading, as a platform with a steady stream does.
At set shares of the answers graded it SIGKILLs one API, Redis (restarted after 1 s), stops
PostgreSQL immediately (started again after 3 s), SIGKILLs a whole grading worker, one
grading worker's pool process and the webhook worker; the supervisor restarts what exited
non-zero. Just before each fault an instructor overrides ``CHANGED`` graded answers (a grade
version 2 each). Then it waits for every grade and webhook and checks, from the database and
the receiver: every answer graded exactly once (0 lost, 0 duplicate grades, none failed), one
webhook delivery per grade version, each received and signed, each answer's versions in
order, and no service process that exited 0 (left stopped by its supervisor). Wall time, answers/s and the time to drain after the last
fault are reported, not checked.

    python -m benchmarks.fault_soak --answers 3000 --out benchmarks/results/fault_soak_3000.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import sqlalchemy as sa

from benchmarks.lib import fault_recovery, webhook_rate
from benchmarks.lib.common import ROOT, code_version, command
from benchmarks.lib.deployment import EXAMS, PLATFORMS, SECRET, Deployment, logs
from grader.service.store.schema import dead_letters, grades, submissions, webhook_deliveries
from tests.integration.service import WebhookReceiver

BULK = 25
WINDOW = 400  # answers posted and not yet graded, at most
POSTGRES_DOWN_S, REDIS_DOWN_S = 3.0, 1.0
FAULTS = ("api", "redis", "postgres", "grade_worker", "pool_process", "webhook_worker")
SHARES = (0.10, 0.25, 0.40, 0.55, 0.70, 0.85)  # of the answers graded, when each fault hits
CHANGED = 5  # graded answers an instructor overrides just before each fault (a version 2 each)
OUTAGE_GRACE_S = 5.0  # a post this long after the service was whole again still met a fault


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
    waiting to be graded. ``posts`` has every try: (when, seconds, "202" or why not), the
    times from ``origin``."""

    def __init__(self, deployment: Deployment, bulks: list[tuple[str, list[dict]]],
                 graded: Callable[[], int], window: int, origin: float):  # fmt: skip
        super().__init__(name="client", daemon=True)
        self.deployment, self.bulks, self.graded = deployment, bulks, graded
        self.window, self.origin = window, origin
        self.posted = 0
        self.posts: list[tuple[float, float, str]] = []

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
            sent = time.monotonic()
            try:
                response = http.post(f"{base}/v1/submissions", json=bulk, headers=headers)
                outcome = str(response.status_code)
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            self.posts.append((sent - self.origin, time.monotonic() - sent, outcome))
            if outcome == "202":
                return
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


def tally(deployment: Deployment, receiver: WebhookReceiver, n: int, changed: int) -> dict:
    """What the database and the receiver say, and whether it is all exactly once: ``changed``
    answers were overridden (a second version each)."""
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
        dead = Counter(conn.execute(sa.select(dead_letters.c.error)).scalars())
    with receiver.lock:
        received = list(receiver.received)
    deliveries_by_answer: dict[str, set[str]] = {}
    versions: dict[str, list] = {}  # each answer's versions, as their deliveries first arrived
    for r in received:
        if r["delivery"] not in deliveries_by_answer.setdefault(r["submission_id"], set()):
            versions.setdefault(r["submission_id"], []).append(r["payload"].get("version"))
        deliveries_by_answer[r["submission_id"]].add(r["delivery"])
    stored = sum(statuses.values())
    # what each delivery announced: a first grade is version 1 (``grade.completed``)
    once = {r["delivery"]: r["payload"] for r in received}.values()
    announced = dict(Counter(f"{p['event']} v{p.get('version')}" for p in once))
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
        "changed": changed,
        "versions_delivered_twice": sum(len(v) > len(set(v)) for v in versions.values()),
        "versions_out_of_order": sum(
            v != sorted(v, key=lambda x: x or 0) for v in versions.values()
        ),
        "webhook_retransmissions": len(received) - sum(map(len, deliveries_by_answer.values())),
        "webhook_versions": announced,
        "unsigned_webhooks": sum(not r["valid"] for r in received),
        "receiver_faults": dict(receiver.faults),
        "dead_letters": sum(dead.values()),
        "dead_letter_errors": {error[:200]: count for error, count in dead.most_common(5)},
    }


def correct(t: dict) -> bool:
    """Exactly once: every answer stored and graded once, one webhook per version, received
    signed and in version order."""
    n = t["answers"]
    return (t["stored"] == n and t["lost"] == 0 and t["duplicate_grades"] == 0
            and t["submission_statuses"] == {"graded": n}
            and t["delivery_statuses"] == {"delivered": n + t["changed"]}
            and t["answers_with_webhook"] == n and t["versions_delivered_twice"] == 0
            and t["versions_out_of_order"] == 0
            and t["unsigned_webhooks"] == 0)  # fmt: skip


def run(n: int, workdir: Path, fail: float = 0.05, hang: float = 0.01, seed: int = 0,
        latency_s: float = 0.0, window: int = WINDOW, drain_timeout_s: float | None = None,
        code: Path = ROOT) -> dict:  # fmt: skip
    """The soak at ``n`` answers in ``workdir`` running the checkout ``code``: the report
    (``ok`` says whether it held)."""
    rng, rng_lock = random.Random(seed), threading.Lock()

    def fault() -> str | None:
        with rng_lock:
            x = rng.random()
        return "fail" if x < fail else "hang" if x < fail + hang else None

    receiver = WebhookReceiver(SECRET, fault=fault, hang_s=3.0)  # past the 2 s sender timeout
    workdir.mkdir(parents=True, exist_ok=True)
    deployment = Deployment(workdir, receiver.url, latency_s, code)
    try:
        report = _soak(deployment, receiver, n, window, drain_timeout_s or 120 + n / 10)
    finally:
        deployment.close()
        receiver.close()
    report["postgres_lock_waits_over_200ms"] = deployment.lock_waits  # by what waited
    return report


def _soak(deployment: Deployment, receiver: WebhookReceiver, n: int, window: int,
          timeout: float) -> dict:  # fmt: skip
    latest = [0]

    def graded() -> int:
        count = deployment.graded()
        latest[0] = latest[0] if count is None else count
        return latest[0]

    start = time.monotonic()
    client = Client(deployment, answers(n), lambda: latest[0], window, start)
    faults, pending = [], list(zip(FAULTS, SHARES, strict=True))
    changed = 0
    client.start()
    deadline = start + timeout
    while time.monotonic() < deadline and (pending or "back_s" not in faults[-1]):
        settled = deployment.settled()
        if faults and "back_s" not in faults[-1] and settled:
            faults[-1]["back_s"] = round(time.monotonic() - start, 1)
        after = min(n, faults[-1]["graded"] + 1) if faults else 0  # graded since the last
        if pending and graded() >= max(after, pending[0][1] * n) and settled:
            fault, _ = pending.pop(0)
            changed += deployment.override(CHANGED, f"read again before the {fault} fault")
            at = time.monotonic() - start
            inject(deployment, fault)
            faults.append({"fault": fault, "graded": latest[0], "at_s": round(at, 1)})
        time.sleep(0.1)
    last_fault = time.monotonic()
    while time.monotonic() < deadline and graded() < n:
        time.sleep(0.2)
    all_graded = time.monotonic()
    while time.monotonic() < deadline and _deliveries_pending(deployment, receiver, n, changed):
        time.sleep(0.2)
    drained = time.monotonic()
    client.join(5)
    t = tally(deployment, receiver, n, changed)
    posts = post_figures(client.posts, faults)
    own = exits_on_their_own(deployment, [f["fault"] for f in faults])
    return {
        "ok": correct(t) and not pending and not any(p.clean_exits for p in deployment.processes)
        and not any(own.values()) and t["dead_letters"] == 0
        and posts["failed_outside_outages"] == 0,
        **t,
        "posts": posts,
        "faults": faults,
        "faults_not_reached": [f for f, _ in pending],
        "restarts": {p.name: p.restarts for p in deployment.processes},
        "exits_on_their_own": own,
        "exited_0": {p.name: p.clean_exits for p in deployment.processes if p.clean_exits},
        "wall_s": round(drained - start, 1),
        "graded_per_s": round(n / (all_graded - start), 1),
        "drain_after_last_fault_s": round(drained - last_fault, 1),
        "timed_out": drained >= deadline,
    }  # fmt: skip


def post_figures(posts: list[tuple[float, float, str]], faults: list[dict]) -> dict:
    """Every post's latency (p50, p99, max) and the failed ones, inside a fault's window (from
    the fault to ``OUTAGE_GRACE_S`` after the service was whole again; a post in flight when
    it began is inside) or outside."""
    windows = [(f["at_s"], f.get("back_s", f["at_s"]) + OUTAGE_GRACE_S) for f in faults]
    outside = [p for p in posts if not any(a <= p[0] + p[1] and p[0] <= b for a, b in windows)]
    failed = Counter(outcome for _, _, outcome in posts if outcome != "202")
    failed_outside = Counter(outcome for _, _, outcome in outside if outcome != "202")
    return {
        "tries": len(posts),
        **_quantiles([s for _, s, _ in posts], ""),
        **_quantiles([s for _, s, _ in outside], "outside_outages_"),
        "failed": dict(failed),
        "failed_outside_outages": sum(failed_outside.values()),
        "failed_outside_outages_by_reason": dict(failed_outside),
        "failed_outside_outages_at_s": [round(at, 1) for at, _, o in outside if o != "202"][:20],
        "slowest": sorted(((round(s, 2), round(at, 1), o) for at, s, o in posts), reverse=True)[
            :10
        ],
    }


def _quantiles(seconds: list[float], prefix: str) -> dict:
    if len(seconds) < 2:
        return {}
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return {f"{prefix}p50_s": round(cuts[49], 3), f"{prefix}p99_s": round(cuts[98], 3),
            f"{prefix}max_s": round(max(seconds), 3)}  # fmt: skip


KILLED = {"api": "api0", "grade_worker": "grade0", "webhook_worker": "io"}  # what each restarts


def exits_on_their_own(deployment: Deployment, faults: list[str]) -> dict[str, int]:
    """Restarts the soak did not cause by killing the process: each is a process that
    stopped by itself (a worker that Redis or PostgreSQL restarting under it stopped)."""
    caused = Counter(KILLED[f] for f in faults if f in KILLED)
    return {p.name: p.restarts - caused[p.name] for p in deployment.processes}


def _deliveries_pending(deployment: Deployment, receiver: WebhookReceiver, n: int,
                        changed: int) -> bool:  # fmt: skip
    try:
        with deployment.store.engine.connect() as conn:
            delivered = conn.execute(
                sa.select(sa.func.count())
                .select_from(webhook_deliveries)
                .where(webhook_deliveries.c.status == "delivered")
            ).scalar()
    except sa.exc.SQLAlchemyError:
        return True
    return delivered < n + changed or len(receiver.ids()) < n


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
    found.add_argument("--before", type=Path, help="a checkout of older code: run it too, first")
    found.add_argument(
        "--broker-restart",
        type=int,
        metavar="ROUNDS",
        help="instead: Redis restarted ROUNDS times under one grading worker",
    )
    found.add_argument(
        "--webhooks",
        type=int,
        metavar="N",
        help="instead: N webhooks sent by each sender, deliveries per second",
    )
    found.add_argument("--workdir", type=Path, help="keep the logs here (default: a temp dir)")
    found.add_argument("--out", type=Path)
    return found


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fault-soak-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.broker_restart:
            report = fault_recovery.compare(args.before, workdir, args.broker_restart)
        elif args.webhooks:
            report = webhook_rate.compare(args.before, workdir, args.webhooks, cap_s=60)
        else:
            report = {}
            for label, code in (("before", args.before), ("after", ROOT)):
                if code is None:
                    continue
                report[label] = run(args.answers, workdir / label, args.fail, args.hang,
                                    args.seed, args.latency, args.window, code=code)  # fmt: skip
                report[label]["code"] = str(code)
                if not report[label]["ok"]:
                    print(logs(workdir / label))
            if args.before is None:
                report = report["after"]
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    report |= {"command": command(), "machine": machine, "date": time.strftime("%Y-%m-%d"),
               "load_average": os.getloadavg(), "code": code_version()}  # fmt: skip
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
