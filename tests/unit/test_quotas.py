"""Quotas: a platform's queued submissions capped, requests per API key per minute,
failed logins per client address; each 429 with Retry-After, counted in the database so two
apps (two API processes) on one database share every count."""

import threading
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.api.keys import INSTRUCTOR_PREFIX, new_key
from grader.config import LimitSettings, ServiceSettings, Settings
from grader.service.exams import load_exams
from grader.service.store import NewSubmission, QueueFull, Store
from tests.conftest import RUBRICS
from tests.dispatchers import Holding

EXAM = "grad_accum_engineer"
CHOICE = "004-s1-q1"
NOW = 6_000_000_010.0  # 10 s into a minute: no window ends while a test runs


@pytest.fixture
def build(database_url, monkeypatch):
    """``build(**limits)``: two apps on one database, and each platform's auth header; the
    counters' clock stands still at NOW."""
    monkeypatch.setattr("grader.service.store.counters.time", SimpleNamespace(time=lambda: NOW))
    made: list[Store] = []

    def _build(**limits):
        service = ServiceSettings(database_url=database_url, banks=[RUBRICS / f"{EXAM}.yaml"])
        settings = Settings(service=service, limits=LimitSettings(**limits))
        store = Store(database_url)
        store.migrate()
        headers, instructor = {}, new_key(INSTRUCTOR_PREFIX)
        for name in ("a", "b"):
            key = new_key()
            store.accounts.add_platform(name, [EXAM], key.key_id, key.key_hash, "secret")
            headers[name] = {"Authorization": f"Bearer {key.key}"}
        store.accounts.add_instructor("li", [EXAM], instructor.key_id, instructor.key_hash)
        exams = load_exams(settings.service.banks)
        apps = [create_app(settings, Store(database_url), exams, Holding()) for _ in range(2)]
        made.append(store)
        return [TestClient(app) for app in apps], headers, instructor.key

    yield _build
    for store in made:
        store.engine.dispose()


def posts(*ids):
    return [{"id": i, "exam": EXAM, "question_id": CHOICE, "answer": "B"} for i in ids]


def test_a_platforms_queue_is_capped_across_processes(build):
    (one, two), auth, _ = build(max_queued_per_platform=3)
    assert one.post("/v1/submissions", json=posts("s1", "s2"), headers=auth["a"]).status_code == 202
    full = two.post("/v1/submissions", json=posts("s3", "s4"), headers=auth["a"])
    assert full.status_code == 429 and full.headers["Retry-After"] == "30"
    assert "2 submissions of this platform are queued" in full.json()["detail"]
    assert two.get("/v1/submissions/s3", headers=auth["a"]).status_code == 404  # nothing stored
    again = two.post("/v1/submissions", json=posts("s1", "s2", "s3"), headers=auth["a"])
    assert again.status_code == 202  # repeats take no room: one new submission fits
    assert one.post("/v1/submissions", json=posts("s4"), headers=auth["a"]).status_code == 429
    assert one.post("/v1/submissions", json=posts("s4"), headers=auth["b"]).status_code == 202


def test_concurrent_posts_never_queue_past_the_cap(database_url):
    """Twelve posts at once from twelve connections (as from twelve API processes), room for
    five: exactly five are stored, the others refused whole."""
    store = Store(database_url)
    store.migrate()
    platform = store.accounts.add_platform("a", [EXAM], "0" * 16, "h", "secret")
    stores = [Store(database_url) for _ in range(12)]
    start, outcomes = threading.Barrier(len(stores)), []

    def post(i: int) -> None:
        item = NewSubmission(f"s{i}", EXAM, CHOICE, "B")
        start.wait()
        try:
            stores[i].intake.submit(platform, [item], max_queued=5)
            outcomes.append("stored")
        except QueueFull:
            outcomes.append("full")

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["full"] * 7 + ["stored"] * 5
    assert store.metrics.counts()["submissions"] == {"queued": 5}
    for each in (store, *stores):
        each.engine.dispose()


