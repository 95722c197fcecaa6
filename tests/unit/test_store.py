"""The service store on a real SQLite file and a real PostgreSQL database: migrations,
idempotent writes, claims."""

from datetime import timedelta

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from grader.models import Grade, GradeStatus, Method, ReviewReason
from grader.service.store import AnswerCounts, NewSubmission, Store, StoredIdConflict
from grader.service.store.schema import (
    grades,
    metadata,
    review_queue,
    submissions,
    webhook_deliveries,
)
from grader.service.webhooks import payload


@pytest.fixture
def store(database_url):
    s = Store(database_url)
    s.migrate()
    yield s
    s.engine.dispose()


@pytest.fixture
def platform(store):
    return store.accounts.add_platform(
        "p", ["exam1"], "kid", "hash", "secret", "http://127.0.0.1:9/hook"
    )


def new(i, answer="B", question="q1"):
    return NewSubmission(f"s{i}", "exam1", question, answer, "stu")


def grade(stored, review=False):
    return Grade(
        submission_id=stored.external_id,
        question_id=stored.question_id,
        status=GradeStatus.GRADED,
        score=1.0,
        max_score=2.0,
        method=Method.JUDGE,
        needs_review=review,
        review_reasons=[ReviewReason(code="low_confidence", message="0.4")] if review else [],
        provenance={"rubric_version": "abc123", "latency_s": 0.5},
    )


def count(store, table):
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()


def test_migrating_an_empty_database_gives_the_declared_schema(database_url):
    store = Store(database_url)
    store.migrate()
    store.migrate()  # a second run is a no-op
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        if conn.dialect.name == "sqlite":
            assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
    store.engine.dispose()


def test_submit_twice_returns_the_stored_submission(store, platform):
    first = store.intake.submit(platform, [new(1), new(2)])
    assert [created for _, created in first] == [True, True]
    again = store.intake.submit(platform, [new(2), new(1)])
    assert [(s.id, created) for s, created in again] == [
        (first[1][0].id, False),
        (first[0][0].id, False),
    ]
    assert count(store, submissions) == 2


def test_a_changed_body_is_a_conflict_and_nothing_of_the_request_is_stored(store, platform):
    store.intake.submit(platform, [new(1)])
    with pytest.raises(StoredIdConflict) as caught:
        store.intake.submit(platform, [new(3), new(1, answer="C")])
    assert caught.value.external_ids == ["s1"]
    with pytest.raises(StoredIdConflict):  # the same id twice in one request, two bodies
        store.intake.submit(platform, [new(4), new(4, answer="C")])
    assert count(store, submissions) == 1


def test_ids_are_per_platform(store, platform):
    other = store.accounts.add_platform("q", ["exam1"], "kid2", "hash2", "secret2")
    store.intake.submit(platform, [new(1)])
    ((stored, created),) = store.intake.submit(other, [new(1, answer="different")])
    assert created and store.intake.submission(platform, "s1").answer == "B"
    assert store.intake.submission(other, "s1").id == stored.id


def test_recording_a_grade_twice_stores_it_once(store, platform):
    ((stored, _),) = store.intake.submit(platform, [new(1)])
    first = store.queue.record([(stored, grade(stored, review=True))])
    second = store.queue.record([(stored, grade(stored, review=True))])  # a redelivered task
    assert first == second and len(first) == 1
    assert (count(store, grades), count(store, review_queue), count(store, webhook_deliveries)) == (
        1,
        1,
        1,
    )
    found = store.intake.submission(platform, "s1")
    assert found.status == "graded" and found.grade.score == 1.0
    assert store.queue.queued([stored.id]) == []  # a redelivered task finds nothing left to grade
    assert store.metrics.counts()["totals"]["judge_latency_s"] == 0.5


def test_stale_submissions_are_claimed_once(store, platform):
    store.intake.submit(platform, [new(1), new(2)])
    claimed = store.queue.claim_stale(timedelta(0))
    assert [s.external_id for s in claimed] == ["s1", "s2"]
    assert store.queue.claim_stale(timedelta(minutes=5)) == []  # just claimed: not stale again


