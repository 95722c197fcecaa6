"""Sessions and keys that end: logout and removal refuse a copied session cookie at
once, a rotated platform key and a removed platform's key are refused; the commands that do it."""

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from grader.api.app import create_app
from grader.api.keys import INSTRUCTOR_PREFIX, hash_key, key_id_of, new_key
from grader.cli import app as cli
from grader.config import JudgeSettings, ServiceSettings, Settings
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders
from grader.service.store import Store
from tests.conftest import RUBRICS

EXAM = "grad_accum_engineer"
runner = CliRunner()


@pytest.fixture
def service(database_url):
    settings = Settings(
        service=ServiceSettings(database_url=database_url, banks=[RUBRICS / f"{EXAM}.yaml"]),
        judge=JudgeSettings(backend="scripted"),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    platform, instructor = new_key(), new_key(INSTRUCTOR_PREFIX)
    store.accounts.add_platform("acme", [EXAM], platform.key_id, platform.key_hash, "secret")
    store.accounts.add_instructor("li", [EXAM], instructor.key_id, instructor.key_hash)
    graders = Graders.load(settings)
    dispatcher = InlineDispatcher(settings, store, graders, poll_s=0.05)
    client = TestClient(create_app(settings, store, graders.exams, dispatcher))
    yield client, store, platform.key, instructor.key
    dispatcher.close()
    store.engine.dispose()


def logged_in_cookie(client, key) -> str:
    response = client.post("/instructor/login", data={"key": key}, follow_redirects=False)
    assert response.status_code == 303, response.text
    cookie = client.cookies.get("grader_session")
    client.cookies.clear()
    return cookie


def page(client, cookie):
    return client.get(
        "/instructor", headers={"Cookie": f"grader_session={cookie}"}, follow_redirects=False
    )


def test_a_copied_cookie_is_refused_after_logout(service):
    client, _, _, key = service
    kept, other = logged_in_cookie(client, key), logged_in_cookie(client, key)
    assert page(client, kept).status_code == 200 and page(client, other).status_code == 200
    csrf = page(client, other).text.split('name="csrf" value="')[1].split('"')[0]
    out = client.post(
        "/instructor/logout",
        data={"csrf": csrf},
        headers={"Cookie": f"grader_session={other}"},
        follow_redirects=False,
    )
    assert out.status_code == 303
    for cookie in (kept, other):  # the copy, and every other session of the instructor
        refused = page(client, cookie)
        assert refused.status_code == 303 and refused.headers["location"] == "/instructor/login"
    assert page(client, logged_in_cookie(client, key)).status_code == 200  # a new login works


def test_removing_an_instructor_ends_their_sessions_and_key(service, database_url, monkeypatch):
    client, store, _, key = service
    cookie = logged_in_cookie(client, key)
    assert page(client, cookie).status_code == 200
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    removed = runner.invoke(cli, ["instructor", "remove", "li"])
    assert removed.exit_code == 0, removed.output
    assert page(client, cookie).status_code == 303
    login = client.post("/instructor/login", data={"key": key})
    assert login.status_code == 401
    assert "li" not in runner.invoke(cli, ["instructor", "list"]).output
    again = runner.invoke(cli, ["instructor", "remove", "li"])
    assert again.exit_code == 2 and "no instructor 'li'" in again.output
    reuse = runner.invoke(cli, ["instructor", "add", "li", "--exam", EXAM])
    assert reuse.exit_code == 2 and "was removed" in reuse.output
    assert store.accounts.instructor(name="li", include_removed=True).removed_at is not None


def test_a_rotated_key_is_refused_and_the_new_one_works(service, database_url, monkeypatch):
    client, store, old, _ = service
    assert client.get("/v1/exams", headers={"Authorization": f"Bearer {old}"}).status_code == 200
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    rotated = runner.invoke(cli, ["platform", "rotate-key", "acme"])
    assert rotated.exit_code == 0, rotated.output
    new = next(x for x in rotated.output.splitlines() if x.startswith("api_key="))[8:]
    assert client.get("/v1/exams", headers={"Authorization": f"Bearer {old}"}).status_code == 401
    assert client.get("/v1/exams", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    assert store.accounts.platform_by_key_id(key_id_of(new)).key_hash == hash_key(new)
    missing = runner.invoke(cli, ["platform", "rotate-key", "nobody"])
    assert missing.exit_code == 2 and "no platform 'nobody'" in missing.output


def test_a_removed_platform_is_refused(service, database_url, monkeypatch):
    client, store, key, _ = service
    auth = {"Authorization": f"Bearer {key}"}
    post = {"id": "s1", "exam": EXAM, "question_id": "004-s1-q1", "answer": "B"}
    assert client.post("/v1/submissions", json=post, headers=auth).status_code == 202
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    removed = runner.invoke(cli, ["platform", "remove", "acme"])
    assert removed.exit_code == 0, removed.output
    assert client.get("/v1/exams", headers=auth).status_code == 401
    assert client.get("/v1/submissions/s1", headers=auth).status_code == 401
    assert client.post("/v1/submissions", json=post, headers=auth).status_code == 401
    assert "acme" not in runner.invoke(cli, ["platform", "list"]).output
    reuse = runner.invoke(cli, ["platform", "add", "acme", "--exam", EXAM])
    assert reuse.exit_code == 2 and "was removed" in reuse.output
    assert store.intake.submission(store.accounts.platform_by_name("acme", True).id, "s1")
