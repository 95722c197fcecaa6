"""Changing a question's rubric from its page: a known wrong claim marked on a
graded answer, and the conclusion's gate switched off and on. The service of
``test_instructor_pages`` (real SQLite, scripted judge, a copy of the bank), with the essay's
rubric naming a verdict it must conclude."""

import re
import shutil

import pytest
import yaml

from grader.bank.files import load_bank
from grader.engine.reading.rubrics import load_rubrics
from tests.conftest import RUBRICS
from tests.integration.service import wait_for
from tests.unit.test_instructor_pages import ESSAY, EXAM, GOOD, OTHER, csrf_of, login, service, sid

__all__ = ["service"]  # the fixture, used by name

CLAIM = "学习率越大收敛越快"
WRONG = GOOD + CLAIM + "。"
QUESTION = f"/instructor/exams/{EXAM}/questions/{ESSAY}"


@pytest.fixture
def bank_copy(tmp_path):
    """The bank copy, the essay's rubric concluding 错误 (an answer saying 正确 gets 0)."""
    for name in (EXAM, OTHER):
        shutil.copy(RUBRICS / f"{name}.yaml", tmp_path / f"{name}.yaml")
        shutil.copytree(RUBRICS / name, tmp_path / name)
    path = tmp_path / EXAM / f"{ESSAY}.yaml"
    rubric = yaml.safe_load(path.read_text(encoding="utf-8"))
    rubric["conclusion"] = {"kind": "verdict", "expected": "错误"}
    path.write_text(yaml.safe_dump(rubric, allow_unicode=True), encoding="utf-8")
    return tmp_path


def rubric_on_disk(bank):
    return load_rubrics(bank / f"{EXAM}.yaml", load_bank(bank / f"{EXAM}.yaml"))[ESSAY]


def post_and_grade(client, store, api, external_id, answer):
    """A new answer to the essay through the API, graded; its stored grade."""
    posted = {"id": external_id, "exam": EXAM, "question_id": ESSAY, "answer": answer}
    assert client.post("/v1/submissions", json=posted, headers=api).status_code == 202
    wait_for(
        lambda: store.reviews.answer(sid(store, external_id)).submission.grade is not None,
        20,
        f"the grade of {external_id}",
    )
    return store.reviews.answer(sid(store, external_id)).submission.grade


def test_a_wrong_claim_marked_on_an_answer_takes_its_points_from_the_next_grade(service):
    client, store, keys, api, bank = service
    before = rubric_on_disk(bank)
    first = post_and_grade(client, store, api, "w1", WRONG)
    assert first.score > 1 and "wrong_claim" not in {r.code for r in first.review_reasons}
    login(client, keys["li"])
    page = client.get(QUESTION).text
    assert f"<option>{CLAIM}</option>" in page  # the answer's sentences, offered
    done = client.post(
        f"/instructor/answers/{sid(store, 'w1')}/wrong-claim",
        data={"sentence": CLAIM, "claim": "", "criterion": "C2", "csrf": csrf_of(client)},
    )
    assert done.status_code == 200 and "Wrong claim added" in done.text
    after = rubric_on_disk(bank)
    assert after.version != before.version and f"version {after.version}" in done.text
    listed = [w.claim for w in before.criteria[1].wrong_claims]
    assert [w.claim for w in after.criteria[1].wrong_claims] == [*listed, CLAIM]
    assert after.anchors == before.anchors and after.conclusion == before.conclusion
    assert f"“{CLAIM}”" in done.text  # listed with its criterion
    again = post_and_grade(client, store, api, "w2", WRONG)
    # C2's point, and C2 verifies nothing now (its wrong claim asserted): what it held goes too
    assert again.details.claims is not None and again.details.claims.set_aside == ["C2"]
    held = next(c.points for c in first.criteria if c.id == "C2")
    assert first.score - 1 - held - 0.5 < again.score <= first.score - 1  # in half points
    assert again.details.substance is not None
    assert [c.claim for c in again.details.substance.claims if not c.negated] == [CLAIM]
    ranked = again.details.review  # a deduction ranks the grade; it flags nothing by itself
    assert ranked is not None and "wrong_claim" in {r.code for r in ranked.explanations}
    assert again.provenance.rubric_version == after.version
    kept = store.reviews.answer(sid(store, "w1")).submission.grade
    assert kept.score == first.score  # stored grades keep theirs


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"claim": " ", "sentence": ""}, "claim: required: pick a sentence"),
        ({"claim": "错" * 201}, "claim: 201 characters; the limit is 200"),
        ({"claim": "。"}, "is too short to recognise"),
        ({"claim": "每个micro-batch都调用optimizer.step()"}, "claim: already a wrong claim of C4"),
        ({"claim": CLAIM, "criterion": "C9"}, "criterion: pick one of C1, C2, C3, C4, C5"),
        ({"claim": CLAIM, "points": "3"}, "points: 3 is outside 0..1"),
        ({"claim": CLAIM, "points": "0"}, "points: must be more than 0"),
        ({"claim": CLAIM, "points": "0.3"}, "points: whole or half points"),
    ],
)  # fmt: skip
def test_a_bad_wrong_claim_is_refused_naming_the_field(service, data, message):
    client, store, keys, _, bank = service
    before = rubric_on_disk(bank)
    login(client, keys["li"])
    url = f"/instructor/answers/{sid(store, 'e1')}/wrong-claim"
    response = client.post(url, data={"criterion": "C2", **data, "csrf": csrf_of(client)})
    assert response.status_code == 422 and message in response.text
    assert rubric_on_disk(bank).version == before.version


