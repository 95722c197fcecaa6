"""The grading service end to end: the HTTP API, a real redis-server, real Celery worker
processes and the scripted judge. Exactly once under SIGKILL and Redis restarts."""

from __future__ import annotations

import json
import os
import signal
import time
from unittest import mock

import psutil
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.api.keys import new_key
from grader.config import Settings
from grader.service.exams import load_exams
from grader.service.store import Store
from grader.service.store.schema import grades, webhook_deliveries
from tests.integration.service import (
    NEEDS_REDIS,
    ROOT,
    RedisServer,
    SharedRedis,
    WebhookReceiver,
    Worker,
    wait_for,
)
from workers.dispatch import CeleryDispatcher

pytestmark = NEEDS_REDIS

BANK = ROOT / "rubrics" / "grad_accum_engineer.yaml"
EXAM = "grad_accum_engineer"
SECRET = "whsec_test-secret"
EXAMPLES = [
    json.loads(line)
    for line in (ROOT / "examples" / "grad_accum_engineer.submissions.jsonl").open()
]


def submissions(n: int, prefix: str, subjective_only: bool = False) -> list[dict]:
    pool = [e for e in EXAMPLES if not subjective_only or e["question_id"].startswith("004-s5")
            or e["question_id"].startswith("004-s6")]  # fmt: skip
    return [
        {
            "id": f"{prefix}-{i}",
            "exam": EXAM,
            "question_id": pool[i % len(pool)]["question_id"],
            "answer": pool[i % len(pool)]["answer"],
            "student": pool[i % len(pool)]["student"],
        }
        for i in range(n)
    ]


class Service:
    """API in this process (TestClient), workers as processes, one SQLite file, one Redis."""

    def __init__(self, tmp_path, redis: RedisServer, receiver: WebhookReceiver, **overrides):
        self.tmp_path, self.redis = tmp_path, redis
        values = {
            "database_url": f"sqlite:///{tmp_path / 'grader.db'}",
            "redis_url": redis.url,
            "banks": [str(BANK)],
            "judge": "scripted",
            "embed_model": "none",  # durability, not signals: no model in every worker
            "batch_size": 25,
            "batch_wait_ms": 50,
            "visibility_timeout_s": 8,
            "sweep_interval_s": 1,
            "sweep_after_s": 4,
            "retry_backoff_s": 0.2,
            "webhook_allow_private": True,  # the receiver listens on 127.0.0.1
            **overrides,
        }
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            **{f"GRADER_{k.upper()}": json.dumps(v) if isinstance(v, list) else str(v)
               for k, v in values.items()},
        }  # fmt: skip
        with mock.patch.dict(os.environ, self.env):  # the workers' settings, read as they do
            self.settings = Settings()
        self.store = Store(self.settings.service.database_url)
        self.store.migrate()
        key = new_key()
        self.store.accounts.add_platform(
            "exams-r-us", [EXAM], key.key_id, key.key_hash, SECRET, receiver.url
        )
        self.headers = {"Authorization": f"Bearer {key.key}"}
        self.dispatcher = CeleryDispatcher(self.settings)
        app = create_app(
            self.settings, self.store, load_exams(self.settings.service.banks), self.dispatcher
        )
        self.client = TestClient(app)
        self.workers: list[Worker] = []

    def start_worker(self) -> Worker:
        worker = Worker(self.env, self.tmp_path / f"worker{len(self.workers)}.log")
        self.workers.append(worker)
        return worker

    def post(self, items: list[dict], bulk: int = 200) -> None:
        for start in range(0, len(items), bulk):
            response = self.client.post(
                "/v1/submissions", json=items[start : start + bulk], headers=self.headers
            )
            assert response.status_code == 202, response.text

    def graded(self) -> int:
        return self.store.metrics.counts()["submissions"].get("graded", 0)

    def grade_rows(self) -> tuple[int, int]:
        with self.store.engine.connect() as conn:
            return conn.execute(
                sa.select(sa.func.count(), sa.func.count(sa.distinct(grades.c.submission_id)))
            ).one()

    def deliveries(self) -> int:
        with self.store.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(webhook_deliveries)).scalar()

    def logs(self, tail: int | None = 4000) -> str:
        return "\n".join(
            p.read_text()[-tail if tail else 0 :] for p in sorted(self.tmp_path.glob("*.log"))
        )

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.dispatcher.close()


@pytest.fixture
def redis(tmp_path, request):
    """The redis-server .ci/run started (GRADER_TEST_REDIS_URL), emptied; or one of our own,
    always for a test that restarts it (parametrized "own")."""
    shared = os.environ.get("GRADER_TEST_REDIS_URL")
    if shared and getattr(request, "param", "shared") == "shared":
        SharedRedis(shared).flush()
        yield SharedRedis(shared)
        return
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def receiver():
    r = WebhookReceiver(SECRET, refuse_first=lambda sid: sid.endswith("7"))
    yield r
    r.close()


@pytest.fixture
def service(tmp_path, redis, receiver, request):
    overrides = getattr(request, "param", {})
    s = Service(tmp_path, redis, receiver, **overrides)
    yield s
    s.close()
    print(s.logs())  # pytest shows it when the test failed


