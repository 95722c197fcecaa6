"""The instructor pages' integrity view: near-copies side by side, out of the review queue
(the service fixture of ``test_instructor_pages``: a real SQLite file, the scripted judge; the
CountingEmbedder standing in for e5, so that answers have signals)."""

import pytest

from grader.service import exams
from tests.embedders import CountingEmbedder
from tests.integration.service import wait_for
from tests.unit.test_instructor_pages import ESSAY, EXAM, bank_copy, login, service  # noqa: F401
from tests.unit.test_refit_cli import counting

COPY = "学习率预热：训练开始时把学习率从很小的值线性增大到目标值，避免早期梯度过大导致训练发散。"


@pytest.fixture
def embedded(monkeypatch, request):
    counting(monkeypatch)
    monkeypatch.setattr(exams, "make_embedder", lambda settings, progress=None: CountingEmbedder())
    return request.getfixturevalue("service")


def test_near_copies_are_on_the_integrity_page_and_not_in_the_review_queue(embedded):
    client, store, keys, api, _ = embedded
    posted = [
        {"id": f"d{i}", "exam": EXAM, "question_id": ESSAY, "answer": COPY, "student": name}
        for i, name in ((1, "dee"), (2, "eve"))
    ]
    assert client.post("/v1/submissions", json=posted, headers=api).status_code == 202
    wait_for(lambda: store.metrics.counts()["submissions"].get("graded") == 7, 20, "7 grades")
    login(client, keys["li"])
    page = client.get(f"/instructor/exams/{EXAM}/integrity").text
    assert "(1 pairs)" in page and ">d1<" in page and ">d2<" in page and "eve" in page
    assert ">e1<" not in page  # worded otherwise
    assert page.count(">grade it<") == 2 and 'class="answer diff">' + COPY in page  # no change
    review = client.get(f"/instructor/exams/{EXAM}/review").text
    assert "near_duplicate" not in review
    ranked = [
        a.submission.external_id
        for a in store.reviews.answers(EXAM, open_only=True)
        if a.submission.external_id != "e3"
    ]
    assert ranked  # the budget: one of the question's five answers
    # the hard reason (suspected injection) first, then the ranking with its expected error
    assert review.index(">e3<") < review.index(f">{ranked[0]}<")
    assert "expected error" in review and "rank 1 of" in review