def test_dead_letter_fails_the_submissions(store, platform):
    ((stored, _),) = store.intake.submit(platform, [new(1)])
    store.queue.dead_letter("workers.tasks.grade_batch", [stored.id], "JudgeUnavailable: down")
    found = store.intake.submission(platform, "s1")
    assert found.status == "failed" and "down" in found.error
    assert store.metrics.counts()["totals"]["dead_letters"] == 1


def test_export_lists_each_submission_once_with_its_grade(store, platform):
    pairs = store.intake.submit(platform, [new(1), new(2)])
    store.queue.record([(pairs[0][0], grade(pairs[0][0]))])
    rows = list(store.intake.export(platform, "exam1"))
    assert [(r.external_id, r.status, r.grade is not None) for r in rows] == [
        ("s1", "graded", True),
        ("s2", "queued", False),
    ]
    assert list(store.intake.export(platform, "other")) == []


def test_an_override_wins_in_reads_exports_and_webhook_payloads(store, platform):
    (s, _), (other, _) = store.intake.submit(platform, [new(1), new(2)])
    [delivery] = store.queue.record([(s, grade(s, review=True))])[:1]
    store.queue.record([(other, grade(other))])
    assert store.reviews.add_override(s.id, 2.0, "right after all", "li")
    assert not store.reviews.add_override(
        s.id, 2.0, "right after all", "li"
    )  # the same, stored once
    seen = store.intake.submission(platform, "s1").grade
    assert (seen.score, seen.method, seen.needs_review) == (2.0, Method.INSTRUCTOR, False)
    assert seen.details.override.judge.model_dump(mode="json") == {
        "status": "graded",
        "score": 1.0,
        "method": "judge",
    }
    exported = {x.external_id: x.grade.score for x in store.intake.export(platform, "exam1")}
    assert exported == {"s1": 2.0, "s2": 1.0}
    # the first grade's webhook announces version 1 as it was; the override is version 2
    first = payload(store.outbox.delivery(delivery))
    assert (first["event"], first["version"], first["grade"]["score"]) == (
        "grade.completed", 1, 1.0,
    )  # fmt: skip
    [second] = store.reviews.add_override(s.id, 3.0, "even better", "li").deliveries
    update = payload(store.outbox.delivery(second))
    assert (update["event"], update["version"], update["grade"]["score"]) == (
        "grade.updated", 3, 3.0,
    )  # fmt: skip
    assert update["change"]["from"] == {"status": "graded", "score": 2.0}
    answer = store.reviews.answer(s.id)
    assert answer.submission.grade.score == 1.0 and answer.override.score == 3.0
    assert answer.open_review is None  # the override closed the review
    assert store.reviews.add_override(s.id, 0.5, "on second thought", "wang")
    assert store.intake.submission(platform, "s1").grade.score == 0.5  # the newest wins


def test_answer_counts_and_pages_come_from_the_database(store, platform):
    created = store.intake.submit(platform, [new(i, question=f"q{i % 2}") for i in range(7)])
    stored = [s for s, _ in created]
    store.queue.record([(s, grade(s, review=s.external_id in {"s0", "s3"})) for s in stored[:5]])
    instructor_id = store.accounts.add_instructor("li", ["exam1"], "ik", "hash")
    store.reviews.set_human_score(stored[2].id, instructor_id, 1.0, None)
    counts = store.reviews.counts("exam1")
    assert counts == {
        "q0": AnswerCounts(answers=4, graded=3, human=1, open_reviews=1),  # s0 s2 s4 s6
        "q1": AnswerCounts(answers=3, graded=2, human=0, open_reviews=1),  # s1 s3 s5
    }
    assert store.reviews.counts("exam1", "q1") == {"q1": counts["q1"]}
    assert store.reviews.counts("other") == {}
    page = store.reviews.answers("exam1", "q0", offset=1, limit=2)
    assert [a.submission.external_id for a in page] == ["s2", "s4"]
    assert page[0].human.score == 1.0 and page[1].submission.grade.score == 1.0
    assert [a.submission.external_id for a in store.reviews.answers("exam1", open_only=True)] == [
        "s0",
        "s3",
    ]
    scored = store.reviews.answers("exam1", scored_only=True)
    assert [a.submission.external_id for a in scored] == ["s2"]
    assert store.reviews.position(stored[6].id, "exam1", "q0") == 3
    assert store.reviews.position(stored[6].id, "exam1", "q1") is None
