"""Worker task plumbing that needs no broker: the dead-letter record after the last retry, and
outages (the database, the broker) retried without a limit and never dead-lettered."""

import json
from types import SimpleNamespace

import pytest
from kombu.exceptions import OperationalError as BrokerAway
from sqlalchemy.exc import OperationalError

from grader.service.store import NewSubmission, Store
from tests.conftest import RUBRICS

EXAM = "grad_accum_engineer"


@pytest.fixture
def worker_store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    monkeypatch.setenv("GRADER_BANKS", json.dumps([str(RUBRICS / f"{EXAM}.yaml")]))
    monkeypatch.setenv("GRADER_JUDGE", "scripted")
    monkeypatch.setenv("GRADER_EMBED_MODEL", "none")
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
    from workers.queues import GRADE_QUEUE, GRADE_TASK, REGRADE_TASK

    before = {id(app) for app in _state._apps}
    dispatcher = CeleryDispatcher(
        Settings(service=ServiceSettings(redis_url="redis://127.0.0.1:1/0"))
    )
    try:
        assert [a for a in _state._apps if id(a) not in before] == [dispatcher.app]
        assert dispatcher.app.conf.task_routes == {
            GRADE_TASK: {"queue": GRADE_QUEUE},
            REGRADE_TASK: {"queue": GRADE_QUEUE},
        }
        assert {GRADE_TASK, REGRADE_TASK} <= set(dispatcher.app.tasks)
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


def grade_task(monkeypatch, retries: int, name: str | None = None):
    """The grading task (or the task ``name``) of an app whose tasks retry ``retries`` times,
    run eagerly, with the countdown of every retry it asks for."""
    from grader.config import Settings
    from workers.app import create_app
    from workers.queues import GRADE_TASK

    monkeypatch.setenv("GRADER_TASK_RETRIES", str(retries))
    task = create_app(Settings()).tasks[name or GRADE_TASK]
    countdowns, original = [], task.retry
    monkeypatch.setattr(
        task, "retry", lambda **kw: countdowns.append(kw["countdown"]) or original(**kw)
    )
    return task, countdowns


def test_a_database_outage_longer_than_the_retries_is_waited_out_not_dead_lettered(
    worker_store, monkeypatch
):
    """The database away for five tries of a task allowed one retry: it retries with a growing
    countdown and grades when the database is back; nothing is dead-lettered."""
    from workers.runtime import runtime

    platform = worker_store.accounts.add_platform("p", [EXAM], "kid", "hash", "secret")
    ((stored, _),) = worker_store.intake.submit(
        platform, [NewSubmission("s1", EXAM, "004-s1-q1", "B")]
    )
    queue = runtime().store.queue
    real, tries = queue.queued, []

    def away_five_times(ids):
        tries.append(ids)
        if len(tries) <= 5:
            raise OperationalError("SELECT", {}, ConnectionRefusedError("database is down"))
        return real(ids)

    monkeypatch.setattr(queue, "queued", away_five_times)
    task, countdowns = grade_task(monkeypatch, retries=1)
    result = task.apply(args=[[stored.id]])
    assert result.successful(), result.traceback
    assert len(tries) == 6 and result.result == 1
    assert countdowns == sorted(countdowns) and countdowns[-1] > countdowns[0]  # backoff
    assert worker_store.intake.submission(platform, "s1").status == "graded"
    assert worker_store.metrics.counts()["totals"]["dead_letters"] == 0


def test_a_bug_after_an_outage_still_gets_its_retries_then_is_dead_lettered(
    worker_store, monkeypatch
):
    """Retries an outage caused do not use up the task's: a bug met after three outages is
    retried twice (GRADER_TASK_RETRIES) before the dead letter, which names it."""
    from workers.runtime import runtime

    platform = worker_store.accounts.add_platform("p", [EXAM], "kid", "hash", "secret")
    ((stored, _),) = worker_store.intake.submit(
        platform, [NewSubmission("s1", EXAM, "004-s1-q1", "B")]
    )
    tries = []

    def broken(ids):
        tries.append(ids)
        raise KeyError("a bug, not an outage")

    monkeypatch.setattr(runtime().store.queue, "queued", broken)
    task, _ = grade_task(monkeypatch, retries=2)
    result = task.apply(args=[[stored.id]], kwargs={"outages": 3}, retries=3)
    assert isinstance(result.result, KeyError) and len(tries) == 3
    found = worker_store.intake.submission(platform, "s1")
    assert found.status == "failed" and found.error == "KeyError: 'a bug, not an outage'"
    assert worker_store.metrics.counts()["totals"]["dead_letters"] == 1


def test_a_task_that_stops_on_a_broker_outage_leaves_its_answers_queued(worker_store):
    """Redis away when even the retry's message could not be sent: no dead letter, and the
    answers stay queued for the redelivery or the sweeper."""
    from grader.config import Settings
    from workers.app import create_app
    from workers.queues import GRADE_TASK

    grade_batch = create_app(Settings()).tasks[GRADE_TASK]
    platform = worker_store.accounts.add_platform("p", [EXAM], "kid", "hash", "secret")
    ((stored, _),) = worker_store.intake.submit(
        platform, [NewSubmission("s1", EXAM, "004-s1-q1", "B")]
    )
    error = BrokerAway("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    grade_batch.on_failure(error, "task-id", ([stored.id],), {}, None)
    assert worker_store.intake.submission(platform, "s1").status == "queued"
    assert worker_store.metrics.counts()["totals"]["dead_letters"] == 0


def test_a_regrade_step_waits_out_an_outage_and_sends_the_next_batch(worker_store, monkeypatch):
    """A regrade job's step meets the database away four times with one retry allowed: it
    retries with backoff until the step runs, then sends the job's next batch as a task."""
    from grader.service import regrades
    from workers.queues import GRADE_QUEUE, REGRADE_TASK

    tries, sent = [], []

    def away_four_times(store, graders, stale_after, job_id):
        tries.append(job_id)
        if len(tries) <= 4:
            raise OperationalError("SELECT", {}, ConnectionRefusedError("database is down"))
        return regrades.Step(job=SimpleNamespace(finished=False))  # a batch done, more left

    monkeypatch.setattr(regrades, "step", away_four_times)
    task, countdowns = grade_task(monkeypatch, retries=1, name=REGRADE_TASK)
    monkeypatch.setattr(task.app, "send_task", lambda *a, **kw: sent.append((a, kw)))
    result = task.apply(args=[7])
    assert result.successful(), result.traceback
    assert tries == [7] * 5 and countdowns == sorted(countdowns) and len(countdowns) == 4
    assert sent == [((REGRADE_TASK,), {"args": [7], "countdown": 0, "queue": GRADE_QUEUE})]
