"""grader.client against a real `grader serve --inline` on 127.0.0.1 (scripted judge, no
embedding model): post one and many, repost, wait, fetch, export, and check the webhooks the
server really sends."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from grader.client import (
    APIError,
    GraderClient,
    GraderUnavailable,
    IdConflict,
    RetryPolicy,
    parse_webhook,
    verify_webhook,
)
from grader.engine.review.queue import unranked
from tests.integration.service import (
    ROOT,
    WebhookReceiver,
    free_port,
    grader_cli,
    printed_value,
    wait_for,
)

pytestmark = pytest.mark.slow

EXAM = "grad_accum_engineer"
ESSAY = "004-s5-q3"
ANSWER = (
    "每个micro-batch的loss除以累积步数再backward，累积够步数后optimizer.step()，然后zero_grad()。"
)


@pytest.fixture
def served(tmp_path):
    """(base URL, API key, webhook secret, receiver) of a running `grader serve --inline`."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'grader.db'}",
        "GRADER_BANKS": json.dumps([str(ROOT / "rubrics" / f"{EXAM}.yaml")]),
        "GRADER_JUDGE": "scripted",
        "GRADER_EMBED_MODEL": "none",
        "GRADER_REDIS_URL": "redis://127.0.0.1:1/0",  # nothing listens: inline must not care
        "GRADER_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver listens on 127.0.0.1
    }
    receiver = WebhookReceiver("")
    added = grader_cli(
        env, tmp_path, "platform", "add", "acme", "--exam", EXAM, "--webhook-url", receiver.url
    )
    receiver.secret = printed_value(added, "webhook_secret")
    port = free_port()
    log = tmp_path / "serve.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", "--inline", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        # The client's own retries ride out the start-up (connection refused until it listens).
        with GraderClient(
            base, printed_value(added, "api_key"), retry=RetryPolicy(retries=12, max_backoff_s=5)
        ) as probe:
            try:
                assert [e.name for e in probe.exams()] == [EXAM]
            except GraderUnavailable:
                pytest.fail(f"grader serve --inline did not answer:\n{log.read_text()}")
        yield base, printed_value(added, "api_key"), receiver.secret, receiver
    finally:
        server.terminate()
        server.wait(20)
        receiver.close()


def test_the_client_against_a_real_server(served):
    base, key, secret, receiver = served
    client = GraderClient(base, key)
    one = {"id": "amy-q3", "exam": EXAM, "question_id": ESSAY, "answer": ANSWER, "student": "amy"}
    first = client.submit(one)
    assert first.id == "amy-q3" and not first.duplicate
    many = [
        {"id": "amy-c1", "exam": EXAM, "question_id": "004-s2-q1", "answer": "C", "student": "amy"},
        {"id": "bob-c1", "exam": EXAM, "question_id": "004-s2-q1", "answer": "A", "student": "bob"},
        {"id": "bob-q3", "exam": EXAM, "question_id": ESSAY, "answer": "多跑几步再更新。", "student": "bob"},
    ]  # fmt: skip
    assert [a.id for a in client.submit_many(many, batch_size=2)] == ["amy-c1", "bob-c1", "bob-q3"]
    again = client.submit_many([one, *many])  # a platform retrying everything: safe
    assert all(a.duplicate for a in again)
    with pytest.raises(IdConflict) as conflict:
        client.submit({**one, "answer": "changed"})
    assert conflict.value.ids == ["amy-q3"]
    with pytest.raises(APIError) as bad:
        client.submit({**one, "id": "x", "question_id": "004-s9-q9"})
    assert bad.value.status_code == 422 and bad.value.detail[0]["loc"] == ["body", 0, "question_id"]

    ids = ["amy-q3", "amy-c1", "bob-c1", "bob-q3"]
    done = client.wait_for_grades(ids, timeout_s=60, poll_s=0.2)
    assert list(done) == ids and all(s.status == "graded" for s in done.values())
    assert done["amy-c1"].grade.score == 2.0 and done["bob-c1"].grade.score == 0.0
    assert done["amy-q3"].grade.method == "judge" and done["amy-q3"].grade.criteria
    assert client.grade("bob-c1") == done["bob-c1"].grade
    by_export = client.wait_for_grades(ids, exam=EXAM, timeout_s=10)
    # A grade's place in the review queue may move when a later batch of its question is
    # ranked (README, "The review queue"); everything else is the grade the poll saw.
    assert {i: unranked(s.grade) for i, s in by_export.items() if s.grade} == {
        i: unranked(s.grade) for i, s in done.items() if s.grade
    }
    with pytest.raises(APIError) as missing:
        client.submission("nobody")
    assert missing.value.status_code == 404

    exported = list(client.export(EXAM))
    assert sorted(s.id for s in exported) == sorted(ids)
    rows = list(csv.DictReader(io.StringIO(b"".join(client.export_csv(EXAM)).decode())))
    assert sorted(r["submission_id"] for r in rows) == sorted(ids)
    wide = list(csv.DictReader(io.StringIO(b"".join(client.export_csv(EXAM, wide=True)).decode())))
    assert [r["student"] for r in wide] == ["amy", "bob"]
    amy = wide[0]
    assert float(amy["004-s2-q1"]) == 2.0 and amy["answered"] == "2"
    assert float(amy["total"]) == pytest.approx(2.0 + done["amy-q3"].grade.score)

    # The webhooks the server sent: real signatures, verified by the platform's side.
    wait_for(lambda: receiver.ids() >= set(ids), 30, "a webhook per grade")
    for delivery in receiver.received:
        assert verify_webhook(secret, delivery["headers"], delivery["body"])
        assert not verify_webhook(secret, delivery["headers"], delivery["body"] + b" ")
        event = parse_webhook(secret, delivery["headers"], delivery["body"])
        # the grade as scored; its place in the review queue (``details.review``) moves as the
        # question's later answers arrive, after this webhook was sent (README, review queue)
        assert unranked(event.grade) == unranked(done[event.submission_id].grade)
    client.close()


def test_an_unreachable_server_is_retried_then_reported():
    sleeps = []
    client = GraderClient(
        f"http://127.0.0.1:{free_port()}", "gk_x", retry=RetryPolicy(retries=2), sleep=sleeps.append
    )
    with pytest.raises(GraderUnavailable, match="ConnectError"):
        client.exams()
    assert len(sleeps) == 2
