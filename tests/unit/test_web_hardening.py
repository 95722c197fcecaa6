"""The web face's hardening: a long enough secret key and a warning when it lives in
the database, the login's Origin check, the Secure cookie and the throttle's client address
behind a trusted proxy, the instructor pages' security headers, and a token for /metrics."""

import logging
import sys

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from grader.api.app import create_app
from grader.api.instructor import warn_key_in_database
from grader.api.keys import INSTRUCTOR_PREFIX, new_key
from grader.cli import main
from grader.config import JudgeSettings, LimitSettings, PageSettings, ServiceSettings, Settings
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders
from grader.service.store import Store
from tests.conftest import RUBRICS

EXAM = "grad_accum_engineer"
KEY_32 = "k" * 32
EVIL = "https://evil.example"


@pytest.fixture
def make_service(database_url):
    """Build the service with these settings: (a client, the instructor's key)."""
    made, key = [], new_key(INSTRUCTOR_PREFIX)

    def make(base_url="http://testserver", limits=None, **pages):
        settings = Settings(
            service=ServiceSettings(database_url=database_url, banks=[RUBRICS / f"{EXAM}.yaml"]),
            judge=JudgeSettings(backend="scripted"),
            limits=limits or LimitSettings(),
            pages=PageSettings(**pages),
        )
        store = Store(settings.service.database_url)
        store.migrate()
        if not made:  # one database: the instructor once
            store.accounts.add_instructor("li", [EXAM], key.key_id, key.key_hash)
        graders = Graders.load(settings)
        dispatcher = InlineDispatcher(settings, store, graders, poll_s=0.05)
        made.append((store, dispatcher))
        app = create_app(settings, store, graders.exams, dispatcher)
        return TestClient(app, base_url=base_url), key.key

    yield make
    for store, dispatcher in made:
        dispatcher.close()
        store.engine.dispose()


def post_login(client, key, **headers):
    return client.post(
        "/instructor/login", data={"key": key}, headers=headers, follow_redirects=False
    )


# the secret key


@pytest.mark.parametrize("key", ["k" * 31, "é" * 15, ""])  # 31, 30 and 0 bytes
def test_a_secret_key_under_32_bytes_is_refused_naming_the_variable(key):
    with pytest.raises(ValidationError) as raised:
        Settings(pages=PageSettings(secret_key=key))
    message = str(raised.value)
    assert "GRADER_SECRET_KEY" in message and "at least 32" in message
    assert key not in message or not key  # the key itself is never echoed


def test_a_32_byte_secret_key_is_accepted():
    assert PageSettings(secret_key=KEY_32).secret_key.get_secret_value() == KEY_32
    assert PageSettings(secret_key="é" * 16).secret_key is not None  # bytes, not characters


