"""Worker task plumbing that needs no broker: the dead-letter record after the last retry."""

import pytest

from grader.service.store import NewSubmission, Store


@pytest.fixture
def worker_store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    import workers.runtime

    monkeypatch.setattr(workers.runtime, "_runtime", None)
    store = Store(url)
    store.migrate()
    return store


def test_a_task_out_of_retries_is_dead_lettered_and_its_submissions_failed(worker_store):
    from grader.config import Settings
    from workers.app import create_app
    from workers.queues import GRADE_TASK

    grade_batch = create_app(Settings()).tasks[GRADE_TASK]

    platform = worker_store.accounts.add_platform("p", ["e"], "kid", "hash", "secret")
    ((stored, _),) = worker_store.intake.submit(platform, [NewSubmission("s1", "e", "q", "answer")])
    grade_batch.on_failure(RuntimeError("database gone"), "task-id", ([stored.id],), {}, None)
    found = worker_store.intake.submission(platform, "s1")
    assert found.status == "failed" and found.error == "RuntimeError: database gone"
    assert worker_store.metrics.counts()["totals"]["dead_letters"] == 1
    assert grade_batch.acks_late and grade_batch.reject_on_worker_lost


def test_the_api_dispatcher_builds_the_one_app_with_the_shared_names():
    """The API process's only Celery app is its dispatcher's; it routes and registers the
    tasks under the names in workers.queues."""
    from celery import _state

    from grader.config import Settings
    from workers.dispatch import CeleryDispatcher
    from workers.queues import GRADE_QUEUE, GRADE_TASK, IO_QUEUE, WEBHOOK_TASK

    before = {id(app) for app in _state._apps}
    dispatcher = CeleryDispatcher(Settings(redis_url="redis://127.0.0.1:1/0"))
    try:
        assert [a for a in _state._apps if id(a) not in before] == [dispatcher.app]
        assert dispatcher.app.conf.task_routes == {
            GRADE_TASK: {"queue": GRADE_QUEUE},
            WEBHOOK_TASK: {"queue": IO_QUEUE},
        }
        assert {GRADE_TASK, WEBHOOK_TASK} <= set(dispatcher.app.tasks)
    finally:
        dispatcher.close()


def test_the_dispatcher_sends_gathered_batches_by_task_name():
    import threading

    from grader.config import Settings
    from workers.dispatch import CeleryDispatcher
    from workers.queues import GRADE_QUEUE, GRADE_TASK

    class Broker:  # the process boundary: what would go to Redis
        def __init__(self):
            self.sent, self.done = [], threading.Event()

        def send_task(self, name, args, queue):
            self.sent.append((name, args, queue))
            self.done.set()

    class Stored:
        def __init__(self, i):
            self.id, self.exam, self.question_id = i, "e", f"q{i % 2}"

    broker = Broker()
    settings = Settings(batch_size=2, batch_wait_ms=0)
    dispatcher = CeleryDispatcher(settings, app=broker)
    try:
        dispatcher.enqueue([Stored(i) for i in range(3)])
        assert broker.done.wait(10)
    finally:
        dispatcher.close()
    assert broker.sent == [
        (GRADE_TASK, [[0, 2]], GRADE_QUEUE),
        (GRADE_TASK, [[1]], GRADE_QUEUE),
    ]
