"""Flower against the grading service: a real redis-server, a real ``grader worker`` (scripted
judge) and ``grader flower`` as processes; Flower's API sees the worker, its queues and the
grading tasks it ran, and refuses requests without the credentials."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import pytest

from grader.api.keys import new_key
from grader.config import EmbeddingSettings, JudgeSettings, ServiceSettings, Settings
from grader.service.store import Store
from tests.integration.service import (
    NEEDS_REDIS,
    ROOT,
    RedisServer,
    SharedRedis,
    Worker,
    free_port,
    wait_for,
)
from workers.queues import GRADE_QUEUE, GRADE_TASK, IO_QUEUE

pytestmark = NEEDS_REDIS
pytest.importorskip("flower", reason="needs the flower extra")

BANK = ROOT / "rubrics" / "grad_accum_engineer.yaml"
AUTH = ("ops", "flower-test-password")


@pytest.fixture
def redis_url(tmp_path):
    shared = os.environ.get("GRADER_TEST_REDIS_URL")
    if shared:
        SharedRedis(shared).flush()
        yield shared
        return
    server = RedisServer(tmp_path)
    server.start()
    yield server.url
    server.kill()


@pytest.fixture
def env(tmp_path, redis_url):
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_REDIS_URL": redis_url,
        "GRADER_BANKS": f'["{BANK}"]',
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_BATCH_WAIT_MS": "50",
    }


@pytest.fixture
def flower(tmp_path, env):
    port = free_port()
    log = (tmp_path / "flower.log").open("a")
    process = subprocess.Popen(
        [sys.executable, "-m", "grader", "flower", "--port", str(port)],
        cwd=ROOT, env={**env, "FLOWER_BASIC_AUTH": ":".join(AUTH)},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    yield f"http://127.0.0.1:{port}"
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
    print((tmp_path / "flower.log").read_text()[-3000:])  # shown when the test failed


def _post_examples(env: dict[str, str], n: int) -> Store:
    """``n`` essay answers posted through the API (in this process) to the workers' queue."""
    from fastapi.testclient import TestClient

    from grader.api.app import create_app
    from grader.service.exams import load_exams
    from workers.dispatch import CeleryDispatcher

    service = ServiceSettings(
        database_url=env["GRADER_DATABASE_URL"], redis_url=env["GRADER_REDIS_URL"],
        banks=[BANK], batch_wait_ms=50,
    )  # fmt: skip
    settings = Settings(
        service=service,
        judge=JudgeSettings(backend="scripted"),
        embeddings=EmbeddingSettings(model="none"),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    key = new_key()
    store.accounts.add_platform("p", ["grad_accum_engineer"], key.key_id, key.key_hash, "s", None)
    dispatcher = CeleryDispatcher(settings)
    try:
        client = TestClient(
            create_app(settings, store, load_exams(settings.service.banks), dispatcher)
        )
        items = [
            {"id": f"f{i}", "exam": "grad_accum_engineer", "question_id": "004-s5-q1",
             "answer": f"梯度累积：每个micro-batch的loss除以累积步数，第{i}次。", "student": f"s{i}"}
            for i in range(n)
        ]  # fmt: skip
        response = client.post(
            "/v1/submissions", json=items, headers={"Authorization": f"Bearer {key.key}"}
        )
        assert response.status_code == 202, response.text
    finally:
        dispatcher.close()
    return store


def test_flower_sees_the_worker_its_queues_and_the_grading_tasks(tmp_path, env, flower):
    worker = Worker(env, tmp_path / "worker.log", concurrency=1)
    try:
        api = httpx.Client(base_url=flower, auth=AUTH, timeout=10)
        pid = worker.process.pid  # `grader worker` runs Celery's main process itself

        def our_worker():
            try:
                workers = api.get("/api/workers", params={"refresh": 1}).json()
            except (httpx.HTTPError, ValueError):
                return None
            mine = [(n, i) for n, i in workers.items() if i.get("stats", {}).get("pid") == pid]
            return mine[0] if mine else None

        name, info = wait_for(our_worker, 90, "Flower to list the grader worker")
        assert {q["name"] for q in info["active_queues"]} == {GRADE_QUEUE, IO_QUEUE}
        assert GRADE_TASK in info["registered"]
        # Without the credentials, Flower's API answers nothing.
        assert httpx.get(f"{flower}/api/workers", timeout=10).status_code == 401

        store = _post_examples(env, 3)
        wait_for(
            lambda: store.metrics.counts()["submissions"].get("graded", 0) == 3, 60, "3 grades"
        )

        def grading_tasks():
            tasks = api.get("/api/tasks").json().values()
            return [t for t in tasks if t["name"] == GRADE_TASK and t["state"] == "SUCCESS"]

        done = wait_for(grading_tasks, 30, "Flower to record the grading task")
        assert {t["worker"] for t in done} == {name}
    finally:
        worker.stop()
        print((tmp_path / "worker.log").read_text()[-3000:])