def test_the_command_line_names_a_bad_setting_without_a_traceback(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("GRADER_SECRET_KEY", "too-short-secret")
    monkeypatch.setenv("GRADER_DATABASE_URL", f"sqlite:///{tmp_path / 'grader.db'}")
    monkeypatch.setattr(sys, "argv", ["grader", "db", "upgrade"])  # quick, were the key let in
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "GRADER_SECRET_KEY is 16 bytes" in err and "Traceback" not in err
    assert "too-short-secret" not in err


def test_a_key_kept_in_the_database_is_warned_about_once_per_process(make_service, caplog):
    warn_key_in_database.cache_clear()
    with caplog.at_level(logging.WARNING, logger="grader.api.instructor"):
        make_service()
        make_service()
    warnings = [r for r in caplog.records if "GRADER_SECRET_KEY is not set" in r.getMessage()]
    assert len(warnings) == 1


def test_a_key_in_the_environment_is_not_warned_about(make_service, caplog):
    warn_key_in_database.cache_clear()
    with caplog.at_level(logging.WARNING, logger="grader.api.instructor"):
        make_service(secret_key=KEY_32)
    assert not [r for r in caplog.records if "GRADER_SECRET_KEY" in r.getMessage()]


# the login: Origin, the Secure flag, the throttle's address


def test_a_login_posted_from_another_origin_is_refused(make_service):
    client, key = make_service()
    for origin in (EVIL, "null", "http://testserver:8080", "https://testserver"):
        refused = post_login(client, key, origin=origin)
        assert refused.status_code == 403, origin
        assert "grader_session" not in refused.headers.get("set-cookie", "")
    assert post_login(client, key, origin="http://testserver").status_code == 303
    assert post_login(client, key, origin="http://TestServer:80").status_code == 303
    assert post_login(client, key).status_code == 303  # no Origin at all: allowed


def test_behind_a_trusted_proxy_the_origin_and_the_secure_flag_follow_its_headers(make_service):
    client, key = make_service(trust_proxy=True)
    proxied = {"x-forwarded-proto": "https", "x-forwarded-host": "grader.example.edu"}
    ok = post_login(client, key, origin="https://grader.example.edu", **proxied)
    assert ok.status_code == 303
    assert "secure" in ok.headers["set-cookie"].lower()
    assert post_login(client, key, origin="https://testserver", **proxied).status_code == 403
    plain = post_login(client, key)  # no forwarded headers: the request's own scheme
    assert plain.status_code == 303 and "secure" not in plain.headers["set-cookie"].lower()


def test_without_a_trusted_proxy_forwarded_headers_are_ignored(make_service):
    client, key = make_service()
    proxied = {"x-forwarded-proto": "https", "x-forwarded-host": "grader.example.edu"}
    login = post_login(client, key, **proxied)
    assert login.status_code == 303 and "secure" not in login.headers["set-cookie"].lower()
    assert (
        post_login(client, key, origin="https://grader.example.edu", **proxied).status_code == 403
    )


def test_an_https_request_gets_a_secure_cookie(make_service):
    client, key = make_service(base_url="https://testserver")
    login = post_login(client, key, origin="https://testserver")
    assert login.status_code == 303 and "secure" in login.headers["set-cookie"].lower()


def test_behind_a_trusted_proxy_failed_logins_count_per_forwarded_address(make_service):
    client, _ = make_service(limits=LimitSettings(login_failures_per_minute=2), trust_proxy=True)
    one, other = {"x-forwarded-for": "203.0.113.5, 10.0.0.1"}, {"x-forwarded-for": "203.0.113.6"}
    assert [post_login(client, "ik_wrong", **one).status_code for _ in range(3)] == [401, 401, 429]
    assert post_login(client, "ik_wrong", **other).status_code == 401  # another client
    # not an address: the peer's address counts (here, the test client's, not throttled yet)
    assert post_login(client, "ik_wrong", **{"x-forwarded-for": "junk"}).status_code == 401


def test_without_a_trusted_proxy_a_forwarded_address_does_not_dodge_the_throttle(make_service):
    client, _ = make_service(limits=LimitSettings(login_failures_per_minute=2))
    codes = [
        post_login(client, "ik_wrong", **{"x-forwarded-for": f"203.0.113.{i}"}).status_code
        for i in range(3)
    ]
    assert codes == [401, 401, 429]


# the pages' headers

PAGE_HEADERS = {
    "x-frame-options": "DENY",
    "cache-control": "no-store",
    "referrer-policy": "same-origin",
}


def test_instructor_responses_carry_the_security_headers(make_service):
    client, key = make_service()
    login_page = client.get("/instructor/login")
    redirect = client.get("/instructor", follow_redirects=False)  # not logged in: 303
    post_login(client, key)
    page = client.get("/instructor")
    for response in (login_page, redirect, page):
        for name, value in PAGE_HEADERS.items():
            assert response.headers[name] == value, (response.url, name)
        csp = response.headers["content-security-policy"]
        for part in ("default-src 'self'", "script-src 'none'", "form-action 'self'",
                     "frame-ancestors 'none'"):  # fmt: skip
            assert part in csp
        assert len(response.headers.get_list("cache-control")) == 1
    assert page.status_code == 200 and "<script" not in page.text  # nothing the CSP would block


def test_other_routes_do_not_get_the_pages_headers(make_service):
    client, _ = make_service()
    for url in ("/healthz", "/instructorx"):
        response = client.get(url)
        assert "content-security-policy" not in response.headers, url
        assert "x-frame-options" not in response.headers, url


# /metrics


def test_metrics_with_a_token_need_it(make_service):
    client, _ = make_service(metrics_token="s3cret-scrape-token")
    assert client.get("/metrics").status_code == 401
    wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    right = client.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape-token"})
    assert right.status_code == 200 and "grader_graded_total" in right.text


@pytest.mark.parametrize("token", [None, ""])  # unset, or set empty: open as before
def test_metrics_without_a_token_are_open(make_service, token):
    client, _ = make_service(metrics_token=token)
    assert client.get("/metrics").status_code == 200
