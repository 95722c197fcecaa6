"""The scorer refit on the instructor pages, with TestClient: proposed from the exam's
instructor scores, shown before and after, applied to the stored grades without the judge
(the app has no judge at all), refused without a CSRF token, for another instructor's exam,
and with too few scores."""

import asyncio
import re

import pytest
from fastapi.testclient import TestClient

import grader.embed
from grader.api.app import create_app
from grader.api.keys import INSTRUCTOR_PREFIX, new_key
from grader.config import JudgeSettings, ScorerSettings, ServiceSettings, Settings
from grader.engine.scoring.scorer_model import from_json
from grader.errors import CalibrationError
from grader.service import refits
from grader.service.exams import load_exams
from grader.service.store import Store
from grader.service.store.records import NewSubmission
from tests.conftest import RUBRICS
from tests.dispatchers import Refusing
from tests.embedders import CountingEmbedder
from tests.refit_exam import BASE, CHOICE, EXAM, QUESTIONS, scored_exam

OTHER = "llm_trainer_solutions"
URL = f"/instructor/exams/{EXAM}/scorer"


@pytest.fixture
def service(tmp_path):
    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{tmp_path / 'grader.db'}",
            banks=[RUBRICS / f"{EXAM}.yaml", RUBRICS / f"{OTHER}.yaml"],
        ),
        judge=JudgeSettings(backend="scripted"),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    platform = new_key()
    acme = store.accounts.add_platform(
        "acme", [EXAM, OTHER], platform.key_id, platform.key_hash, "s"
    )
    keys, ids = {}, {}
    for name, exam in (("li", EXAM), ("wang", OTHER)):
        key = new_key(INSTRUCTOR_PREFIX)
        ids[name] = store.accounts.add_instructor(name, [exam], key.key_id, key.key_hash)
        keys[name] = key.key
    app = create_app(settings, store, load_exams(settings.service.banks), Refusing())
    with TestClient(app) as client:
        yield client, store, keys, acme, ids


def login(client, key):
    client.cookies.clear()
    assert client.post("/instructor/login", data={"key": key}, follow_redirects=False).is_redirect


