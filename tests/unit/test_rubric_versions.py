"""Rubric versions kept in the service: a rubric saved on the pages reaches a grading process
that loaded its exams on its own (as a worker or `serve --inline`'s child does) at its next
batch, without a restart; a rubric file edited by hand is imported at the API's start, an
older copy is not; the file is written back as a small diff."""

import shutil

import pytest
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.api.keys import INSTRUCTOR_PREFIX, new_key
from grader.bank.files import load_bank
from grader.config import JudgeSettings, ServiceSettings, Settings
from grader.engine.reading.rubrics import load_rubrics
from grader.models import WrongClaim
from grader.service import rubric_versions
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders, load_exams
from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.unit.test_instructor_pages import ESSAY, EXAM, csrf_of, login, sid
from tests.unit.test_instructor_rubric_edits import CLAIM, WRONG, post_and_grade


@pytest.fixture
def apart(tmp_path):
    """The pages' exams and the grader's, loaded apart: only the store joins them."""
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
    platform, instructor = new_key(), new_key(INSTRUCTOR_PREFIX)
    store.accounts.add_platform("acme", [EXAM], platform.key_id, platform.key_hash, "s")
    store.accounts.add_instructor("li", [EXAM], instructor.key_id, instructor.key_hash)
    graders = Graders.load(settings)  # the grading process's own exams
    dispatcher = InlineDispatcher(settings, store, graders, poll_s=0.05)
    pages_exams = load_exams(settings.service.banks)
    assert pages_exams[EXAM] is not graders.exams[EXAM]
    app = create_app(settings, store, pages_exams, dispatcher)
    api = {"Authorization": f"Bearer {platform.key}"}
    with TestClient(app) as client:
        yield client, store, instructor.key, api, tmp_path, graders
    dispatcher.close()


def test_a_claim_saved_on_the_pages_grades_the_next_answer_in_another_process(apart):
    client, store, key, api, bank, graders = apart
    original = (bank / EXAM / f"{ESSAY}.yaml").read_text(encoding="utf-8")
    before = load_rubrics(bank / f"{EXAM}.yaml", load_bank(bank / f"{EXAM}.yaml"))[ESSAY]
    listed = any(c.wrong_claims for c in before.criteria if c.id == "C2")
    first = post_and_grade(client, store, api, "w1", WRONG)
    login(client, key)
    done = client.post(
        f"/instructor/answers/{sid(store, 'w1')}/wrong-claim",
        data={"sentence": CLAIM, "claim": "", "criterion": "C2", "csrf": csrf_of(client)},
    )
    assert done.status_code == 200 and "Wrong claim added" in done.text
    saved = store.rubrics.current(EXAM)[ESSAY]
    assert saved.created_by == "li" and saved.note == "wrong claim of C2 added"
    assert graders.exams[EXAM].rubrics[ESSAY].version != saved.rubric.version  # not yet read
    again = post_and_grade(client, store, api, "w2", WRONG)
    assert again.provenance.rubric_version == saved.rubric.version  # read before the batch
    assert [c.claim for c in again.details.substance.claims if not c.negated] == [CLAIM]
    assert "wrong_claim" in {r.code for r in again.details.review.explanations}  # ranks it
    assert again.score < first.score
    # the file: the claim's lines added, the rest as it was
    written = (bank / EXAM / f"{ESSAY}.yaml").read_text(encoding="utf-8")
    added = set(written.splitlines()) - set(original.splitlines())
    assert added == {f"      - claim: {CLAIM}"}  # and a "wrong_claims:" line if C2 had none
    assert len(written.splitlines()) == len(original.splitlines()) + (1 if listed else 2)
    disk = load_rubrics(bank / f"{EXAM}.yaml", load_bank(bank / f"{EXAM}.yaml"))[ESSAY]
    assert disk.version == saved.rubric.version


def test_a_hand_edited_file_is_imported_and_an_older_copy_is_not(apart):
    _, store, _, _, bank, _ = apart
    exams = load_exams([bank / f"{EXAM}.yaml"])
    exam = exams[EXAM]
    assert rubric_versions.import_files(exams, store) == 0  # the app's start imported them all
    rubric = exam.rubrics[ESSAY]
    criteria = [c.model_copy(update={"wrong_claims": [WrongClaim(claim="不需要清零")]})
                if c.id == "C1" else c for c in rubric.criteria]  # fmt: skip
    edited = rubric.model_copy(update={"criteria": criteria})
    rubric_versions.write_file(exam, edited)  # as if an instructor edited the YAML
    later = load_exams([bank / f"{EXAM}.yaml"])
    assert rubric_versions.import_files(later, store) == 1
    assert store.rubrics.current(EXAM)[ESSAY].rubric.version == edited.version
    assert store.rubrics.current(EXAM)[ESSAY].created_by == rubric_versions.FROM_FILE
    rubric_versions.write_file(exam, rubric)  # an older copy of the file, on another host
    stale = load_exams([bank / f"{EXAM}.yaml"])
    assert rubric_versions.import_files(stale, store) == 0
    assert stale[EXAM].rubrics[ESSAY].version == edited.version  # the store's newest rules
    assert not rubric_versions.refresh(stale[EXAM], store)  # nothing new since