def test_a_post_does_not_wait_for_a_workers_open_transaction(database_url):
    """PostgreSQL: a worker's transaction that stored a grade and settled its version (the
    version and its webhook delivery, rows with a foreign key to the platform, written under
    the lock that orders the platform's versions) is still open, ranking the review queue; a
    post of the same platform is stored at once, without waiting for it to commit."""
    if database_url.startswith("sqlite"):
        pytest.skip("SQLite has one write lock: every writer waits for the one holding it")
    from grader.models import Grade, GradeStatus, Method
    from grader.service.store import utcnow
    from grader.service.store.schema import grades
    from grader.service.store.versions import settle

    store, poster = Store(database_url), Store(database_url)
    store.migrate()
    platform = store.accounts.add_platform("a", [EXAM], "0" * 16, "h", "secret", "http://x/h")
    ((graded, _),) = store.intake.submit(platform, [NewSubmission("g", EXAM, CHOICE, "B")])
    grade = Grade(submission_id="g", question_id=CHOICE, status=GradeStatus.GRADED, score=1.0,
                  max_score=1.0, method=Method.JUDGE)  # fmt: skip
    stored = threading.Event()
    with store.engine.begin() as worker:  # the grading transaction, open
        now = utcnow()
        worker.execute(grades.insert().values(
            submission_id=graded.id, rubric_version="", status="graded", score=1.0,
            needs_review=False, record=grade.model_dump(mode="json"), created_at=now,
        ))  # fmt: skip
        assert settle(worker, [graded.id], "engine", None, now)  # a version, its delivery
        post = threading.Thread(target=lambda: (
            poster.intake.submit(platform, [NewSubmission("p", EXAM, CHOICE, "A")], max_queued=10),
            stored.set(),
        ))  # fmt: skip
        post.start()
        assert stored.wait(10), "the post waited for the worker's transaction"
    post.join()
    for each in (store, poster):
        each.engine.dispose()


def test_requests_per_key_are_limited_across_processes(build):
    (one, two), auth, _ = build(rate_limit_per_minute=4)
    for client in (one, two, one, two):
        assert client.get("/v1/exams", headers=auth["a"]).status_code == 200
    limited = one.get("/v1/exams", headers=auth["a"])
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "50"
    assert "GRADER_RATE_LIMIT_PER_MINUTE" in limited.json()["detail"]
    assert two.post("/v1/submissions", json=posts("s1"), headers=auth["a"]).status_code == 429
    assert two.get("/v1/exams", headers=auth["b"]).status_code == 200  # another key
    assert one.get("/v1/exams").status_code == 401  # no key: refused, not counted


def test_no_rate_limit_when_set_to_zero(build):
    (one, _), auth, _ = build(rate_limit_per_minute=0)
    assert all(one.get("/v1/exams", headers=auth["a"]).status_code == 200 for _ in range(8))


def test_failed_logins_are_throttled_per_client_address(build):
    (one, two), _, key = build(login_failures_per_minute=3)
    assert one.post("/instructor/login", data={"key": key}).status_code == 200  # no failure
    for client in (one, two, one):
        assert client.post("/instructor/login", data={"key": "ik_wrong"}).status_code == 401
    for tried in ("ik_wrong", key):  # the right key too: the address waits out the minute
        throttled = two.post("/instructor/login", data={"key": tried})
        assert throttled.status_code == 429 and throttled.headers["Retry-After"] == "50"
        assert "too many failed logins" in throttled.text
    elsewhere = TestClient(one.app, client=("192.0.2.7", 4000))
    response = elsewhere.post("/instructor/login", data={"key": key}, follow_redirects=False)
    assert response.status_code == 303


def test_counter_windows_roll_over_and_old_ones_are_deleted(database_url):
    store = Store(database_url)
    store.migrate()
    counters = store.counters
    assert [counters.hit("k", 60, now=120 + s).count for s in (0, 1, 59)] == [1, 2, 3]
    assert counters.count("k", 60, now=150).count == 3
    assert counters.hit("k", 60, now=150).retry_after_s == 30
    fresh = counters.hit("k", 60, now=180)
    assert fresh.count == 1 and fresh.retry_after_s == 60
    counters.hit("other", 60, now=180 + 3600 + 60)  # a new window: windows an hour old go
    assert counters.count("k", 60, now=180).count == 0
    store.engine.dispose()


def test_concurrent_hits_each_get_their_own_count(database_url):
    """The upsert is atomic: twelve connections hitting one bucket at once count 1 to 12."""
    store = Store(database_url)
    store.migrate()
    stores = [Store(database_url) for _ in range(12)]
    start, counts = threading.Barrier(len(stores)), []

    def hit(each: Store) -> None:
        start.wait()
        counts.append(each.counters.hit("key:k", 60, now=NOW).count)

    threads = [threading.Thread(target=hit, args=(each,)) for each in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(counts) == list(range(1, 13))
    for each in (store, *stores):
        each.engine.dispose()
