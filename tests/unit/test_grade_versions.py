"""Every change to a grade is a version: stored with what changed it, announced by one signed
webhook per version, in order, and listed by the changes feed; on SQLite and PostgreSQL."""

import json
import threading
from datetime import timedelta

import httpx
import pytest
import sqlalchemy as sa
from alembic import command

from grader.config import JudgeSettings, ServiceSettings, Settings, WebhookSettings
from grader.models import Grade, GradeStatus, Method
from grader.service import refits
from grader.service.courier import Courier
from grader.service.exams import load_exams
from grader.service.store import NewSubmission, Store
from grader.service.store.engine import alembic_config
from grader.service.store.records import utcnow
from grader.service.store.schema import grade_overrides, grade_versions, webhook_deliveries
from grader.service.store.versions import settle
from grader.service.webhooks import payload
from tests.conftest import RUBRICS
from tests.embedders import CountingEmbedder
from tests.integration.service import WebhookReceiver, wait_for
from tests.refit_exam import EXAM, QUESTIONS, scored_exam


@pytest.fixture
def store(database_url):
    s = Store(database_url)
    s.migrate()
    yield s
    s.engine.dispose()


def graded(stored, score=1.0, points=(0.5, 0.5)):
    return Grade(
        submission_id=stored.external_id, question_id=stored.question_id,
        status=GradeStatus.GRADED, score=score, max_score=2.0, method=Method.JUDGE,
        criteria=[{"id": f"C{i + 1}", "points": p, "max_points": 1.0} for i, p in enumerate(points)],
        provenance={"rubric_version": "r1"},
    )  # fmt: skip


def versions_of(store, submission_id):
    return [(c.version, c.cause, c.actor, c.score) for c in store.versions.history(submission_id)]


def test_each_change_is_a_version_with_one_delivery_in_order(store):
    platform = store.accounts.add_platform("p", ["e"], "kid", "h", "sec", "http://127.0.0.1:9/h")
    li = store.accounts.add_instructor("li", ["e"], "ik", "h")
    [(s, _)] = store.intake.submit(platform, [NewSubmission("s1", "e", "q1", "A", "amy")])
    first = store.queue.record([(s, graded(s))])
    assert versions_of(store, s.id) == [(1, "engine", None, 1.0)]
    # the same grade again (a redelivered task), a re-ranking: nothing a platform reads moved
    assert store.queue.record([(s, graded(s))]) == first
    assert versions_of(store, s.id) == [(1, "engine", None, 1.0)]

    saved = store.reviews.set_human_score(s.id, li, 2.0, {"C1": 1.0, "C2": 1.0})
    assert saved and len(saved.deliveries) == 1
    seen = store.intake.submission(platform, "s1")
    assert (seen.grade.score, seen.grade.method, seen.version) == (2.0, Method.INSTRUCTOR, 2)
    assert [c.points for c in seen.grade.criteria] == [1.0, 1.0]  # the instructor's points
    assert seen.grade.details.override.judge.score == 1.0  # the judge's grade is kept
    assert not store.reviews.set_human_score(s.id, li, 2.0, {"C1": 1.0, "C2": 1.0}).deliveries
    store.reviews.add_override(s.id, 0.0, "copied", "wang")
    store.reviews.set_human_score(s.id, li, 1.5, None)  # newer than the override: it wins
    assert versions_of(store, s.id) == [
        (1, "engine", None, 1.0), (2, "score", "li", 2.0), (3, "override", "wang", 0.0),
        (4, "score", "li", 1.5),
    ]  # fmt: skip
    assert store.intake.submission(platform, "s1").grade.score == 1.5

    # one delivery per version; only the oldest pending one of a submission is due, and it
    # stays the only one while it is claimed (a sender trying it) or waits for its retry
    lease = timedelta(seconds=60)
    [claimed] = store.outbox.claim_due(10, lease)
    assert [claimed.id] == first
    assert store.outbox.claim_due(10, lease) == []  # leased: the later versions wait
    store.outbox.settle([], [(claimed.id, "HTTP 500", timedelta(0))])
    events = []
    for _ in range(4):
        [delivery] = store.outbox.claim_due(10, lease)
        body = payload(delivery)
        events.append((body["event"], body["version"], body["grade"]["score"]))
        store.outbox.settle([delivery.id], [])
    assert events == [
        ("grade.completed", 1, 1.0), ("grade.updated", 2, 2.0), ("grade.updated", 3, 0.0),
        ("grade.updated", 4, 1.5),
    ]  # fmt: skip
    assert store.outbox.claim_due(10, lease) == []
    with store.engine.connect() as conn:
        assert (
            conn.execute(sa.select(sa.func.count()).select_from(webhook_deliveries)).scalar() == 4
        )


