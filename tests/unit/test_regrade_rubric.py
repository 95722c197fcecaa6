"""Apply a rubric change to everyone: a question's stored answers regraded against its new
rubric version in the background (the inline grader's loop, batch by batch), progress and
what moved on the page, the instructors' scores kept, and each grade a platform reads that
moved a new version (cause ``rubric``)."""

import re
from datetime import timedelta

from grader.models import Grade, GradeStatus, Method
from grader.service.store import NewSubmission, Store
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
    assert [c.claim for c in after["w2"].details.substance.claims if not c.negated]
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


def test_a_regrade_fails_when_the_rubric_moved_since_it_started(apart):  # noqa: F811
    client, store, _, api, _, _ = apart
    post_and_grade(client, store, api, "w1", WRONG)
    job = store.regrades.start(EXAM, ESSAY, "not-the-current-version", "li")
    wait_for(lambda: store.regrades.get(job.id).finished, 20, "the regrade")
    failed = store.regrades.get(job.id)
    assert failed.status == "failed" and "rubric changed again" in failed.error


def test_a_claim_is_one_process_s_until_it_goes_stale(database_url):
    store = Store(database_url)
    store.migrate()
    platform = store.accounts.add_platform("p", ["e"], "kid", "h", "s")
    stored = [s for s, _ in store.intake.submit(platform, [NewSubmission(f"s{i}", "e", "q1", "A")
                                                           for i in range(3)])]  # fmt: skip
    store.queue.record([(s, graded(s)) for s in stored])
    job = store.regrades.start("e", "q1", "r2", "li")
    assert (job.status, job.total, sorted(job.before)) == ("pending", 3, [s.id for s in stored])
    hour = timedelta(hours=1)
    assert store.regrades.waiting(hour) == [job.id]
    held = store.regrades.claim(hour)
    assert held.id == job.id and held.status == "running"
    assert store.regrades.claim(hour) is None and store.regrades.waiting(hour) == []
    assert store.regrades.claim(timedelta(0), job.id) is not None  # stale: taken again
    store.regrades.release(held)
    again = store.regrades.claim(hour, job.id)
    batch = store.regrades.batch(again, 2)
    new = [(s, graded(s, version="r2", score=2.0)) for s in batch]
    store.regrades.record(again, [s.id for s in batch], new, share=0.2)
    half = store.regrades.get(job.id)
    assert (half.status, half.done, half.changed) == ("running", 2, 2)
    rest = store.regrades.batch(store.regrades.claim(hour), 2)
    assert [s.id for s in rest] == [stored[2].id]
    store.regrades.record(half, [rest[0].id], [(rest[0], graded(rest[0], version="r2"))], 0.2)
    done = store.regrades.get(job.id)
    assert (done.status, done.done, done.changed) == ("done", 3, 2)  # the last did not move
    assert [c.cause for c in store.versions.history(stored[0].id)] == ["engine", "rubric"]
    assert store.intake.submission(platform, "s0").grade.provenance.rubric_version == "r2"


def graded(stored, version="r1", score=1.0):
    return Grade(
        submission_id=stored.external_id, question_id=stored.question_id,
        status=GradeStatus.GRADED, score=score, max_score=2.0, method=Method.JUDGE,
        provenance={"rubric_version": version},
    )  # fmt: skip
