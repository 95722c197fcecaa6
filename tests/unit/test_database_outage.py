"""The database away: the API answers 503 with Retry-After, not a 500 with a traceback."""

import logging

from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.api.keys import new_key
from grader.config import PageSettings, ServiceSettings, Settings
from grader.service.exams import load_exams
from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.dispatchers import Refusing

EXAM = "grad_accum_engineer"


def test_the_api_answers_503_with_retry_after_while_the_database_is_away(tmp_path, caplog):
    # A database file in a folder that is not there: every connection fails, as with a
    # server that is down (sqlite3 and psycopg both raise OperationalError).
    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{tmp_path / 'gone' / 'g.db'}", banks=[RUBRICS / f"{EXAM}.yaml"]
        ),
        pages=PageSettings(secret_key="k" * 32),
    )
    app = create_app(
        settings,
        Store(settings.service.database_url),
        load_exams(settings.service.banks),
        Refusing(),
    )
    client = TestClient(app, raise_server_exceptions=False)
    bearer = {"Authorization": f"Bearer {new_key().key}"}
    item = {"id": "s1", "exam": EXAM, "question_id": "004-s1-q1", "answer": "C"}
    with caplog.at_level(logging.WARNING):
        answers = [
            client.get("/v1/exams", headers=bearer),
            client.post("/v1/submissions", json=item, headers=bearer),
            client.get("/v1/submissions/s1", headers=bearer),
        ]
    for response in answers:
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"] == "5"
        assert response.json() == {"detail": "the database is unavailable; retry later"}
    assert all(r.exc_info is None for r in caplog.records)  # one line each, no traceback
    assert "the database is unavailable (OperationalError" in caplog.text
    assert client.get("/healthz").status_code == 503
