"""Apply a rubric change to everyone: a question's stored answers regraded against its new
rubric version in the background (the inline grader's loop, batch by batch), progress and
what moved on the page, the instructors' scores kept, and each grade a platform reads that
moved a new version (cause ``rubric``)."""

import re
from datetime import timedelta

from grader.service import regrades
from grader.service.exams import load_exams
from tests.integration.service import wait_for
from tests.unit.test_instructor_pages import ESSAY, EXAM, GOOD, csrf_of, login, sid
from tests.unit.test_instructor_rubric_edits import CLAIM, WRONG, post_and_grade
from tests.unit.test_rubric_versions import apart  # noqa: F401 (the fixture)

QUESTION = f"/instructor/exams/{EXAM}/questions/{ESSAY}"
POINTS = {"c_C1": "1", "c_C2": "0", "c_C3": "1", "c_C4": "1", "c_C5": "0"}


def test_a_question_is_regraded_against_its_new_rubric_and_shows_what_moved(apart):  # noqa: F811
    client, store, key, api, _, _ = apart
    before = {i: post_and_grade(client, store, api, i, a)
              for i, a in (("w1", WRONG), ("w2", WRONG), ("g1", GOOD))}  # fmt: skip
    login(client, key)
    csrf = csrf_of(client, QUESTION)
    scored = client.post(f"/instructor/answers/{sid(store, 'w1')}/score",
                         data={"csrf": csrf, **POINTS}, follow_redirects=False)  # fmt: skip
    assert scored.status_code == 303
    added = client.post(
        f"/instructor/answers/{sid(store, 'w2')}/wrong-claim",
        data={"sentence": CLAIM, "claim": "", "criterion": "C2", "csrf": csrf},
    )
    assert "Wrong claim added" in added.text
    page = client.get(QUESTION).text
    assert "Regrade every answer against this version" in page
    started = client.post(f"{QUESTION}/regrade-rubric", data={"csrf": csrf},
                          follow_redirects=False)  # fmt: skip
    assert started.status_code == 303
    url = started.headers["location"]
    job_id = int(url.rsplit("/", 1)[1])
    wait_for(lambda: store.regrades.get(job_id).finished, 30, "the regrade")
    job = store.regrades.get(job_id)
    assert (job.status, job.total, job.done) == ("done", 3, 3)
    after = {i: store.reviews.answer(sid(store, i)).submission.grade for i in before}
    version = store.rubrics.current(EXAM)[ESSAY].rubric.version
    assert all(g.provenance.rubric_version == version for g in after.values())
    assert after["w2"].score < before["w2"].score  # the claim's points taken
    assert "wrong_claim" in {r.code for r in after["w2"].review_reasons}
    assert after["g1"].score == before["g1"].score
    assert job.changed == sum(after[i].score != before[i].score for i in before) >= 2
    # the instructor's score is still w1's grade: no version; w2's moved: a rubric version
    causes = {i: [c.cause for c in store.versions.history(sid(store, i))] for i in before}
    assert causes == {"w1": ["engine", "score"], "w2": ["engine", "rubric"], "g1": ["engine"]}
    assert store.intake.submission(1, "w1").grade.score == 3.0
    shown = client.get(url).text
    assert "Done: 3 answer(s) regraded" in shown and 'http-equiv="refresh"' not in shown
    assert '3 <span class="muted">kept</span>' in shown  # w1's instructor score, kept
    assert f"({job.changed} of 3)" in shown
    c2 = shown.split("<td>C2</td>")[1].split("</tr>")[0]
    cells = re.findall(r'<td class="num">([^<]*)</td>', c2)
    n, mae_before, mae_after = int(cells[1]), float(cells[4]), float(cells[5])
    assert n == 1 and mae_after < mae_before  # w1's C2: the instructor gave 0, the claim too
    assert f'href="{QUESTION}/regrades/{job_id}"' in client.get(QUESTION).text


def test_a_regrade_waits_while_it_runs_and_fails_when_the_rubric_moves_again(apart):  # noqa: F811
    client, store, _, api, bank, _ = apart
    post_and_grade(client, store, api, "w1", WRONG)
    exam = load_exams([bank / f"{EXAM}.yaml"])[EXAM]
    job = store.regrades.start(EXAM, ESSAY, "not-the-current-version", "li")
    wait_for(lambda: store.regrades.get(job.id).finished, 20, "the regrade")
    failed = store.regrades.get(job.id)
    assert failed.status == "failed" and "rubric changed again" in failed.error
    # a claim is exclusive until it goes stale
    held = regrades.start(store, exam, ESSAY, "li")
    graders_stop = store.regrades.claim(timedelta(hours=1), held.id)
    if graders_stop is not None:  # the loop did not take it first
        assert store.regrades.claim(timedelta(hours=1), held.id) is None
        assert store.regrades.claim(timedelta(0), held.id) is not None  # stale: taken again
