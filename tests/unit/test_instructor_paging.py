"""The instructor pages on long exams: counts come from the database, not from reading every
answer, and a question's answers and the review queue come a page at a time."""

import re

from grader.api.instructor.views import PAGE_SIZE, Pager
from grader.service.store import AnswerCounts
from tests.integration.service import wait_for
from tests.unit import test_instructor_pages as pages
from tests.unit.test_instructor_pages import CHOICE, ESSAY, EXAM, csrf_of, login, sid

bank_copy, service = pages.bank_copy, pages.service  # the same fixtures

CARD = re.compile(r'<section class="card[^"]*" id="a(\d+)"')
NEXT = re.compile(r'<a rel="next" class="next" href="([^"]+)"')
PREV = re.compile(r'<a rel="prev" class="prev" href="([^"]+)"')


def test_the_exam_list_counts_in_the_database_without_reading_answers(service, monkeypatch):
    client, store, keys, _, _ = service
    flagged = sum(a.open_review is not None for a in store.reviews.answers(EXAM))
    counts = store.reviews.counts(EXAM)
    assert counts[ESSAY] == AnswerCounts(answers=3, graded=3, human=0, open_reviews=flagged)
    assert counts[CHOICE] == AnswerCounts(answers=1, graded=1, human=0, open_reviews=0)

    def no_reading(*args, **kwargs):
        raise AssertionError("the exam list read answers")

    monkeypatch.setattr(store.reviews, "answers", no_reading)
    monkeypatch.setattr(store.reviews, "_answer_rows", no_reading)
    login(client, keys["li"])
    page = client.get("/instructor")
    assert page.status_code == 200, page.text
    cells = re.findall(r'<td class="num">(\d+)</td>', page.text)
    assert cells[1:3] == ["4", "0"]  # answers, scored by an instructor


def test_a_question_with_120_answers_shows_50_a_page_with_links_between(service):
    client, store, keys, api, _ = service
    posted = [
        {"id": f"m{i:03}", "exam": EXAM, "question_id": CHOICE, "answer": "ABCD"[i % 4]}
        for i in range(120)
    ]
    assert client.post("/v1/submissions", json=posted, headers=api).status_code == 202
    wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 125, 60, "125 grades")
    login(client, keys["li"])
    url = f"/instructor/exams/{EXAM}/questions/{CHOICE}"
    first = client.get(url).text
    ids = [int(x) for x in CARD.findall(first)]
    assert len(ids) == PAGE_SIZE and ids == sorted(ids)
    assert "Answers (121)" in first and "answers 1–50 of 121 · page 1 of 3" in first
    assert not PREV.search(first)

    second = client.get(NEXT.search(first).group(1).replace("&amp;", "&")).text
    on_second = [int(x) for x in CARD.findall(second)]
    assert len(on_second) == PAGE_SIZE and min(on_second) > max(ids)
    assert "answers 51–100 of 121" in second
    third = client.get(NEXT.search(second).group(1)).text
    on_third = [int(x) for x in CARD.findall(third)]
    assert len(on_third) == 21 and not NEXT.search(third)
    assert [int(x) for x in CARD.findall(client.get(PREV.search(third).group(1)).text)] == (
        on_second
    )
    # an answer's own link (the review queue's, a form's redirect) opens the page it is on
    assert f'id="a{on_third[-1]}"' in client.get(f"{url}?at={on_third[-1]}").text
    # past the last page is the last page; no page number is a 422, not a 500
    assert CARD.findall(client.get(f"{url}?page=9").text) == CARD.findall(third)
    for bad in ("0", "x", "99999999999999999999999"):
        assert client.get(f"{url}?page={bad}").status_code == 422
    assert client.get(f"{url}?at=99999999999999999999999").status_code == 422


def test_a_form_on_page_three_returns_to_page_three(service):
    client, store, keys, api, _ = service
    posted = [
        {"id": f"m{i:03}", "exam": EXAM, "question_id": CHOICE, "answer": "A"} for i in range(110)
    ]
    assert client.post("/v1/submissions", json=posted, headers=api).status_code == 202
    wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 115, 60, "115 grades")
    login(client, keys["li"])
    last = sid(store, "m109")
    response = client.post(
        f"/instructor/answers/{last}/score",
        data={"csrf": csrf_of(client), "score": "1"},
        follow_redirects=True,
    )
    assert response.status_code == 200
    assert f'id="a{last}"' in response.text and "page 3 of 3" in response.text
    # a bad score re-shows the page with that answer too (422)
    bad = client.post(
        f"/instructor/answers/{last}/score", data={"csrf": csrf_of(client), "score": "-1"}
    )
    assert bad.status_code == 422 and f'class="card target" id="a{last}"' in bad.text


def test_the_review_queue_is_paged_from_the_database(service):
    _, store, _, _, _ = service
    flagged = [a.submission.id for a in store.reviews.answers(EXAM) if a.open_review]
    assert flagged, "the fixture flags at least the injection attempt"
    one = store.reviews.answers(EXAM, open_only=True, offset=0, limit=1)
    rest = store.reviews.answers(EXAM, open_only=True, offset=1, limit=PAGE_SIZE)
    assert [a.submission.id for a in one + rest] == flagged
    assert Pager.of(121, 3).first == 101 and Pager.of(121, 3).last == 121
    assert Pager.of(0, 5).page == 1 and Pager.of(0, 1).first == 0
