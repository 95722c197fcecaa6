"""Hostile input to the HTTP API gets a 4xx, never a 500, and the same answer on SQLite and
PostgreSQL: deep nesting, huge numbers, lone surrogates, NUL, huge ids."""

from __future__ import annotations

import json
import logging

import pytest

from tests.unit.test_service_api import item, service, stored  # noqa: F401

DEEP = b'{"id": "s1", "answer": ' + b"[" * 3000 + b"]" * 3000 + b"}"  # within the 8 KiB
HUGE_NUMBER = b'{"id": "s1", "answer": ' + b"9" * 5000 + b"}"


def _body(**fields) -> bytes:
    return json.dumps({**item(1), **fields}).encode()


def _escaped(field: str, literal: str) -> bytes:
    """A valid submission whose ``field`` is the JSON string ``literal`` sent as is: escapes
    such as ``\\ud800`` reach the server's JSON parser."""
    return json.dumps({**item(1), field: "@@"}).replace('"@@"', literal).encode()


CASES = {
    "deep nesting": (DEEP, ["body"]),
    "deep nesting in a list": (b"[" * 4000 + b"]" * 4000, ["body"]),
    "a 5,000-digit number": (HUGE_NUMBER, ["body"]),
    "a 5,000-digit number as the body": (b"9" * 5000, ["body"]),
    "a lone surrogate in answer": (_escaped("answer", '"x\\ud800y"'), ["body", "answer"]),
    "a lone surrogate in student": (_escaped("student", '"\\udfff"'), ["body", "student"]),
    "a lone surrogate in id": (_escaped("id", '"s\\ud83d"'), ["body", "id"]),
    "NUL in answer": (_body(answer="B\u0000C"), ["body", "answer"]),
    "NUL in student": (_body(student="a\u0000b"), ["body", "student"]),
    "NUL in exam": (_body(exam="grad\u0000"), ["body", "exam"]),
    "NUL in question_id": (_body(question_id="004\u0000"), ["body", "question_id"]),
    "invalid UTF-8": (b'{"id": "s1", "answer": "\xff\xfe"}', ["body"]),
    "a huge float": (_escaped("id", "1e999999"), ["body", "id"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_bodies_are_422_and_store_nothing(service, case, caplog):  # noqa: F811
    client, store, keys = service
    body, loc = CASES[case]
    with caplog.at_level(logging.ERROR):
        response = client.post(
            "/v1/submissions",
            content=body,
            headers={**keys["a"], "Content-Type": "application/json"},
        )
    assert response.status_code == 422, response.text[:500]
    detail = response.json()["detail"]
    assert loc in [d["loc"] for d in detail], detail
    assert stored(store) == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "path",
    ["s%00x", "%00", "x" * 5000, "%ED%A0%80", "s1%C0%80"],
)
def test_hostile_submission_ids_in_the_path_are_a_4xx(service, path):  # noqa: F811
    client, _, keys = service
    response = client.get(f"/v1/submissions/{path}", headers=keys["a"])
    assert response.status_code in (404, 422), response.text[:300]
    if "%00" in path:
        assert response.status_code == 422
        assert ["path", "submission_id"] in [d["loc"] for d in response.json()["detail"]]


@pytest.mark.parametrize("key", ["gk_\u0000_x", "gk_abc\u0000def_x", "gk_" + "a" * 5000 + "_x"])
def test_hostile_api_keys_are_401(service, key):  # noqa: F811
    client, _, _ = service
    response = client.get("/v1/exams", headers={"Authorization": f"Bearer {key}".encode()})
    assert response.status_code == 401
