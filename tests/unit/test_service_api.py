"""The HTTP API in inline mode (no Redis): TestClient, a real SQLite file or PostgreSQL
database, the scripted judge."""

import csv
import io
import json

import pytest
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.api.keys import new_key
from grader.config import JudgeSettings, LimitSettings, ServiceSettings, Settings
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders
from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.integration.service import wait_for

EXAM = "grad_accum_engineer"
ESSAY = "004-s5-q3"  # subjective, has a rubric
CHOICE = "004-s1-q1"


@pytest.fixture
def service(database_url):
    settings = Settings(
        service=ServiceSettings(
            database_url=database_url,
            banks=[RUBRICS / f"{EXAM}.yaml", RUBRICS / "llm_trainer_solutions.yaml"],
        ),
        judge=JudgeSettings(backend="scripted"),
        limits=LimitSettings(bulk_limit=5, max_answer_chars=300, max_body_bytes=8192),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    keys = {}
    for name, exam in (("a", EXAM), ("b", "llm_trainer_solutions")):
        key = new_key()
        store.accounts.add_platform(name, [exam], key.key_id, key.key_hash, "secret")
        keys[name] = {"Authorization": f"Bearer {key.key}"}
    graders = Graders.load(settings)
    dispatcher = InlineDispatcher(settings, store, graders, poll_s=0.05)
    client = TestClient(create_app(settings, store, graders.exams, dispatcher))
    yield client, store, keys
    dispatcher.close()
    store.engine.dispose()


def item(i, question=CHOICE, answer="B", exam=EXAM):
    return {
        "id": f"s{i}",
        "exam": exam,
        "question_id": question,
        "answer": answer,
        "student": "amy",
    }


def stored(store):
    return sum(store.metrics.counts()["submissions"].values())


def test_post_one_then_get_its_grade(service):
    client, _, keys = service
    essay = "梯度累积：每个micro-batch的loss除以累积步数后backward，累积到步数后optimizer.step()并zero_grad()。"
    response = client.post("/v1/submissions", json=item(1, ESSAY, essay), headers=keys["a"])
    assert response.status_code == 202
    assert response.json() == {
        "submissions": [{"id": "s1", "status": "queued", "duplicate": False}]
    }
    body = wait_for(
        lambda: (r := client.get("/v1/submissions/s1", headers=keys["a"]).json())["status"] == "graded" and r,
        10, "the inline grader",
    )  # fmt: skip
    grade = body["grade"]
    assert grade["submission_id"] == "s1" and grade["method"] == "judge"
    assert grade["provenance"]["backend"] == "scripted" and grade["score"] is not None


def test_bulk_post_is_graded_and_a_repeat_returns_the_original(service):
    client, store, keys = service
    items = [item(i, answer="ABCD"[i % 4]) for i in range(5)]
    first = client.post("/v1/submissions", json=items, headers=keys["a"]).json()
    wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 5, 10, "5 grades")
    again = client.post("/v1/submissions", json=items, headers=keys["a"])
    assert again.status_code == 202
    assert [s["id"] for s in again.json()["submissions"]] == [s["id"] for s in first["submissions"]]
    assert all(s["duplicate"] and s["status"] == "graded" for s in again.json()["submissions"])
    changed = client.post("/v1/submissions", json=item(0, answer="D"), headers=keys["a"])
    assert changed.status_code == 409 and changed.json()["detail"]["ids"] == ["s0"]
    assert stored(store) == 5 and store.metrics.counts()["totals"]["grades"] == 5


def _bad_requests(keys):
    ok = item(1)
    return {
        "malformed JSON": (422, ["body"], {"content": b'{"id": "s1",', "headers": keys["a"]}),
        "unknown question": (422, ["body", "question_id"], {"json": item(1, "004-s9-q9"), "headers": keys["a"]}),
        "oversize answer": (422, ["body", "answer"], {"json": item(1, answer="x" * 301), "headers": keys["a"]}),
        "missing field": (422, ["body", "answer"], {"json": {k: v for k, v in ok.items() if k != "answer"}, "headers": keys["a"]}),
        "unknown field": (422, ["body", "score"], {"json": {**ok, "score": 5}, "headers": keys["a"]}),
        "one bad item in a bulk": (422, ["body", 1, "question_id"], {"json": [item(1), item(2, "nope")], "headers": keys["a"]}),
        "not an object": (422, ["body"], {"json": "s1", "headers": keys["a"]}),
        "too many": (413, "the limit is 5", {"json": [item(i) for i in range(6)], "headers": keys["a"]}),
        "body too large": (413, "over 8192 bytes", {"content": json.dumps([item(i, answer="x" * 290) for i in range(30)]).encode(), "headers": keys["a"]}),
        "no API key": (401, "API key", {"json": ok}),
        "wrong API key": (401, "API key", {"json": ok, "headers": {"Authorization": "Bearer gk_0000_nope"}}),
        "another platform's exam": (403, "llm_trainer_solutions", {"json": item(1, "001-s1-q1", exam="llm_trainer_solutions"), "headers": keys["a"]}),
        "unknown exam": (403, "no_such_exam", {"json": item(1, exam="no_such_exam"), "headers": keys["a"]}),
    }  # fmt: skip