@pytest.mark.parametrize("service", [{"sweep_after_s": 60}], indirect=True)
def test_thousand_submissions_graded_exactly_once_with_signed_webhooks(service, receiver):
    items = submissions(1000, "a")
    service.start_worker()
    service.post(items)  # bulk posts of 200
    wait_for(lambda: service.graded() == 1000, 90, "1000 grades")
    assert service.grade_rows() == (1000, 1000)

    # A repeated post returns the original and stores nothing new.
    again = service.client.post("/v1/submissions", json=items[:3], headers=service.headers)
    assert again.status_code == 202
    assert [s["duplicate"] for s in again.json()["submissions"]] == [True] * 3
    assert [s["status"] for s in again.json()["submissions"]] == ["graded"] * 3
    one = service.client.get("/v1/submissions/a-5", headers=service.headers).json()
    assert one["status"] == "graded" and one["grade"]["submission_id"] == "a-5"

    # Every grade reaches the platform, signed; refused first tries were retried.
    wanted = {i["id"] for i in items}
    wait_for(lambda: receiver.ids() == wanted, 60, "a webhook for every grade")
    assert all(r["valid"] for r in receiver.received)
    assert receiver.refused and receiver.refused <= receiver.ids()
    assert service.deliveries() == 1000
    sample = next(r["payload"] for r in receiver.received if r["submission_id"] == "a-5")
    assert sample["grade"] == one["grade"]
    assert service.grade_rows() == (1000, 1000)


# No sweeper help here (it waits 300 s): redelivery alone must bring the batches back.
@pytest.mark.parametrize(
    "service", [{"scripted_latency_s": 0.3, "sweep_after_s": 300}], indirect=True
)
def test_sigkill_mid_batch_loses_and_duplicates_nothing(service):
    items = submissions(600, "k", subjective_only=True)  # every batch waits 0.3 s on the judge
    worker = service.start_worker()
    service.post(items)
    wait_for(lambda: service.graded() >= 50, 60, "grading to start")

    # Both pool processes die mid-batch: the main process requeues their tasks.
    time.sleep(0.15)
    for child in psutil.Process(worker.process.pid).children():
        os.kill(child.pid, signal.SIGKILL)
    wait_for(lambda: "WorkerLostError" in service.logs(tail=None), 10, "the kill to hit tasks")
    wait_for(lambda: service.graded() >= 200, 60, "grading to continue")

    # The whole worker dies mid-batch: its unacknowledged tasks come back to a new worker
    # (after the visibility timeout).
    time.sleep(0.15)
    worker.kill(signal.SIGKILL)
    assert service.graded() < 600, "the kill must land mid-run"
    service.start_worker()
    wait_for(lambda: service.graded() == 600, 120, "the rest after the restart")
    assert service.grade_rows() == (600, 600)


@pytest.mark.parametrize("redis", ["own"], indirect=True)
@pytest.mark.parametrize("service", [{"scripted_latency_s": 0.1}], indirect=True)
def test_redis_restart_mid_run_loses_nothing(service, redis):
    first, second = submissions(400, "r1", True), submissions(100, "r2")
    service.start_worker()
    service.post(first)
    wait_for(lambda: service.graded() >= 50, 60, "grading to start")
    redis.kill()
    # Posts while Redis is down are stored (202); their tasks cannot be sent yet.
    service.post(second)
    redis.start()
    wait_for(lambda: service.graded() == 500, 120, "every submission after the restart")
    assert service.grade_rows() == (500, 500)
    assert service.workers[0].process.poll() is None, "the worker must survive the restart"


@pytest.mark.parametrize(
    "service",
    [
        {
            # A judge server that is down: every subjective answer is a transient failure.
            "judge": "openai",
            "openai_base_url": "http://127.0.0.1:9/v1",
            "openai_model": "absent",
            "openai_retries": 0,
            "task_retries": 2,
        }
    ],
    indirect=True,
)
def test_an_unreachable_judge_is_retried_then_dead_lettered(service):
    items = submissions(40, "obj") + submissions(20, "essay", subjective_only=True)
    # Subjective answers need the judge; a blank one scores 0 by rule without it.
    subjective = {i["id"] for i in items
                  if i["question_id"].startswith(("004-s5", "004-s6")) and len(i["answer"].strip()) >= 2}  # fmt: skip
    assert len(subjective) >= 15
    service.start_worker()
    service.post(items)
    wait_for(lambda: service.store.metrics.counts()["submissions"].get("failed", 0) == len(subjective),
             60, "the subjective answers to be dead-lettered")  # fmt: skip
    counts = service.store.metrics.counts()
    assert counts["submissions"] == {"graded": 60 - len(subjective), "failed": len(subjective)}
    assert counts["totals"]["dead_letters"] >= 1
    failed = service.client.get(
        f"/v1/submissions/{min(subjective)}", headers=service.headers
    ).json()
    assert failed["status"] == "failed" and "judge unavailable" in failed["error"]
    assert failed["grade"] is None  # no silent score
    logs = service.logs(tail=None)
    assert logs.count("grade_batch") and "Retry in" in logs