def test_a_claim_needs_the_token_and_the_exams_instructor(service):
    client, store, keys, _, bank = service
    before = rubric_on_disk(bank)
    url = f"/instructor/answers/{sid(store, 'e1')}/wrong-claim"
    gate = f"{QUESTION}/gate"
    login(client, keys["li"])
    for data in ({"claim": CLAIM, "criterion": "C2"}, {"claim": CLAIM, "criterion": "C2",
                                                     "csrf": "forged"}):  # fmt: skip
        assert client.post(url, data=data).status_code == 403
        assert client.post(gate, data={**data, "gate": "off"}).status_code == 403
    client.cookies.clear()
    login(client, keys["wang"])  # another exam's instructor
    token = csrf_of(client)
    assert (
        client.post(url, data={"claim": CLAIM, "criterion": "C2", "csrf": token}).status_code == 404
    )
    assert client.post(gate, data={"gate": "off", "csrf": token}).status_code == 404
    assert rubric_on_disk(bank).version == before.version


def test_switching_the_gate_off_stops_the_cap_on_new_grades(service):
    client, store, keys, api, bank = service
    capped = post_and_grade(client, store, api, "v1", "正确。" + GOOD)
    assert capped.score == 0 and capped.details.conclusion.decision == "mismatch"
    login(client, keys["li"])
    page = client.get(QUESTION).text
    assert re.search(r'class="conclusion-expected">错误<', page) and "(0)" in page
    assert re.search(r'gate-state">on<', page) and 'name="gate" value="off"' in page
    token = csrf_of(client, QUESTION)
    off = client.post(f"{QUESTION}/gate", data={"gate": "off", "csrf": token})
    assert off.status_code == 200 and "Gate switched off" in off.text
    assert re.search(r'gate-state">off<', off.text) and 'name="gate" value="on"' in off.text
    assert rubric_on_disk(bank).conclusion.gate is False
    free = post_and_grade(client, store, api, "v2", "正确。" + GOOD)
    assert free.score > 0 and free.details.conclusion.decision == "mismatch"
    version = rubric_on_disk(bank).version
    client.post(f"{QUESTION}/gate", data={"gate": "off", "csrf": token})  # sent twice: no change
    assert rubric_on_disk(bank).version == version
    on = client.post(f"{QUESTION}/gate", data={"gate": "on", "csrf": token})
    assert on.status_code == 200 and rubric_on_disk(bank).conclusion.gate is True
    assert post_and_grade(client, store, api, "v3", "正确。" + GOOD).score == 0
    bad = client.post(f"{QUESTION}/gate", data={"gate": "maybe", "csrf": token})
    assert bad.status_code == 422 and "gate: must be on or off" in bad.text


def test_a_rubric_without_a_conclusion_has_no_gate_to_switch(service):
    client, _, keys, _, _ = service
    login(client, keys["li"])
    other = f"/instructor/exams/{EXAM}/questions/004-s5-q1"
    assert "gate-form" not in client.get(other).text
    refused = client.post(f"{other}/gate", data={"gate": "off", "csrf": csrf_of(client)})
    assert refused.status_code == 422 and "gate: this rubric names no conclusion" in refused.text
