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
