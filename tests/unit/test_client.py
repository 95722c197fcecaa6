"""grader.client without a server: retries and errors on httpx.MockTransport, webhook checks
against signatures made by grader.webhooks, and what the module imports. The client against a
real `grader serve --inline` is tests/integration/test_client_serve.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from grader.api import schemas
from grader.client import (
    Accepted,
    Answer,
    APIError,
    GraderClient,
    GraderUnavailable,
    GradesTimeout,
    IdConflict,
    RetryPolicy,
    SubmissionStatus,
    parse_webhook,
    verify_webhook,
)
from grader.service.webhooks import sign
from tests.conftest import ROOT

ANSWER = {"id": "x1", "exam": "e", "question_id": "q1", "answer": "B", "student": "amy"}
ACCEPTED = {"submissions": [{"id": "x1", "status": "queued", "duplicate": False}]}


def _client(handler, **policy) -> tuple[GraderClient, list[float]]:
    sleeps: list[float] = []
    client = GraderClient(
        "http://grader.test",
        "gk_test",
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
        retry=RetryPolicy(seed=0, **policy),
    )
    return client, sleeps


def _replies(*replies):
    """A handler answering in turn; records each request."""
    seen: list[httpx.Request] = []
    queue = list(replies)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        reply = queue.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    return handler, seen


def test_429_waits_as_long_as_retry_after_says_then_posts_again():
    handler, seen = _replies(
        httpx.Response(429, headers={"Retry-After": "3"}, json={"detail": "slow down"}),
        httpx.Response(202, json=ACCEPTED),
    )
    client, sleeps = _client(handler, backoff_s=0.5)
    assert client.submit(ANSWER) == Accepted(id="x1", status="queued", duplicate=False)
    assert len(seen) == 2 and seen[0].content == seen[1].content  # the same idempotent body
    assert json.loads(seen[0].content) == [ANSWER]
    assert seen[0].headers["Authorization"] == "Bearer gk_test"
    assert len(sleeps) == 1 and 3 <= sleeps[0] <= 3.5


def test_retry_after_as_an_http_date():
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    handler, _ = _replies(
        httpx.Response(503, headers={"Retry-After": when}), httpx.Response(202, json=ACCEPTED)
    )
    client, sleeps = _client(handler)
    client.submit(ANSWER)
    assert 17 <= sleeps[0] <= 21


def test_5xx_and_connection_errors_back_off_exponentially_with_jitter():
    handler, seen = _replies(
        httpx.Response(502),
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
        httpx.Response(500),
        httpx.Response(202, json=ACCEPTED),
    )
    client, sleeps = _client(handler, backoff_s=1.0, max_backoff_s=100)
    client.submit(ANSWER)
    assert len(seen) == 5
    for attempt, slept in enumerate(sleeps, 1):
        step = 2 ** (attempt - 1)
        assert step / 2 <= slept <= step, (attempt, slept)  # half fixed, half jitter
    assert len(set(sleeps)) == 4


def test_gives_up_after_the_retries():
    handler, seen = _replies(*[httpx.Response(503)] * 4)
    client, sleeps = _client(handler, retries=3)
    with pytest.raises(GraderUnavailable, match="HTTP 503 after 4 attempt"):
        client.submit(ANSWER)
    assert len(seen) == 4 and len(sleeps) == 3
    handler, _ = _replies(*[httpx.ConnectError("refused")] * 3)
    client, _ = _client(handler, retries=2)
    with pytest.raises(GraderUnavailable, match="ConnectError"):
        client.submission("x1")


def test_a_retry_after_beyond_the_cap_is_not_waited_out():
    handler, seen = _replies(httpx.Response(429, headers={"Retry-After": "3600"}))
    client, sleeps = _client(handler, max_backoff_s=30)
    with pytest.raises(GraderUnavailable, match="HTTP 429"):
        client.submit(ANSWER)
    assert len(seen) == 1 and sleeps == []


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_other_4xx_are_never_retried(status):
    detail = [{"loc": ["body", "answer"], "msg": "too long", "type": "string_too_long"}]
    handler, seen = _replies(httpx.Response(status, json={"detail": detail}))
    client, sleeps = _client(handler)
    with pytest.raises(APIError) as caught:
        client.submit(ANSWER)
    assert caught.value.status_code == status and caught.value.detail == detail
    assert len(seen) == 1 and sleeps == []


def test_a_conflict_names_the_ids():
    body = {"detail": {"msg": "ids posted with a different body", "ids": ["x1"]}}
    handler, _ = _replies(httpx.Response(409, json=body))
    client, _ = _client(handler)
    with pytest.raises(IdConflict) as caught:
        client.submit(ANSWER)
    assert caught.value.ids == ["x1"]


def test_submit_many_posts_in_batches_in_order():
    seen: list[list[dict]] = []

    def handler(request):
        items = json.loads(request.content)
        seen.append(items)
        replies = [{"id": i["id"], "status": "queued", "duplicate": False} for i in items]
        return httpx.Response(202, json={"submissions": replies})

    client, _ = _client(handler)
    answers = [Answer(**{**ANSWER, "id": f"x{i}"}) for i in range(7)]
    accepted = client.submit_many(answers, batch_size=3)
    assert [len(batch) for batch in seen] == [3, 3, 1]
    assert [a.id for a in accepted] == [f"x{i}" for i in range(7)]


def test_bad_answers_fail_before_anything_is_sent():
    handler, seen = _replies()
    client, _ = _client(handler)
    with pytest.raises(ValueError, match="answer"):
        client.submit({"id": "x", "exam": "e", "question_id": "q"})
    assert seen == []


def _status(sid: str, status: str) -> dict:
    return {"id": sid, "exam": "e", "question_id": "q1", "student": None, "status": status,
            "submitted_at": "2026-01-01T00:00:00Z", "graded_at": None, "grade": None,
            "some_future_field": 1}  # fmt: skip


def test_wait_for_grades_polls_until_done_and_times_out_with_what_is_pending():
    polls = {"a": ["queued", "queued", "graded"], "b/1": ["failed"]}
    seen = []

    def handler(request):
        sid = request.url.raw_path.decode().rsplit("/", 1)[1]
        sid = httpx.URL("http://x/" + sid).path[1:]  # undo the percent-encoding
        seen.append(sid)
        return httpx.Response(200, json=_status(sid, polls[sid].pop(0)))

    client, sleeps = _client(handler)
    done = client.wait_for_grades(["a", "b/1"], poll_s=0.5, timeout_s=60)
    assert [s.status for s in done.values()] == ["graded", "failed"] and list(done) == ["a", "b/1"]
    assert seen == ["a", "b/1", "a", "a"] and sleeps == [0.5, 0.5]

    client, _ = _client(lambda request: httpx.Response(200, json=_status("a", "queued")))
    client._sleep = lambda s: time.sleep(0.01)
    with pytest.raises(GradesTimeout) as caught:
        client.wait_for_grades(["a"], poll_s=0.01, timeout_s=0.05)
    assert caught.value.pending == ["a"]


def test_export_streams_records_and_a_4xx_is_not_retried():
    lines = "".join(json.dumps(_status(s, "graded")) + "\n" for s in ("a", "b"))
    handler, seen = _replies(httpx.Response(503), httpx.Response(200, text=lines))
    client, _ = _client(handler)
    records = list(client.export("exam 1"))
    assert [r.id for r in records] == ["a", "b"] and all(
        isinstance(r, SubmissionStatus) for r in records
    )
    assert seen[-1].url.params["format"] == "jsonl" and seen[-1].url.raw_path.startswith(
        b"/v1/exams/exam%201/"
    )
    handler, _ = _replies(httpx.Response(200, content=b"student,total\r\namy,3\r\n"))
    client, _ = _client(handler)
    assert b"".join(client.export_csv("e", wide=True)) == b"student,total\r\namy,3\r\n"
    handler, seen = _replies(httpx.Response(404, json={"detail": "no exam"}))
    client, _ = _client(handler)
    with pytest.raises(APIError, match="404"):
        list(client.export("nope"))
    assert len(seen) == 1


def _signed(body: bytes, secret: str = "whsec_test", age_s: int = 0) -> dict:
    timestamp = int(time.time()) - age_s
    return {
        "X-Grader-Timestamp": str(timestamp),
        "X-Grader-Signature": sign(secret, timestamp, body),  # exactly what the service sends
        "X-Grader-Delivery": "7",
    }


GRADE = {"submission_id": "x1", "question_id": "q1", "status": "graded", "score": 1.0,
         "max_score": 2.0, "method": "exact"}  # fmt: skip
BODY = json.dumps(
    {
        "event": "grade.completed",
        "delivery_id": 7,
        "exam": "e",
        "submission_id": "x1",
        "grade": GRADE,
    },
    separators=(",", ":"),
).encode()


def test_verify_webhook_accepts_a_real_signature_and_rejects_tampering_and_replays():
    headers = _signed(BODY)
    assert verify_webhook("whsec_test", headers, BODY)
    assert verify_webhook("whsec_test", {k.lower(): v for k, v in headers.items()}, BODY)
    assert verify_webhook("whsec_test", httpx.Headers(headers), BODY)
    assert not verify_webhook("whsec_test", headers, BODY.replace(b'"score":1.0', b'"score":2.0'))
    assert not verify_webhook("whsec_other", headers, BODY)
    assert not verify_webhook("whsec_test", _signed(BODY, age_s=301), BODY)
    assert verify_webhook("whsec_test", _signed(BODY, age_s=200), BODY)
    assert not verify_webhook("whsec_test", _signed(BODY, age_s=200), BODY, tolerance_s=100)
    future = _signed(BODY, age_s=-400)  # a clock far ahead is refused too
    assert not verify_webhook("whsec_test", future, BODY)
    assert not verify_webhook("whsec_test", {**headers, "X-Grader-Timestamp": "abc"}, BODY)
    assert not verify_webhook(
        "whsec_test", {"X-Grader-Timestamp": headers["X-Grader-Timestamp"]}, BODY
    )
    assert not verify_webhook("whsec_test", {**headers, "X-Grader-Signature": "sha256=ü"}, BODY)
    event = parse_webhook("whsec_test", headers, BODY)
    assert event.grade.score == 1.0 and event.delivery_id == 7
    with pytest.raises(Exception, match="not valid"):
        parse_webhook("whsec_test", headers, BODY + b" ")


def test_client_models_follow_the_servers_schemas():
    """The client keeps its own reply models (tolerant of new fields); they must not drift."""
    assert set(Answer.model_fields) == set(schemas.SubmissionIn.model_fields)
    assert set(Accepted.model_fields) == set(schemas.Accepted.model_fields)
    assert set(SubmissionStatus.model_fields) == set(schemas.SubmissionOut.model_fields)


def test_importing_the_client_loads_no_service_or_science_stack():
    code = (
        "import sys, grader.client; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'grader','fastapi','starlette','sqlalchemy','celery','numpy','pandas','torch','jinja2','yaml'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    loaded = json.loads(out.replace("'", '"'))
    # the package root (its API loads lazily), the client, the error tree and the record models
    assert {m for m in loaded if not m.startswith("grader.models.")} == {
        "grader", "grader.client", "grader.errors", "grader.models", "grader.version",
    }  # fmt: skip
