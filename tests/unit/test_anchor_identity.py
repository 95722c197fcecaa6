"""Anchors promoted on the instructor pages are named by the store's id of the answer: two
platforms posting the same submission id to one exam stay two answers on the pages, in the
rubric and among the scorer's graded answers; rubric files with plain anchor ids still load."""

import hashlib
import json
import re
import shutil

import pytest
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.api.keys import INSTRUCTOR_PREFIX, new_key
from grader.bank.files import load_bank
from grader.config import JudgeSettings, ServiceSettings, Settings
from grader.engine.reading.rubrics import is_anchor, load_rubric, load_rubrics, save_rubric
from grader.engine.signals.graded_answers import graded_answers
from grader.files.yamlfile import write_yaml
from grader.models import Anchor
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders
from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.integration.service import wait_for
from tests.unit.test_instructor_pages import ESSAY, EXAM, GOOD, WEAK, csrf_of, login

CRITERIA = {"c_C1": "1", "c_C2": "1", "c_C3": "1", "c_C4": "1", "c_C5": "0"}


@pytest.fixture
def two_platforms(tmp_path):
    shutil.copy(RUBRICS / f"{EXAM}.yaml", tmp_path / f"{EXAM}.yaml")
    shutil.copytree(RUBRICS / EXAM, tmp_path / EXAM)
    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{tmp_path / 'grader.db'}", banks=[tmp_path / f"{EXAM}.yaml"]
        ),
        judge=JudgeSettings(backend="scripted"),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    headers = {}
    for name in ("acme", "beta"):
        key = new_key()
        store.accounts.add_platform(name, [EXAM], key.key_id, key.key_hash, "secret")
        headers[name] = {"Authorization": f"Bearer {key.key}"}
    teacher = new_key(INSTRUCTOR_PREFIX)
    store.accounts.add_instructor("li", [EXAM], teacher.key_id, teacher.key_hash)
    graders = Graders.load(settings)
    dispatcher = InlineDispatcher(settings, store, graders, poll_s=0.05)
    app = create_app(settings, store, graders.exams, dispatcher)
    with TestClient(app) as client:
        for name, answer in (("acme", GOOD), ("beta", WEAK)):
            posted = [{"id": "s1", "exam": EXAM, "question_id": ESSAY, "answer": answer}]
            response = client.post("/v1/submissions", json=posted, headers=headers[name])
            assert response.status_code == 202, response.text
        wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 2, 20, "grades")
        login(client, teacher.key)
        yield client, store, tmp_path / f"{EXAM}.yaml"
    dispatcher.close()


def answer_ids(store):
    """The store's id of each platform's "s1", by the answer's text."""
    return {a.submission.answer: a.submission.id for a in store.reviews.answers(EXAM)}


def marked(page: str) -> dict[int, tuple[bool, bool]]:
    """Each answer on a question page: (shown as an anchor, offered for promotion)."""
    cards = re.findall(r'<section class="card[^"]*" id="a(\d+)">(.*?)</section>', page, re.S)
    assert cards, page
    return {
        int(i): ('class="badge ok anchor"' in body, f"/answers/{i}/promote" in body)
        for i, body in cards
    }


def test_promoting_one_platforms_s1_leaves_the_others_s1_alone(two_platforms):
    client, store, bank_path = two_platforms
    ids = answer_ids(store)
    acme, beta = ids[GOOD], ids[WEAK]
    token = csrf_of(client)
    for sid in (acme, beta):
        client.post(f"/instructor/answers/{sid}/score", data={**CRITERIA, "csrf": token})
    promoted = client.post(f"/instructor/answers/{acme}/promote", data={"csrf": token})
    assert promoted.status_code == 200, promoted.text

    rubric = load_rubrics(bank_path, load_bank(bank_path))[ESSAY]
    anchor = rubric.anchors[-1]
    assert (anchor.id, anchor.answer_id, anchor.answer) == (f"answer-{acme}", acme, GOOD)
    page = client.get(f"/instructor/exams/{EXAM}/questions/{ESSAY}").text
    assert marked(page) == {acme: (True, False), beta: (False, True)}

    # the scorer's graded answers: each platform's own s1 with its own text and score
    platforms = {p.name: p.id for p in store.accounts.list_platforms()}
    beta_graded = store.queue.graded(platforms["beta"], EXAM, [ESSAY])
    pool = {g.id: (g.answer, g.score) for g in graded_answers(rubric, beta_graded)}
    assert pool == {str(beta): (WEAK, 4.0), f"anchor:answer-{acme}": (GOOD, 4.0)}
    acme_graded = store.queue.graded(platforms["acme"], EXAM, [ESSAY])
    pool = {g.id: (g.answer, g.score) for g in graded_answers(rubric, acme_graded)}
    assert pool == {str(acme): (GOOD, 4.0)}  # the anchor is that answer: once

    # beta's s1 is not "already an anchor": it becomes one of its own
    promoted = client.post(f"/instructor/answers/{beta}/promote", data={"csrf": token})
    assert promoted.status_code == 200, promoted.text
    page = client.get(f"/instructor/exams/{EXAM}/questions/{ESSAY}").text
    assert marked(page) == {acme: (True, False), beta: (True, False)}


def test_a_rubric_file_with_plain_anchor_ids_loads_and_keeps_its_version(tmp_path):
    bank = load_bank(RUBRICS / f"{EXAM}.yaml")
    rubric = load_rubrics(RUBRICS / f"{EXAM}.yaml", bank)[ESSAY]
    data = rubric.model_dump(mode="json", exclude={"version"})
    data["anchors"] = [{"id": "s1", "answer": GOOD, "scores": {f"C{i}": 1.0 for i in range(1, 6)}}]
    write_yaml(data, tmp_path / f"{ESSAY}.yaml")
    old = load_rubric(tmp_path / f"{ESSAY}.yaml", bank)
    assert old.anchors[0].id == "s1" and old.anchors[0].answer_id is None
    saved = save_rubric(old, tmp_path / "again")
    assert "answer_id" not in saved.read_text(encoding="utf-8")
    assert load_rubric(saved, bank).version == old.version
    # the version is the hash it always was: the content without an absent answer_id
    data["anchors"][0]["note"] = None
    blob = json.dumps(data, ensure_ascii=False, sort_keys=True).encode()
    assert old.version == hashlib.sha256(blob).hexdigest()[:12]


def test_an_anchor_is_its_answer_by_store_id_else_by_submission_id_and_text_both():
    promoted = Anchor(id="answer-5", answer=GOOD, scores={}, answer_id=5)
    assert is_anchor(promoted, 5, "s1", GOOD)
    assert not is_anchor(promoted, 6, "s1", GOOD)  # another platform's s1
    assert not is_anchor(promoted, 5, "s1", WEAK)  # a rubric copied to another database
    plain = Anchor(id="s1", answer=GOOD, scores={})  # from `grader calibrate promote`
    assert is_anchor(plain, 5, "s1", GOOD)
    assert not is_anchor(plain, 6, "s1", WEAK) and not is_anchor(plain, 5, "s2", GOOD)
