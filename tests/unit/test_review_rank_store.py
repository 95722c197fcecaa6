"""The review budget over an exam's stored grades: batches arrive one by one, the queue holds
a question's share of all of them (``service.store.review_rank``)."""

import pytest
import sqlalchemy as sa

from grader.engine.review.queue import rank_grades
from grader.models import Grade, GradeStatus, Method, ReviewReason
from grader.service.store import NewSubmission, Store
from grader.service.store.review_rank import RANKED_OUT
from grader.service.store.schema import review_queue


@pytest.fixture
def store(database_url):
    s = Store(database_url)
    s.migrate()
    yield s
    s.engine.dispose()


@pytest.fixture
def platform(store):
    return store.accounts.add_platform("p", ["exam1"], "kid", "hash", "secret", None)


def new(i):
    return NewSubmission(f"s{i}", "exam1", "q1", f"answer {i}", "stu")


def grade(stored, confidence, *codes):
    return Grade(
        submission_id=stored.external_id,
        question_id=stored.question_id,
        status=GradeStatus.GRADED,
        score=1.0,
        max_score=10.0,
        method=Method.JUDGE,
        confidence=confidence,
        needs_review=bool(codes),
        review_reasons=[ReviewReason(code=c, message=c) for c in codes],
        provenance={"rubric_version": "v1"},
    )


def open_reviews(db):
    with db.engine.connect() as conn:
        found = conn.execute(
            sa.select(review_queue.c.submission_id).where(review_queue.c.resolved_at.is_(None))
        )
        return {row.submission_id for row in found}


def post_batch(store, platform, start, confidences, *codes):
    """One batch graded alone (its own budget), then stored with the question ranked again
    in the same transaction."""
    stored = [
        s
        for s, _ in store.intake.submit(
            platform, [new(start + i) for i, _ in enumerate(confidences)]
        )
    ]
    graded = rank_grades(
        [grade(s, c, *codes) for s, c in zip(stored, confidences, strict=True)], 0.2
    )
    store.queue.record(list(zip(stored, graded, strict=True)), review_share=0.2)
    return stored


def test_the_budget_spans_batches_and_hard_reasons_stay(store, platform):
    first = post_batch(store, platform, 0, [0.5, 0.6, 0.7, 0.8, 0.9], "low_confidence")
    assert open_reviews(store) == {first[0].id}  # 20 % of 5
    # a second batch of surer answers: the first batch's least sure keeps its place and one more
    second = post_batch(store, platform, 10, [0.95, 0.96, 0.97, 0.98, 0.99])
    assert open_reviews(store) == {first[0].id, first[1].id}  # 20 % of 10
    # unsure answers arrive: they rank above, the earlier ones fall out of the queue
    third = post_batch(store, platform, 20, [0.1, 0.2, 0.3, 0.4, 0.45])
    assert open_reviews(store) == {third[0].id, third[1].id, third[2].id}  # 20 % of 15
    with store.engine.connect() as conn:
        closed = conn.execute(
            sa.select(review_queue.c.resolved_by).where(review_queue.c.submission_id == first[0].id)
        ).scalar_one()
    assert closed == RANKED_OUT
    # a hard reason is always reviewed, beside the budget
    (hard,) = post_batch(store, platform, 30, [0.99], "suspected_injection")
    assert hard.id in open_reviews(store) and len(open_reviews(store)) == 4
    assert second[0].id not in open_reviews(store)


def test_an_instructor_s_resolution_stays(store, platform):
    first = post_batch(store, platform, 0, [0.1, 0.6, 0.7, 0.8, 0.9])
    store.reviews.accept_judge(first[0].id, "ann")
    store.ranking.rerank("exam1", ["q1"], 0.2)
    assert open_reviews(store) == set()
