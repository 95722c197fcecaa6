"""Grading with the keyboard: the one-answer page (score keys, save and next unscored, moves),
a group of similar answers scored at once (members detachable, differences marked), and
the score syntax both read."""

import re

import pytest

from grader.api.instructor.answer_groups import differences
from grader.api.instructor.forms import FormError, parse_points
from grader.models import Criterion
from tests.embedders import CountingEmbedder
from tests.unit.test_instructor_pages import ESSAY, EXAM, GOOD, WEAK, csrf_of, login, sid
from tests.unit.test_instructor_rubric_edits import post_and_grade
from tests.unit.test_rubric_versions import apart  # noqa: F401 (the fixture)

QUESTION = f"/instructor/exams/{EXAM}/questions/{ESSAY}"
GRADE = f"{QUESTION}/grade"
CRITERIA = [Criterion(id=f"C{i}", description="x", points=1) for i in range(1, 6)]


def test_the_score_keys():
    assert parse_points("11011", 5, CRITERIA).criteria == dict(
        zip(["C1", "C2", "C3", "C4", "C5"], [1.0, 1.0, 0.0, 1.0, 1.0], strict=True)
    )
    assert parse_points(" 1 1 0.5  1 0 ", 5, CRITERIA).score == 3.5
    assert parse_points("=3.5", 5, CRITERIA) == parse_points("= 3.5", 5, CRITERIA)
    assert parse_points("=3.5", 5, CRITERIA).criteria is None
    assert parse_points("4", 5, []).score == 4.0  # an objective question: a total
    for bad, message in [
        ("1101", "4 value(s) for 5 criteria (C1 C2 C3 C4 C5)"),
        ("12011", "2 is outside 0..1"),
        ("=6", "6 is outside 0..5"),
        ("", "required"),
        ("1 1 x 1 1", "'x' is not a number"),
    ]:
        with pytest.raises(FormError, match=re.escape(message)):
            parse_points(bad, 5, CRITERIA)


def test_grading_answer_after_answer_with_the_keyboard(apart):  # noqa: F811
    client, store, key, api, _, _ = apart
    for i, answer in enumerate((GOOD, WEAK, GOOD + "另外要注意学习率。")):
        post_and_grade(client, store, api, f"k{i}", answer)
    login(client, key)
    page = client.get(GRADE).text
    first = sid(store, "k0")
    assert f'name="at" value="{first}"' in page and "autofocus" in page
    assert "answer 1 of 3" in page and "正确清零梯度" in page  # the criteria at hand
    assert "写出zero_grad" in page  # and their level descriptors
    csrf = csrf_of(client, GRADE)
    saved = client.post(GRADE, data={"csrf": csrf, "at": str(first), "points": "11011"},
                        follow_redirects=False)  # fmt: skip
    assert saved.status_code == 303
    assert saved.headers["location"] == f"{GRADE}?at={sid(store, 'k1')}&saved={first}"
    shown = client.get(saved.headers["location"]).text
    assert "Saved k0: 4 (1 1 0 1 1)." in shown and 'id="scored-count">1<' in shown
    human = store.reviews.answer(first).human
    assert human.score == 4.0 and human.criteria["C3"] == 0.0
    table = client.get(QUESTION).text.split('id="criterion-agreement"')[1].split("</table>")[0]
    assert "<td>C3 <span" in table and table.count('<td class="num">1</td>') == 5  # n per row
    assert store.intake.submission(1, "k0").grade.score == 4.0  # the score is the grade
    # moves: p goes back, n forward, u (or Enter on nothing) to the next unscored
    second = sid(store, "k1")
    third = sid(store, "k2")
    for typed, lands in (("p", first), ("n", third), ("u", third), ("", third)):
        moved = client.post(GRADE, data={"csrf": csrf, "at": str(second), "points": typed},
                            follow_redirects=False)  # fmt: skip
        assert moved.headers["location"] == f"{GRADE}?at={lands}", typed
    wrong = client.post(GRADE, data={"csrf": csrf, "at": str(second), "points": "1101"})
    assert wrong.status_code == 422 and "4 value(s) for 5 criteria" in wrong.text
    assert 'value="1101"' in wrong.text  # what was typed stays, to correct
    for answer in (second, sid(store, "k2")):
        client.post(GRADE, data={"csrf": csrf, "at": str(answer), "points": "=2"})
    done = client.get(f"{GRADE}?at={first}").text
    assert "All 3 answers of this question are scored." in done


def test_a_group_of_similar_answers_is_scored_at_once(apart):  # noqa: F811
    client, store, key, api, _, _ = apart
    client.app.state.instructor_pages.__dict__["embedder"] = CountingEmbedder()
    similar = [GOOD, GOOD + "！", GOOD.replace("。", "；"), GOOD + " ", "先" + GOOD]
    for i, answer in enumerate([*similar, "学习率越大越好，批次越小越好，和梯度累积没有关系。"]):
        post_and_grade(client, store, api, f"g{i}", answer)
    login(client, key)
    page = client.get(f"{QUESTION}/groups").text
    groups = re.findall(r'id="group-([^"]+)"', page)
    assert len(groups) == 2  # the five alike, and the other alone
    five = page.split(f'id="group-{groups[0]}"')[1].split("</section>")[0]
    assert five.count('name="d_') == 5 and "<ins>！</ins>" in five and "<ins>先</ins>" in five
    assert 'id="points-' + groups[0] + '" name="points"' in five and "autofocus" in five
    members = re.search(r'name="members" value="([^"]+)"', five).group(1)
    detached = sid(store, "g4")
    done = client.post(
        f"{QUESTION}/groups/score",
        data={"csrf": csrf_of(client, f"{QUESTION}/groups"), "group": groups[0],
              "members": members, "points": "11101", f"d_{detached}": "on"},
        follow_redirects=False,
    )  # fmt: skip
    assert done.status_code == 303, done.text
    shown = client.get(done.headers["location"]).text
    assert f"4 answer(s) of group {groups[0]} scored." in shown
    scored = {i: store.reviews.answer(sid(store, f"g{i}")).human for i in range(6)}
    assert [scored[i].score if scored[i] else None for i in range(6)] == [4.0] * 4 + [None, None]
    versions = [c.cause for c in store.versions.history(sid(store, "g1"))]
    assert versions == ["engine", "score"]
    again = client.get(f"{QUESTION}/groups").text.split(f'id="group-{groups[0]}"')[1]
    assert again.split("</section>")[0].count("checked") == 4  # the scored come detached


def test_differences_mark_what_a_member_adds_and_lacks():
    assert differences("梯度累加后更新", "梯度先累加后再更新") == [
        ("same", "梯度"), ("added", "先"), ("same", "累加后"), ("added", "再"), ("same", "更新"),
    ]  # fmt: skip
    assert differences("abc", "ac") == [("same", "a"), ("missing", "b"), ("same", "c")]
    long = "x" * 5000
    assert "".join(t for k, t in differences(long, long + "y") if k != "missing") == long + "y"