def test_a_version_waits_out_an_earlier_ones_retry_and_goes_once_it_is_given_up(store):
    platform = store.accounts.add_platform("p", ["e"], "kid", "h", "sec", "http://127.0.0.1:9/h")
    [(s, _)] = store.intake.submit(platform, [NewSubmission("s1", "e", "q1", "A")])
    store.queue.record([(s, graded(s))])
    store.reviews.add_override(s.id, 0.0, "copied", "wang")
    lease = timedelta(seconds=60)
    [first] = store.outbox.claim_due(10, lease)
    store.outbox.settle([], [(first.id, "HTTP 500", timedelta(seconds=60))])
    assert store.outbox.claim_due(10, lease) == []  # version 1 waits for its retry; 2 for it
    store.outbox.settle([], [(first.id, "HTTP 500", None)])  # given up
    [second] = store.outbox.claim_due(10, lease)
    assert (second.change.version, second.event, second.grade.score) == (2, "grade.updated", 0.0)


def test_one_platforms_versions_are_written_one_transaction_at_a_time(store):
    """PostgreSQL: a transaction settling a platform's grades waits for another one settling
    that platform's, so versions commit in cursor order; the intake is not held up by it
    (``test_quotas``)."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer")
    platform = store.accounts.add_platform("p", ["e"], "kid", "h", "sec", "http://127.0.0.1:9/h")
    [(a, _), (b, _)] = store.intake.submit(
        platform, [NewSubmission("a", "e", "q1", "A"), NewSubmission("b", "e", "q1", "A")]
    )
    store.queue.record([(a, graded(a)), (b, graded(b))])
    second_done = threading.Event()

    def second() -> None:
        store.reviews.add_override(b.id, 0.0, "copied", "wang")
        second_done.set()

    with store.engine.begin() as conn:  # the first: an override of ``a``, left open
        now = utcnow()
        conn.execute(grade_overrides.insert().values(
            submission_id=a.id, score=0.5, reason="read by hand", instructor="li", created_at=now,
        ))  # fmt: skip
        assert settle(conn, [a.id], "override", "li", now)
        thread = threading.Thread(target=second)
        thread.start()
        assert not second_done.wait(1), "another transaction wrote the platform's versions"
    thread.join(10)
    assert second_done.is_set()
    changes = store.versions.changes(platform, "e")
    assert [(c.submission_id, c.version) for c in changes][-2:] == [("a", 2), ("b", 2)]


def test_the_changes_feed_pages_a_platforms_versions_past_a_cursor(store):
    mine = store.accounts.add_platform("p", ["e"], "kid", "h", "sec")
    other = store.accounts.add_platform("q", ["e"], "kid2", "h", "sec")
    li = store.accounts.add_instructor("li", ["e"], "ik", "h")
    stored = [s for s, _ in store.intake.submit(mine, [NewSubmission(f"s{i}", "e", "q1", "A")
                                                        for i in range(3)])]  # fmt: skip
    [(theirs, _)] = store.intake.submit(other, [NewSubmission("s0", "e", "q1", "A")])
    store.queue.record([(s, graded(s)) for s in [*stored, theirs]])
    store.reviews.set_human_score(stored[1].id, li, 0.0, None)
    page = store.versions.changes(mine, "e", 0, 2)
    assert [(c.submission_id, c.version) for c in page] == [("s0", 1), ("s1", 1)]
    rest = store.versions.changes(mine, "e", page[-1].cursor, 10)
    assert [(c.submission_id, c.version, c.cause) for c in rest] == [
        ("s2", 1, "engine"), ("s1", 2, "score"),
    ]  # fmt: skip
    assert rest[-1].summary()["from"] == {"status": "graded", "score": 1.0}
    assert store.versions.changes(mine, "e", rest[-1].cursor) == []
    assert store.versions.changes(mine, "other-exam") == []
    assert [c.submission_id for c in store.versions.changes(other, "e")] == ["s0"]
    with store.engine.begin() as conn, pytest.raises(ValueError, match="unknown cause"):
        settle(conn, [stored[0].id], "magic", None, stored[0].created_at)


def test_migrating_writes_the_history_of_grades_stored_before(database_url):
    url = database_url
    command.upgrade(alembic_config(url), "0006")
    old = sa.create_engine(url)
    at = "2026-01-01 00:00:00"
    record = graded(NewSubmission("s1", "e", "q1", "A")).model_dump(mode="json")
    with old.begin() as conn:
        for sql in [
            "INSERT INTO platforms VALUES (1,'p','k','h','http://x/h','s',:at,NULL)",
            "INSERT INTO instructors VALUES (1,'li','ik','h',:at,0,NULL)",
            *[f"INSERT INTO submissions VALUES ({i},1,'s{i}','e','q1',NULL,'A','x','graded',"
              ":at,:at,:at,NULL)" for i in (1, 2)],
            *[f"INSERT INTO grades VALUES ({i},{i},'r1','graded',1.0,false,NULL,:record,:at)"
              for i in (1, 2)],
            "INSERT INTO webhook_deliveries VALUES (1,1,1,'grade.completed','delivered',1,"
            ":at,NULL,:at,:at)",
            "INSERT INTO human_scores VALUES (1,1,1,2.0,NULL,'2026-01-02 00:00:00')",
        ]:  # fmt: skip
            conn.execute(sa.text(sql), {"at": at, "record": json.dumps(record)})
        if conn.dialect.name == "postgresql":  # rows written with their ids: move the sequences
            for table in ("platforms", "instructors", "submissions", "grades",
                          "webhook_deliveries", "human_scores"):  # fmt: skip
                conn.execute(sa.text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                     f"(SELECT max(id) FROM {table}))"))  # fmt: skip
    old.dispose()
    store = Store(url)
    store.migrate()
    assert versions_of(store, 1) == [(1, "engine", None, 1.0), (2, "score", "li", 2.0)]
    assert versions_of(store, 2) == [(1, "engine", None, 1.0)]
    assert store.intake.submission(1, "s1").version == 2
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(webhook_deliveries.c.event, webhook_deliveries.c.status,
                      grade_versions.c.version)
            .join(grade_versions, grade_versions.c.id == webhook_deliveries.c.version_id)
            .order_by(webhook_deliveries.c.id)
        ).all()  # fmt: skip
    assert [tuple(r) for r in rows] == [
        ("grade.completed", "delivered", 1), ("grade.updated", "pending", 2),
    ]  # fmt: skip


def test_every_kind_of_change_reaches_the_platform_once_per_version_signed(database_url):
    """Engine, scores, an override, a regrade and a refit: the receiver gets each version once,
    signed, in order; its last one is the grade the API returns."""
    receiver = WebhookReceiver("sec")
    store = Store(database_url)
    store.migrate()
    settings = Settings(
        service=ServiceSettings(database_url=database_url, banks=[RUBRICS / f"{EXAM}.yaml"]),
        judge=JudgeSettings(backend="scripted"),
        webhooks=WebhookSettings(allow_private=True),
    )
    courier = Courier(settings.webhooks, 0.05, store)
    try:
        acme = store.accounts.add_platform("acme", [EXAM], "kid", "h", "sec", receiver.url)
        li = store.accounts.add_instructor("li", [EXAM], "ik", "h")
        ids = scored_exam(store, acme, li)  # engine grades, 60 of them scored
        store.reviews.add_override(ids["r0-21"], 4.5, "read by hand", "li")
        exam = load_exams(settings.service.banks)[EXAM]
        regraded = refits.regrade(settings, store, exam, QUESTIONS[0], "li", None)
        proposal = refits.propose(settings, store, exam, "li", CountingEmbedder(), bootstrap=50)
        applied = refits.apply(settings, store, exam, proposal, "li", CountingEmbedder())
        assert regraded.deliveries and applied.deliveries  # grades the platform reads moved

        with store.engine.connect() as conn:
            made = conn.execute(sa.select(sa.func.count()).select_from(grade_versions)).scalar()
        causes = {c.cause for i in ids.values() for c in store.versions.history(i)}
        assert causes == {"engine", "score", "override", "regrade", "refit"}

        def drained():
            courier.wake()
            return len(receiver.received) >= made and courier.in_flight() == 0

        wait_for(drained, 60, f"{made} webhooks")
    finally:
        courier.close()
        receiver.close()
    assert len(receiver.received) == made and all(r["valid"] for r in receiver.received)
    by_submission: dict[str, list[dict]] = {}
    for r in receiver.received:
        by_submission.setdefault(r["submission_id"], []).append(r["payload"])
    for external in ids:
        got = by_submission[external]
        assert [p["version"] for p in got] == list(range(1, len(got) + 1))  # once each, in order
        now = store.intake.submission(acme, external)
        last = got[-1]["grade"]
        assert now.version == len(got)
        assert (last["score"], last["method"], last["status"]) == (
            now.grade.score, now.grade.method.value, now.grade.status.value,
        )  # fmt: skip
        assert [c["points"] for c in last["criteria"]] == [c.points for c in now.grade.criteria]


def test_the_api_shows_the_version_and_lists_changes_past_a_cursor(tmp_path):
    """``GET /v1/submissions/{id}``, the exports and ``/changes`` (read by the client, page by
    page) show the same versions."""
    from fastapi.testclient import TestClient

    from grader.api.app import create_app
    from grader.api.keys import new_key
    from grader.client import GraderClient
    from tests.dispatchers import Holding

    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{tmp_path / 'g.db'}", banks=[RUBRICS / f"{EXAM}.yaml"]
        ),
        judge=JudgeSettings(backend="scripted"),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    key = new_key()
    acme = store.accounts.add_platform("acme", [EXAM], key.key_id, key.key_hash, "sec")
    li = store.accounts.add_instructor("li", [EXAM], "ik", "h")
    ids = scored_exam(store, acme, None, per_question=0, unscored=1)  # 3 essays, 1 choice
    store.reviews.set_human_score(ids["r0-0"], li, 0.5, None)
    app = create_app(settings, store, load_exams(settings.service.banks), Holding())
    auth = {"Authorization": f"Bearer {key.key}"}
    with TestClient(app) as http:
        assert http.get("/v1/submissions/r0-0", headers=auth).json()["version"] == 2
        assert http.get("/v1/submissions/r1-0", headers=auth).json()["version"] == 1
        lines = http.get(f"/v1/exams/{EXAM}/grades?format=csv", headers=auth).text.splitlines()
        assert lines[0].endswith(",version") and lines[1].endswith(",2")
        first = http.get(f"/v1/exams/{EXAM}/changes?limit=2", headers=auth).json()
        assert [c["version"] for c in first["changes"]] == [1, 1] and first["more"]
        assert first["changes"][0]["change"]["from"] is None
        for bad in ("after=-1", "limit=0", "limit=1001"):
            assert http.get(f"/v1/exams/{EXAM}/changes?{bad}", headers=auth).status_code == 422
        assert http.get("/v1/exams/other/changes", headers=auth).status_code == 404

        def relay(request):  # the client's requests, answered by the app
            reply = http.request(request.method, str(request.url), headers=request.headers)
            return httpx.Response(reply.status_code, content=reply.content)

        client = GraderClient("http://testserver", key.key, transport=httpx.MockTransport(relay))
        every = list(client.changes(EXAM))
        later = list(client.changes(EXAM, after=first["next"]))
    assert [c.cursor for c in every[2:]] == [c.cursor for c in later]
    assert [(c.submission_id, c.version, c.change["cause"]) for c in every[-1:]] == [
        ("r0-0", 2, "score")
    ]
    assert every[-1].change["from"]["score"] != 0.5 and every[-1].grade.score == 0.5
