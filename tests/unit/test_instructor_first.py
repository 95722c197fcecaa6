"""The instructor pages' "grade these first", with TestClient: a question's K answers in the
order ``engine.review.suggest`` picks them (what ``grader suggest`` writes), scored from the page and
back to it, then the question's stored grades re-scored with those scores as graded
neighbours by the exam's scorer as it stands. The app has no judge at all and a dispatcher
that fails the test on any enqueue: a regrade that needed the judge could not pass."""

import dataclasses
import re

import pytest

from grader.config import ScorerSettings, ServiceSettings, Settings
from grader.engine.review.suggest import suggest
from grader.engine.signals.cohort import group_answers
from grader.errors import CalibrationError
from grader.models import Submission
from grader.service import refits
from grader.service.exams import load_exams
from tests.conftest import RUBRICS
from tests.embedders import CountingEmbedder
from tests.refit_exam import BASE, CHOICE, EXAM, QUESTIONS, scored_exam
from tests.unit.test_instructor_refit import csrf_of, login, service  # noqa: F401 (fixture)

QUESTION = QUESTIONS[0]
QUESTION_URL = f"/instructor/exams/{EXAM}/questions/{QUESTION}"
URL = f"{QUESTION_URL}/first"


def _embedder(client) -> CountingEmbedder:
    embedder = CountingEmbedder()
    client.app.state.instructor_pages.__dict__["embedder"] = embedder  # the cached property
    return embedder


