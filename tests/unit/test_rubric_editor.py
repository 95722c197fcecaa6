"""The rubric editor: the form read into a rubric (each problem named by its field), a preview
with the file's changed lines, and a save that is a new version graded with at once."""

import pytest

from grader.api.instructor.forms import FormError
from grader.api.instructor.rubric_editor import file_diff, form_fields
from grader.api.instructor.rubric_form import parse_rubric_form
from grader.bank.files import load_bank
from grader.engine.reading.rubrics import load_rubrics, rubric_problems
from grader.service.exams import load_exams
from tests.conftest import RUBRICS
from tests.unit.test_instructor_pages import ESSAY, EXAM, csrf_of, login
from tests.unit.test_rubric_versions import apart  # noqa: F401 (the fixture)

BANK = load_bank(RUBRICS / f"{EXAM}.yaml")
RUBRIC = load_rubrics(RUBRICS / f"{EXAM}.yaml", BANK)[ESSAY]
URL = f"/instructor/exams/{EXAM}/questions/{ESSAY}/rubric"


def test_the_form_of_a_rubric_reads_back_as_the_same_rubric():
    again = parse_rubric_form(form_fields(RUBRIC), RUBRIC)
    exam = load_exams([RUBRICS / f"{EXAM}.yaml"])[EXAM]
    assert again.version == RUBRIC.version and file_diff(exam, RUBRIC, again) == []


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"c0_description": ""}, "c0_description", "criterion C1 needs a description"),
        ({"c0_points": "lots"}, "c0_points", "'lots' is not a number"),
        ({"c0_points": "0"}, "c0_points", "must be more than 0"),
        ({"c1_levels": "1 all of it"}, "c1_levels", "write a level as 'points: what"),
        ({"c1_levels": "x: all"}, "c1_levels", "'x' is not a number"),
        ({"c2_wrong_claims": "a | 0"}, "c2_wrong_claims", "too short to recognise"),
        ({"c0_id": "1st"}, "c0_id", "1st: String should match pattern"),
        ({"c5_description": "工程细节二"}, "c5_id", "give the criterion an id"),
        ({"conclusion_kind": "vibe"}, "conclusion_kind", "one of verdict, value"),
        ({"conclusion_kind": "verdict"}, "conclusion_expected", "the conclusion an answer"),
        ({"anchors": "answer-9: C1=1"}, "anchors", "no anchor 'answer-9'"),
        ({**{f"c{i}_remove": "on" for i in range(5)}}, "c0_id", "at least one criterion"),
    ],
)
def test_each_problem_names_its_field(change, field, message):
    with pytest.raises(FormError) as caught:
        parse_rubric_form({**form_fields(RUBRIC), **change}, RUBRIC)
    assert caught.value.field == field and message in str(caught.value)


def test_points_that_do_not_add_up_are_refused_by_the_rubric_check():
    fields = {**form_fields(RUBRIC), "c0_points": "2"}
    problems = rubric_problems(parse_rubric_form(fields, RUBRIC), BANK.get(ESSAY))
    assert problems == ["criteria points add up to 6, not the rubric's 5"]


def test_preview_changes_nothing_and_save_is_a_new_version(apart):  # noqa: F811
    client, store, key, _, bank, _ = apart
    login(client, key)
    page = client.get(URL)
    assert page.status_code == 200 and 'name="c0_description"' in page.text
    fields = {**form_fields(RUBRIC), "csrf": csrf_of(client, URL)}
    fields["c0_levels"] += "\n0.5: 只在开始前清零一次"
    fields["c0_key_points"] += "\noptimizer.zero_grad()"
    preview = client.post(URL, data={**fields, "action": "preview"})
    assert preview.status_code == 200, preview.text
    assert "Lines of the rubric file that change" in preview.text
    assert "+      - optimizer.zero_grad()" in preview.text  # as the file is indented
    assert "+      - points: 0.5" in preview.text
    before = store.rubrics.current(EXAM)[ESSAY].rubric.version
    assert before == RUBRIC.version  # a preview saves nothing
    bad = client.post(URL, data={**fields, "c0_points": "3", "action": "save"})
    assert bad.status_code == 422 and "criteria points add up to 7" in bad.text
    assert 'value="3"' in bad.text  # the form comes back as typed
    saved = client.post(URL, data={**fields, "action": "save", "note": "a half level for C1"},
                        follow_redirects=False)  # fmt: skip
    assert saved.status_code == 303, saved.text
    current = store.rubrics.current(EXAM)[ESSAY]
    assert current.created_by == "li" and current.note == "a half level for C1"
    assert [lv.points for lv in current.rubric.criteria[0].levels] == [1.0, 0.0, 0.5]
    on_disk = load_rubrics(bank / f"{EXAM}.yaml", load_bank(bank / f"{EXAM}.yaml"))[ESSAY]
    assert on_disk.version == current.rubric.version
    shown = client.get(saved.headers["location"]).text
    assert "Rubric saved" in shown and f"version {current.rubric.version}" in shown
    assert "只在开始前清零一次" in shown  # the levels, on the question page
    again = client.post(URL, data={**fields, "action": "save"})
    assert again.status_code == 422 and "nothing changed" in again.text


def test_the_exams_false_statements_are_listed_and_one_is_added_as_a_wrong_claim(apart):  # noqa: F811
    """The exam teaches the essay grader on the pages too: the editor lists the objective
    items' false statements on the essay's topic; adding one is a new rubric version."""
    from grader.engine.reading.claims.exam import propose

    client, store, key, _, bank, _ = apart
    login(client, key)
    proposals = propose(BANK, BANK.get(ESSAY), RUBRIC)
    assert proposals
    first = proposals[0]
    page = client.get(URL).text
    assert "own false statements on this topic" in page
    assert first.claim in page and first.source in page
    other = next(c.id for c in RUBRIC.criteria if c.id != first.criterion)
    form = {"claim": first.claim, "criterion": other, "csrf": csrf_of(client, URL)}
    done = client.post(f"{URL[: -len('/rubric')]}/exam-claim", data=form, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].endswith(
        "done=exam_claim#exam-claims"
    )
    current = store.rubrics.current(EXAM)[ESSAY]
    assert current.created_by == "li" and first.source in (current.note or "")
    added = next(c for c in current.rubric.criteria if c.id == other).wrong_claims[-1]
    assert added.claim == first.claim and added.points is None  # the instructor's criterion
    on_disk = load_rubrics(bank / f"{EXAM}.yaml", load_bank(bank / f"{EXAM}.yaml"))[ESSAY]
    assert on_disk.version == current.rubric.version
    shown = client.get(done.headers["location"]).text
    assert "added as a wrong claim" in shown
    assert f"<td>{first.claim}</td>" not in shown  # listed now: no longer proposed
    again = client.post(f"{URL[: -len('/rubric')]}/exam-claim", data=form)
    assert again.status_code == 422 and "not one of the exam" in again.text
    made_up = {**form, "claim": "梯度累积可以让模型更聪明"}
    refused = client.post(f"{URL[: -len('/rubric')]}/exam-claim", data=made_up)
    assert refused.status_code == 422 and "not one of the exam" in refused.text
    assert store.rubrics.current(EXAM)[ESSAY].rubric.version == current.rubric.version
