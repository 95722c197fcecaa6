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

    from grader.config import ServiceSettings, Settings
    from workers.dispatch import CeleryDispatcher
    from workers.queues import GRADE_QUEUE, GRADE_TASK, IO_QUEUE, REGRADE_TASK, WEBHOOK_TASK

    before = {id(app) for app in _state._apps}
    dispatcher = CeleryDispatcher(
        Settings(service=ServiceSettings(redis_url="redis://127.0.0.1:1/0"))
    )
    try:
        assert [a for a in _state._apps if id(a) not in before] == [dispatcher.app]
        assert dispatcher.app.conf.task_routes == {
            GRADE_TASK: {"queue": GRADE_QUEUE},
            WEBHOOK_TASK: {"queue": IO_QUEUE},
            REGRADE_TASK: {"queue": GRADE_QUEUE},
        }
        assert {GRADE_TASK, WEBHOOK_TASK} <= set(dispatcher.app.tasks)
    finally:
        dispatcher.close()


def test_the_dispatcher_sends_gathered_batches_by_task_name():
    import threading

    from grader.config import ServiceSettings, Settings
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
    settings = Settings(service=ServiceSettings(batch_size=2, batch_wait_ms=0))
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


def test_a_webhook_task_retries_a_database_outage_with_backoff(worker_store, monkeypatch):
    """The database away for two tries: the task retries (with its countdown) and delivers,
    instead of leaving the webhook to the sweeper."""
    import httpx
    from sqlalchemy.exc import OperationalError

    from grader.config import Settings
    from grader.models import Grade, GradeStatus, Method
    from workers.app import create_app
    from workers.queues import WEBHOOK_TASK
    from workers.runtime import runtime

    platform = worker_store.accounts.add_platform(
        "p", ["e"], "kid", "hash", "secret", "http://platform/hook"
    )
    ((stored, _),) = worker_store.intake.submit(platform, [NewSubmission("s1", "e", "q", "A")])
    grade = Grade(submission_id="s1", question_id="q", status=GradeStatus.GRADED, score=1.0,
                  max_score=1.0, method=Method.EXACT)  # fmt: skip
    (delivery_id,) = worker_store.queue.record([(stored, grade)])

    rt = runtime()
    sent = []
    rt.__dict__["http"] = httpx.Client(
        transport=httpx.MockTransport(lambda request: sent.append(request) or httpx.Response(204))
    )
    real, tries = rt.store.outbox.delivery, []

    def away_twice(i):
        tries.append(i)
        if len(tries) <= 2:
            raise OperationalError("SELECT", {}, ConnectionRefusedError("database is down"))
        return real(i)

    monkeypatch.setattr(rt.store.outbox, "delivery", away_twice)
    countdowns = []
    task = create_app(Settings()).tasks[WEBHOOK_TASK]
    original_retry = task.retry
    monkeypatch.setattr(
        task, "retry", lambda **kw: countdowns.append(kw["countdown"]) or original_retry(**kw)
    )
    result = task.apply(args=[delivery_id])
    assert result.successful(), result.traceback
    assert len(tries) == 3 and len(sent) == 1
    assert countdowns[0] > 0 and countdowns[1] > countdowns[0]  # backoff, doubling
    assert worker_store.outbox.delivery(delivery_id).status == "delivered"


def test_a_webhook_task_does_not_retry_a_bug(worker_store, monkeypatch):
    from grader.config import Settings
    from workers.app import create_app
    from workers.queues import WEBHOOK_TASK
    from workers.runtime import runtime

    def broken(i):
        raise KeyError("a bug, not an outage")

    monkeypatch.setattr(runtime().store.outbox, "delivery", broken)
    result = create_app(Settings()).tasks[WEBHOOK_TASK].apply(args=[1])
    assert isinstance(result.result, KeyError)
