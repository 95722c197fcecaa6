"""A rubric edited on the pages reaches Celery workers without a restart, and a regrade of the
question runs on them: the API in this process (TestClient), a `grader worker` process, one
SQLite file and one Redis (the fixtures of test_queue_service). The platform's receiver gets
a `grade.updated` for each grade the regrade moved."""

from __future__ import annotations

import shutil

import pytest

from grader.models import WrongClaim
from grader.service import rubric_versions
from grader.service.exams import load_exams
from tests.integration.service import NEEDS_REDIS, wait_for
from tests.integration.test_queue_service import (  # noqa: F401 (fixtures)
    BANK,
    EXAM,
    Service,
    receiver,
    redis,
)

pytestmark = NEEDS_REDIS

ESSAY = "004-s5-q3"
CLAIM = "学习率越大收敛越快"
GOOD = "每个micro-batch的loss除以累积步数再backward，梯度累加到.grad；累积够步数后optimizer.step()，然后zero_grad()。"  # fmt: skip


@pytest.fixture
def service(tmp_path, redis, receiver):  # noqa: F811
    """test_queue_service's, on a copy of the bank: saving a rubric writes its file."""
    shutil.copy(BANK, tmp_path / BANK.name)
    shutil.copytree(BANK.with_suffix(""), tmp_path / BANK.stem)
    s = Service(tmp_path, redis, receiver, banks=[str(tmp_path / BANK.name)], sweep_after_s=60)
    yield s
    s.close()
    print(s.logs())


def essay(i: int, answer: str) -> dict:
    return {"id": f"e{i}", "exam": EXAM, "question_id": ESSAY, "answer": answer}


def test_a_rubric_edit_reaches_the_workers_and_a_regrade_runs_on_them(service, receiver):  # noqa: F811
    service.start_worker()
    service.post([essay(1, GOOD + CLAIM + "。"), essay(2, GOOD)])
    wait_for(lambda: service.graded() == 2, 120, "2 grades (the worker starts)")
    before = {e: service.client.get(f"/v1/submissions/{e}", headers=service.headers).json()["grade"]
              for e in ("e1", "e2")}  # fmt: skip
    # the pages' process saves a new version (as the wrong-claim form does)
    exam = service.client.app.state.services.exams[EXAM]
    rubric = exam.rubrics[ESSAY]
    criteria = [c.model_copy(update={"wrong_claims": [*c.wrong_claims, WrongClaim(claim=CLAIM)],
                                     "description": c.description + "（写出缩放公式）"})
                if c.id == "C2" else c for c in rubric.criteria]  # fmt: skip
    new = rubric.model_copy(update={"criteria": criteria})
    rubric_versions.save(exam, service.store, exam.bank.get(ESSAY), new, "li", "a claim")
    # a new answer with the claim: graded with the new version by the same worker
    service.post([essay(3, GOOD + CLAIM + "。")])
    wait_for(lambda: service.graded() == 3, 60, "the third grade")
    before["e3"] = third = service.client.get("/v1/submissions/e3",
                                              headers=service.headers).json()["grade"]  # fmt: skip
    assert third["provenance"]["rubric_version"] == new.version
    # the claim is read (a reason the review ranking gives, queued or not: the budget decides)
    assert "wrong_claim" in {r["code"] for r in third["details"]["review"]["explanations"]}
    assert [c["claim"] for c in third["details"]["substance"]["claims"]][:1] == [CLAIM]

    # the regrade of the question, on the worker: every answer graded against the new version
    job = service.store.regrades.start(EXAM, ESSAY, new.version, "li")
    service.dispatcher.regrade(job.id)
    wait_for(lambda: service.store.regrades.get(job.id).finished, 60, "the regrade")
    done = service.store.regrades.get(job.id)
    assert (done.status, done.done, done.total) == ("done", 3, 3)
    judged = {a.submission.external_id: a.submission.grade
              for a in service.store.reviews.answers(EXAM, ESSAY)}  # fmt: skip
    assert {g.provenance.rubric_version for g in judged.values()} == {new.version}
    assert "wrong_claim" in {r.code for r in judged["e1"].details.review.explanations}

    def updated():
        return [r["payload"] for r in receiver.received if r["payload"]["event"] == "grade.updated"]

    # a grade.updated for each grade the platform reads that moved, and only those
    moved = {e for e in ("e1", "e2", "e3") if judged[e].score != before[e]["score"]}
    wait_for(lambda: {p["submission_id"] for p in updated()} == moved, 60, "the updates")
    assert len(updated()) == len(moved) == done.changed
    assert all(r["valid"] for r in receiver.received)
    for payload in updated():
        now = service.client.get(f"/v1/submissions/{payload['submission_id']}",
                                 headers=service.headers).json()  # fmt: skip
        assert payload["version"] == now["version"] == 2
        assert payload["change"]["cause"] == "rubric"
        assert payload["change"]["rubric_version"] == new.version
        assert payload["grade"] == now["grade"]  # the API's grade is the webhook's last version
    copy = service.settings.service.banks[0]
    assert load_exams([copy])[EXAM].rubrics[ESSAY].version == new.version  # the file written
    assert load_exams([BANK])[EXAM].rubrics[ESSAY].version != new.version