@pytest.mark.parametrize("case", list(_bad_requests({"a": {}})))
def test_bad_input_gets_a_clear_4xx_and_changes_nothing(service, case):
    client, store, keys = service
    earlier = client.post("/v1/submissions", json=item(0), headers=keys["a"])
    assert earlier.status_code == 202
    wait_for(
        lambda: store.metrics.counts()["submissions"].get("graded") == 1, 10, "the earlier grade"
    )
    status, loc, kwargs = _bad_requests(keys)[case]
    response = client.post("/v1/submissions", **kwargs)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    if isinstance(loc, list):  # validation errors name the field
        assert loc in [d["loc"] for d in detail], detail
        assert all(d["msg"] for d in detail)
    else:
        assert loc in detail
    assert stored(store) == 1  # nothing new stored, nothing earlier lost
    assert client.get("/v1/submissions/s0", headers=keys["a"]).json()["status"] == "graded"


def test_a_platform_sees_only_its_own_submissions_and_exams(service):
    client, _, keys = service
    client.post("/v1/submissions", json=item(1), headers=keys["a"])
    assert client.get("/v1/submissions/s1", headers=keys["b"]).status_code == 404
    assert client.get(f"/v1/exams/{EXAM}/grades", headers=keys["b"]).status_code == 404
    assert [e["name"] for e in client.get("/v1/exams", headers=keys["b"]).json()] == [
        "llm_trainer_solutions"
    ]
    assert (
        client.get("/v1/submissions/s1", headers={"Authorization": "Bearer x"}).status_code == 401
    )


def test_export_as_jsonl_and_csv(service):
    client, store, keys = service
    items = [item(1, answer="A"), {**item(2, answer="C"), "student": "=HYPERLINK(1)"}]
    client.post("/v1/submissions", json=items, headers=keys["a"])
    wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 2, 10, "2 grades")
    lines = client.get(f"/v1/exams/{EXAM}/grades", headers=keys["a"]).text.splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["id"] for r in records] == ["s1", "s2"]
    assert all(r["grade"]["method"] == "exact" for r in records)
    text = client.get(f"/v1/exams/{EXAM}/grades?format=csv", headers=keys["a"]).text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["submission_id"] for r in rows] == ["s1", "s2"] and rows[0]["status"] == "graded"
    assert rows[1]["student"] == "'=HYPERLINK(1)"  # not a formula in a spreadsheet
    assert client.get(f"/v1/exams/{EXAM}/grades?format=xml", headers=keys["a"]).status_code == 422


def test_wide_csv_export_one_row_per_student_with_overrides(service):
    client, store, keys = service
    essay = (
        "每个micro-batch的loss除以累积步数后backward，累积到步数后optimizer.step()并zero_grad()。"
    )
    items = [
        {**item(1, answer="C"), "student": "amy"},  # 004-s1-q1 is fill-in: "C" is wrong
        {**item(2, ESSAY, essay), "student": "amy"},
        {**item(3, answer="批次大小"), "student": "=HYPERLINK(1)"},
    ]
    client.post("/v1/submissions", json=items, headers=keys["a"])
    wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 3, 10, "3 grades")
    platform = store.accounts.platform_by_name("a")
    assert store.reviews.add_override(
        store.intake.submission(platform.id, "s2").id, 4.5, "fine", "li"
    )
    response = client.get(f"/v1/exams/{EXAM}/grades?format=wide-csv", headers=keys["a"])
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(response.text))}
    assert set(rows) == {"amy", "'=HYPERLINK(1)"}  # not a formula in a spreadsheet
    amy = rows["amy"]
    assert amy[CHOICE] == "0" and amy[ESSAY] == "4.5"  # the instructor's override wins
    assert amy["total"] == "4.5" and amy["answered"] == "2" and amy["004-s2-q1"] == ""
    assert rows["'=HYPERLINK(1)"]["total"] == "1"
    header = next(csv.reader(io.StringIO(response.text)))
    assert header[:3] == ["student", "004-s1-q1", "004-s1-q2"] and header[-1] == "needs_review"
    other = client.get(f"/v1/exams/{EXAM}/grades?format=wide-csv", headers=keys["b"])
    assert other.status_code == 404


def test_health_metrics_and_openapi(service):
    client, store, keys = service
    client.post("/v1/submissions", json=item(1), headers=keys["a"])
    wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 1, 10, "a grade")
    assert client.get("/healthz").json() == {"database": "ok", "broker": "ok"}
    metrics = client.get("/metrics").text
    assert "grader_graded_total 1.0" in metrics
    assert 'grader_submissions{status="graded"} 1.0' in metrics
    assert "grader_judge_latency_seconds_count" in metrics
    schema = client.get("/openapi.json").json()
    body = schema["paths"]["/v1/submissions"]["post"]["requestBody"]["content"]["application/json"]
    assert {"object", "array"} == {s.get("type") for s in body["schema"]["oneOf"]}


def test_with_the_broker_down_posts_are_stored_and_health_says_so(tmp_path):
    from grader.service.exams import load_exams
    from workers.dispatch import CeleryDispatcher

    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{tmp_path / 'grader.db'}",
            redis_url="redis://127.0.0.1:1/0",
            banks=[RUBRICS / f"{EXAM}.yaml"],
            batch_wait_ms=0,
        )
    )
    store = Store(settings.service.database_url)
    store.migrate()
    key = new_key()
    store.accounts.add_platform("a", [EXAM], key.key_id, key.key_hash, "secret")
    dispatcher = CeleryDispatcher(settings)
    client = TestClient(create_app(settings, store, load_exams(settings.service.banks), dispatcher))
    try:
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json()["broker"] == "unreachable"
        posted = client.post(
            "/v1/submissions", json=item(1), headers={"Authorization": f"Bearer {key.key}"}
        )
        assert posted.status_code == 202
        assert store.metrics.counts()["submissions"] == {"queued": 1}  # the sweeper will send it
    finally:
        dispatcher.close()