def csrf_of(client, url=URL):
    page = client.get(url)
    assert page.status_code == 200, page.text
    return re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def propose(client):
    response = client.post(f"{URL}/propose", data={"csrf": csrf_of(client)}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response.headers["location"]


def test_a_refit_is_proposed_compared_and_applied_to_the_stored_grades(service):
    client, store, keys, acme, ids = service
    answers = scored_exam(store, acme, ids["li"])  # 60 scored on 3 questions, 6 more
    before = {a.submission.id: a.submission.grade for a in store.reviews.answers(EXAM)}
    login(client, keys["li"])
    assert f'href="{URL}"' in client.get(f"/instructor/exams/{EXAM}").text  # linked

    page_url = propose(client)
    proposal = store.scorers.proposals(EXAM)[0]
    assert page_url == f"{URL}/{proposal.id}?done=proposed"
    assert proposal.created_by == "li" and proposal.applied_at is None
    assert store.scorers.applied(EXAM) is None  # proposed, not applied: grades untouched
    report = proposal.report
    assert report["answers"] == 60 and report["questions"] == 3
    page = client.get(page_url)
    assert page.status_code == 200 and "Refit proposed" in page.text
    # before and after on held-out questions, as the report computed them
    for side in ("before", "after"):
        mae = report["comparison"][side]["overall"]["mae"]["value"]
        assert re.search(rf'class="num {side}">{mae:.3f}', page.text), side
    assert "whole questions held out" in page.text and "004-s5-q2" in page.text
    assert (
        report["comparison"]["after"]["overall"]["mae"]["value"]
        < (report["comparison"]["before"]["overall"]["mae"]["value"])
    )  # the grades as they are weigh the wrong signal; the refit learns the instructor's
    advice = re.search(r'id="refit-advice">([^<]+)<', page.text).group(1)
    assert advice.startswith(("Apply it: MAE fell", "Mixed: MAE fell")), advice

    applied = client.post(
        f"{URL}/{proposal.id}/apply", data={"csrf": csrf_of(client)}, follow_redirects=False
    )
    assert applied.status_code == 303
    page = client.get(applied.headers["location"])
    assert "Refit applied: 66 grade(s) re-scored without the judge" in page.text
    assert "1 kept as they were" in page.text and "grading now" in page.text
    assert store.scorers.applied(EXAM).id == proposal.id
    refit = from_json(proposal.text)
    after = {a.submission.id: a.submission for a in store.reviews.answers(EXAM)}
    changed = 0
    for external, sid in answers.items():
        grade, old = after[sid].grade, before[sid]
        assert grade.submission_id == external  # the platform's id, as stored before
        if external.endswith("choice"):
            assert grade == old  # objective: no scorer decided it
            continue
        assert grade.provenance.scorer_version == refit.version != BASE.version
        assert grade.details.rescored_from.score == old.score
        assert grade.details.judge_points == old.details.judge_points
        changed += grade.score != old.score
    assert changed > 0


def test_too_few_scores_are_refused_with_the_minimum_and_nothing_is_kept(service):
    client, store, keys, acme, ids = service
    scored_exam(store, acme, ids["li"], per_question=5)  # 15 scored answers
    login(client, keys["li"])
    response = client.post(f"{URL}/propose", data={"csrf": csrf_of(client)})
    assert response.status_code == 422
    assert "too few answers to refit the scorer: 15 answer(s) on 3 question(s)" in response.text
    assert "at least 30 answers on at least 3 questions" in response.text
    assert store.scorers.proposals(EXAM) == []


def test_scores_the_scorer_did_not_decide_are_named_in_the_refusal(service):
    client, store, keys, acme, ids = service
    answers = scored_exam(store, acme, None, per_question=0)
    store.reviews.set_human_score(answers["r-choice"], ids["li"], 2.0, None)
    [(queued, _)] = store.intake.submit(acme, [NewSubmission("new", EXAM, QUESTIONS[0], "…")])
    store.reviews.set_human_score(queued.id, ids["li"], 1.0, None)  # not graded yet
    login(client, keys["li"])
    response = client.post(f"{URL}/propose", data={"csrf": csrf_of(client)})
    assert response.status_code == 422
    assert "0 answer(s) on 0 question(s)" in response.text
    assert "1 answer(s) you scored were not graded by the scorer" in response.text
    assert "1 answer(s) you scored have no grade yet" in response.text


def test_the_refit_forms_need_the_token_and_the_instructors_own_exam(service):
    client, store, keys, acme, ids = service
    scored_exam(store, acme, ids["li"])
    login(client, keys["li"])
    assert client.post(f"{URL}/propose", data={"csrf": "forged"}).status_code == 403
    assert client.post(f"{URL}/propose").status_code == 403
    assert store.scorers.proposals(EXAM) == []
    proposal_id = propose(client).split("/")[-1].split("?")[0]
    assert client.post(f"{URL}/{proposal_id}/apply", data={"csrf": "x"}).status_code == 403
    assert store.scorers.applied(EXAM) is None

    login(client, keys["wang"])  # an instructor of another exam
    token = csrf_of(client, "/instructor")
    assert client.get(URL).status_code == 404
    assert client.get(f"{URL}/{proposal_id}").status_code == 404
    assert client.post(f"{URL}/propose", data={"csrf": token}).status_code == 404
    assert client.post(f"{URL}/{proposal_id}/apply", data={"csrf": token}).status_code == 404
    # their own exam's path does not reach it either
    mine = f"/instructor/exams/{OTHER}/scorer/{proposal_id}"
    assert client.get(mine).status_code == 404
    assert client.post(f"{mine}/apply", data={"csrf": token}).status_code == 404
    assert store.scorers.applied(EXAM) is None and len(store.scorers.proposals(EXAM)) == 1
    client.cookies.clear()
    assert client.post(f"{URL}/propose", data={"csrf": token}).status_code == 401


def test_grades_are_re_scored_with_their_own_platforms_neighbours(service):
    """Two platforms post the same ids: each grade goes back to its own submission, and leans
    only on its own platform's scored answers."""
    client, store, keys, acme, ids = service
    beta_key = new_key()
    beta = store.accounts.add_platform("beta", [EXAM], beta_key.key_id, beta_key.key_hash, "s")
    scored_exam(store, acme, ids["li"])
    scored_exam(store, beta, ids["li"], per_question=3, seed=1)  # the same external ids
    client.app.state.instructor_pages.__dict__["embedder"] = CountingEmbedder()
    login(client, keys["li"])
    proposal_id = propose(client).split("/")[-1].split("?")[0]
    assert store.scorers.get(EXAM, int(proposal_id)).report["neighbours"] is True
    response = client.post(
        f"{URL}/{proposal_id}/apply", data={"csrf": csrf_of(client)}, follow_redirects=False
    )
    assert response.status_code == 303
    for platform, per_question in ((acme, 20), (beta, 3)):
        rows = [a for a in store.reviews.answers(EXAM) if a.submission.platform_id == platform]
        scored = {a.submission.external_id for a in rows if a.human is not None}
        assert len(scored) == 3 * per_question
        leaned = set()
        for row in rows:
            grade = row.submission.grade
            assert grade.submission_id == row.submission.external_id
            if row.submission.question_id == CHOICE:
                continue
            explained = grade.details.scorer
            leaned |= {n.id for n in [*explained.neighbours, *explained.copies]}
        assert leaned and leaned <= scored  # by the platform's ids, its own scored answers
    beta_rows = [
        a.submission.grade
        for a in store.reviews.answers(EXAM)
        if a.submission.platform_id == beta and a.submission.question_id != CHOICE
    ]
    assert max(len(g.details.scorer.neighbours) for g in beta_rows) == 3  # of its 3


def test_the_refit_and_its_embedder_run_off_the_event_loop(service, monkeypatch):
    client, store, keys, acme, ids = service
    scored_exam(store, acme, ids["li"])
    made = []

    def embedder_here(settings, progress=None):
        try:
            asyncio.get_running_loop()
            made.append("event loop")
        except RuntimeError:
            made.append("worker thread")

    monkeypatch.setattr(grader.embed, "make_embedder", embedder_here)
    login(client, keys["li"])
    proposal_id = propose(client).split("/")[-1].split("?")[0]
    apply_url = f"{URL}/{proposal_id}/apply"
    assert client.post(apply_url, data={"csrf": csrf_of(client)}).status_code == 200
    assert made == ["worker thread"]  # made once, where the refit runs


def test_the_next_refit_starts_from_the_applied_one_and_grader_scorer_refuses(service, tmp_path):
    _, store, _, acme, ids = service
    scored_exam(store, acme, ids["li"])
    settings = Settings(service=ServiceSettings(database_url=f"sqlite:///{tmp_path / 'grader.db'}"))
    exam = load_exams([RUBRICS / f"{EXAM}.yaml"])[EXAM]
    assert refits.base_scorer(settings, store, exam).version == BASE.version
    proposal = refits.propose(settings, store, exam, "li", None, bootstrap=0)
    assert refits.base_scorer(settings, store, exam).version == BASE.version  # not applied
    refits.apply(settings, store, exam, proposal, "li", None)
    assert refits.base_scorer(settings, store, exam).version == proposal.version
    pinned = settings.model_copy(update={"scorer": ScorerSettings(choice="default")})
    for attempt in (
        lambda: refits.propose(pinned, store, exam, "li", None, bootstrap=0),
        lambda: refits.apply(pinned, store, exam, proposal, "li", None),
    ):
        with pytest.raises(CalibrationError, match="GRADER_SCORER is set"):
            attempt()