def _listed(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<section class="card" id="a(\d+)"', html)]


def _grades(store, question_id=None):
    return {a.submission.id: a.submission.grade for a in store.reviews.answers(EXAM, question_id)}


def test_the_page_lists_k_answers_in_the_order_suggest_picks_them(service):  # noqa: F811
    client, store, keys, acme, _ = service
    scored_exam(store, acme, None, per_question=0, unscored=30)
    _embedder(client)
    login(client, keys["li"])
    assert f'href="{URL}"' in client.get(f"/instructor/exams/{EXAM}").text  # the list links it
    assert f'href="{URL}"' in client.get(QUESTION_URL).text  # and the question page

    page = client.get(f"{URL}?k=5")
    assert page.status_code == 200, page.text
    rows = store.reviews.answers(EXAM, QUESTION)
    answers = [Submission(id=str(r.submission.id), question_id=QUESTION,
                          answer=r.submission.answer) for r in rows]  # fmt: skip
    settings = client.app.state.instructor_pages.settings
    picked = suggest(store_bank(client), answers, CountingEmbedder(), settings.rules, 5)
    expected = [int(s.id) for s in picked]
    listed = _listed(page.text)
    assert sorted(listed) == sorted(expected)  # suggest's picks ...
    vectors = CountingEmbedder().encode([a.answer for a in answers])
    group = {int(answers[m].id): g.id
             for g in group_answers(vectors, settings.signals.group_cosine) for m in g.members}  # fmt: skip
    firsts = [not any(group[i] == group[j] for j in listed[:k]) for k, i in enumerate(listed)]
    assert firsts == sorted(firsts, reverse=True)  # ... one of each answer group first
    assert [i for i, f in zip(listed, firsts, strict=True) if f] == list(
        dict.fromkeys(i for i in expected if not any(group[i] == group[j]
                      for j in expected[: expected.index(i)]))
    )  # fmt: skip
    assert expected != sorted(expected)  # chosen, not the first five posted
    assert page.text.count("not scored yet") == 5 and "0 of 5 scored." in page.text
    assert len(_listed(client.get(URL).text)) == 10  # K is 10 unless asked
    for bad in (0, 51, "x"):
        assert client.get(f"{URL}?k={bad}").status_code == 422


def store_bank(client):
    return client.app.state.instructor_pages.exams[EXAM].bank


def test_scoring_from_the_page_returns_to_it_and_marks_the_answer_scored(service):  # noqa: F811
    client, store, keys, acme, _ = service
    scored_exam(store, acme, None, per_question=0, unscored=12)
    _embedder(client)
    login(client, keys["li"])
    first = _listed(client.get(f"{URL}?k=4").text)
    response = client.post(
        f"/instructor/answers/{first[1]}/score",
        data={"csrf": csrf_of(client, f"{URL}?k=4"), "score": "3.5", "back": "first", "k": "4"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == f"{URL}?done=score&k=4#a{first[1]}"
    page = client.get(response.headers["location"])
    assert "Human score saved." in page.text and "1 of 4 scored." in page.text
    assert _listed(page.text) == first  # the same picks, the scored one marked
    card = page.text.split(f'id="a{first[1]}"')[1].split("</section>")[0]
    assert (
        "scored 3.5 · li" in card
        and 'name="score" step="any" min="0" max="5.0" value="3.5"' in card
    )
    assert store.reviews.answer(first[1]).human.score == 3.5


def test_regrade_re_scores_the_question_with_the_new_scores_and_keeps_overrides(service):  # noqa: F811
    client, store, keys, acme, instructors = service
    ids = scored_exam(store, acme, None, per_question=0, unscored=22)
    for a in range(20):  # the instructor scores 20 of the question's 22 (as if from the page)
        store.reviews.set_human_score(ids[f"r0-{a}"], instructors["li"], float(a % 6), None)
    overridden = ids["r0-21"]
    store.reviews.add_override(overridden, 4.5, "read by hand", "li")
    before, others = _grades(store, QUESTION), _grades(store)
    embedder = _embedder(client)
    login(client, keys["li"])
    response = client.post(
        f"{QUESTION_URL}/regrade", data={"csrf": csrf_of(client, URL), "k": "10"},
        follow_redirects=False,
    )  # fmt: skip
    assert response.status_code == 303, response.text
    after = _grades(store, QUESTION)
    changed = sum(after[i].score != before[i].score for i in before)
    assert changed > 0
    assert response.headers["location"] == (
        f"{URL}?k=10&done=regraded&rescored=22&changed={changed}"
    )
    page = client.get(response.headers["location"])
    assert f"Regraded without the judge: 22 grade(s) re-scored, {changed} changed." in page.text
    scored = {f"r0-{a}" for a in range(20)}
    for sid, grade in after.items():
        assert grade.provenance.scorer_version == BASE.version  # the exam's scorer, as it was
        assert grade.details.rescored_from.score == before[sid].score
        assert grade.details.judge_points == before[sid].details.judge_points
        leaned = {n.id for n in grade.details.scorer.neighbours}
        assert leaned and leaned <= scored  # the instructor's scores, by the platform's ids
    assert embedder.calls  # the neighbours were found by meaning
    # the override still wins where the platform reads the grade; its review stays closed
    row = store.reviews.answer(overridden)
    assert row.override.score == 4.5 and row.open_review is None
    assert store.intake.submission(acme, "r0-21").grade.score == 4.5
    # the other questions' grades are untouched
    now = _grades(store)
    assert all(now[i] == g for i, g in others.items() if i not in before)


def test_regrade_needs_the_token_and_the_instructors_own_exam(service):  # noqa: F811
    client, store, keys, acme, ids = service
    scored_exam(store, acme, ids["li"])
    _embedder(client)
    before = _grades(store)
    login(client, keys["li"])
    assert client.post(f"{QUESTION_URL}/regrade", data={"csrf": "forged"}).status_code == 403
    assert client.post(f"{QUESTION_URL}/regrade").status_code == 403
    choice = client.get(f"/instructor/exams/{EXAM}/questions/{CHOICE}/first")
    assert choice.status_code == 400 and "objective question" in choice.text
    assert client.get(f"/instructor/exams/{EXAM}/questions/nope/first").status_code == 404

    login(client, keys["wang"])  # an instructor of another exam
    token = csrf_of(client, "/instructor")
    assert client.get(URL).status_code == 404
    assert client.post(f"{QUESTION_URL}/regrade", data={"csrf": token}).status_code == 404
    assert _grades(store) == before
    client.cookies.clear()
    assert client.post(f"{QUESTION_URL}/regrade", data={"csrf": token}).status_code == 401


def test_without_an_embedding_model_the_page_says_so(service):  # noqa: F811
    client, store, keys, acme, ids = service
    scored_exam(store, acme, ids["li"], per_question=2)
    client.app.state.instructor_pages.__dict__["embedder"] = None
    login(client, keys["li"])
    page = client.get(URL)
    assert page.status_code == 422 and "no embedding model" in page.text


@pytest.mark.parametrize(("k", "kept"), [("7", 7), ("x", 10), ("999", 50)])
def test_the_regrade_form_keeps_a_bounded_k(service, k, kept):  # noqa: F811
    client, store, keys, acme, ids = service
    scored_exam(store, acme, ids["li"], per_question=2)
    _embedder(client)
    login(client, keys["li"])
    response = client.post(
        f"{QUESTION_URL}/regrade", data={"csrf": csrf_of(client, URL), "k": k},
        follow_redirects=False,
    )  # fmt: skip
    assert response.headers["location"].startswith(f"{URL}?k={kept}&done=regraded&")


def test_regrade_uses_the_scorer_the_workers_grade_with(service, tmp_path):  # noqa: F811
    client, store, keys, acme, ids = service
    scored_exam(store, acme, ids["li"])
    settings = Settings(service=ServiceSettings(database_url=f"sqlite:///{tmp_path / 'grader.db'}"))
    exam = load_exams([RUBRICS / f"{EXAM}.yaml"])[EXAM]
    proposal = refits.propose(settings, store, exam, "li", None, bootstrap=0)
    refits.apply(settings, store, exam, proposal, "li", None)
    assert refits.current_scorer(settings, store, exam).version == proposal.version
    pinned = settings.model_copy(update={"scorer": ScorerSettings(choice="default")})
    assert refits.current_scorer(pinned, store, exam).version == BASE.version  # GRADER_SCORER
    done = refits.regrade(pinned, store, exam, QUESTION, "li", None)
    assert done.rescored == 22
    assert {g.provenance.scorer_version for g in _grades(store, QUESTION).values()} == {
        BASE.version
    }
    before = _grades(store)
    off = settings.model_copy(update={"scorer": ScorerSettings(choice="none")})
    with pytest.raises(CalibrationError, match="GRADER_SCORER is none"):
        refits.regrade(off, store, exam, QUESTION, "li", None)
    pages = client.app.state.instructor_pages
    client.app.state.instructor_pages = dataclasses.replace(pages, settings=off)
    _embedder(client)
    login(client, keys["li"])
    response = client.post(f"{QUESTION_URL}/regrade", data={"csrf": csrf_of(client, URL)})
    assert response.status_code == 422 and "GRADER_SCORER is none" in response.text
    assert _listed(response.text)  # the page again, with the refusal
    assert _grades(store) == before
