"""Item analysis on a small made-up exam, checked against the textbook formulas computed here
with numpy, independently of grader.reports (which uses pandas).

Question q2's key is wrong on purpose: the bank says B, the strong students answer C (and so
score 0), the weak ones B. Its discrimination must come out negative and its distractor table
must show the upper group on C.
"""

from __future__ import annotations

import numpy as np
import pytest

from grader.models import Bank, Grade, GradeStatus, Method, Question, ReviewReason
from grader.reports.items import ItemFlag, group_size
from grader.reports.scores import AnswerRecord, collect
from grader.reports.sources import BLANK, NOT_READ, UNKNOWN, chosen_option
from grader.reports.summary import NO_ANSWER, build_report

OPTIONS = {"A": "a", "B": "b", "C": "c", "D": "d"}
BANK = Bank(
    name="made_up",
    questions=[
        Question(id="q1", number="1", section="I", type="single_choice", stem="?", options=OPTIONS, answer="A", points=2),
        Question(id="q2", number="2", section="I", type="single_choice", stem="?", options=OPTIONS, answer="B", points=2),
        Question(id="q3", number="3", section="I", type="multiple_choice", stem="?", options=OPTIONS, answer="AC", points=2),
        Question(id="q4", number="4", section="II", type="true_false", stem="?", answer=True, points=1),
        Question(id="q5", number="5", section="III", type="short_answer", stem="?", answer="text", points=5),
        Question(id="q6", number="6", section="III", type="fill_blank", stem="?", answer="x", points=1),
    ],
)  # fmt: skip
STUDENTS = [f"s{i:02d}" for i in range(1, 13)]  # s01 strongest … s12 weakest
# Chosen options per student (None: no answer at all).
CHOICES = {
    "q1": ["A", "A", "A", "A", "A", "A", "A", "A", "B", "C", "A", "D"],
    "q2": ["C", "C", "C", "C", "C", "C", "C", "B", "B", "B", "A", "B"],
    "q3": ["AC", "AC", "AC", "AC", "AC", "AC", "A", "AC", "ABC", "B", "C", None],
    "q4": [True, True, True, True, True, True, True, False, True, False, False, True],
}
ESSAY = [5, 5, 4, 4, 3, 3, 3, 2, 2, 1, 1, 0]
FILL = [1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0]


def _grade(student: str, qid: str, score: float | None, top: float, **extra) -> AnswerRecord:
    graded = score is not None
    grade = Grade(
        submission_id=f"{student}-{qid}",
        question_id=qid,
        student=student,
        status=GradeStatus.GRADED if graded else GradeStatus.UNSCORED,
        score=score,
        max_score=top,
        method=extra.pop("method", Method.EXACT),
        **extra,
    )
    return AnswerRecord(grade.submission_id, qid, student, grade)


def _records() -> list[AnswerRecord]:
    records = []
    for qid, chosen in CHOICES.items():
        q = BANK.get(qid)
        for student, read in zip(STUDENTS, chosen, strict=True):
            if read is None:
                continue  # no submission: counts 0
            right = read == q.answer
            records.append(
                _grade(
                    student, qid, q.points if right else 0.0, q.points, details={"read_as": read}
                )
            )
    for student, points, fill in zip(STUDENTS, ESSAY, FILL, strict=True):
        records.append(_grade(student, "q5", float(points), 5.0, method=Method.JUDGE))
        records.append(_grade(student, "q6", float(fill), 1.0))
    # s13's essay could not be scored: left out of the item analysis, never a silent 0.
    records.append(_grade("s13", "q1", 2.0, 2.0, details={"read_as": "A"}))
    reason = ReviewReason(code="judge_failed", message="no valid verdict")
    records.append(
        _grade(
            "s13", "q5", None, 5.0, method=Method.JUDGE, needs_review=True, review_reasons=[reason]
        )
    )
    return records


def _expected_matrix() -> np.ndarray:
    """The textbook table: rows students s01…s12, columns q1…q6, missing answers as 0."""
    columns = []
    for qid, chosen in CHOICES.items():
        q = BANK.get(qid)
        columns.append([q.points if c == q.answer else 0.0 for c in chosen])
    columns += [ESSAY, FILL]
    return np.array(columns, dtype=float).T


@pytest.fixture(scope="module")
def report():
    return build_report(collect(_records(), BANK))


def test_item_statistics_match_the_textbook_formulas(report):
    x = _expected_matrix()
    points = np.array([2, 2, 2, 1, 5, 1], dtype=float)
    total = x.sum(axis=1)
    n, k = x.shape
    facility = x.mean(axis=0) / points
    rest_r = [np.corrcoef(x[:, j], total - x[:, j])[0, 1] for j in range(k)]
    g = int(np.floor(0.27 * n + 0.5))
    order = np.argsort(-total, kind="stable")
    upper, lower = order[:g], order[-g:]
    upper_lower = (x[upper].mean(axis=0) - x[lower].mean(axis=0)) / points
    alpha = k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / total.var(ddof=1))
    sem = total.std(ddof=1) * np.sqrt(1 - alpha)

    assert report.test.students == 12 and report.test.items == 6 and g == group_size(12) == 3
    assert report.test.alpha == pytest.approx(alpha)
    assert report.test.sem == pytest.approx(sem)
    assert report.test.mean == pytest.approx(total.mean())
    assert report.test.sd == pytest.approx(total.std(ddof=1))
    for j, q in enumerate(report.questions):
        assert q.items.facility == pytest.approx(facility[j]), q.question_id
        assert q.items.discrimination == pytest.approx(rest_r[j]), q.question_id
        assert q.items.upper_lower == pytest.approx(upper_lower[j]), q.question_id


def test_a_wrong_key_shows_in_the_distractor_table_and_is_flagged(report):
    x = _expected_matrix()
    total = x.sum(axis=1)
    order = np.argsort(-total, kind="stable")
    upper = {STUDENTS[i] for i in order[:3]}
    lower = {STUDENTS[i] for i in order[-3:]}
    q2 = next(q for q in report.questions if q.question_id == "q2")
    rows = {row.option: row for row in q2.items.distractors}
    chosen = dict(zip(STUDENTS, CHOICES["q2"], strict=True))
    for option in "ABCD":
        assert rows[option].chosen == sum(c == option for c in chosen.values())
        assert rows[option].upper == sum(chosen[s] == option for s in upper)
        assert rows[option].lower == sum(chosen[s] == option for s in lower)
    assert rows["B"].key and not rows["C"].key
    assert rows["C"].upper == 3 and rows["B"].upper == 0  # the strong students chose C
    assert q2.items.discrimination < 0
    assert {ItemFlag.NEGATIVE, ItemFlag.WRONG_KEY} <= set(q2.items.flags)
    q1 = next(q for q in report.questions if q.question_id == "q1")
    assert q1.items.discrimination > 0.2 and q1.items.flags == []


def test_multiple_choice_and_true_false_tables_count_letters_and_missing_answers(report):
    q3 = next(q for q in report.questions if q.question_id == "q3")
    rows = {row.option: row for row in q3.items.distractors}
    chosen = CHOICES["q3"]
    for letter in "ABCD":
        assert rows[letter].chosen == sum(c is not None and letter in c for c in chosen)
    assert rows["A"].key and rows["C"].key and not rows["B"].key
    assert rows[NO_ANSWER].chosen == 1  # s12 did not answer
    q4 = next(q for q in report.questions if q.question_id == "q4")
    rows = {row.option: row for row in q4.items.distractors}
    assert rows["true"].key and rows["true"].chosen == sum(CHOICES["q4"])
    assert rows["false"].chosen == 12 - sum(CHOICES["q4"])


def test_unscored_answers_keep_totals_open_and_students_out_of_the_analysis(report):
    s13 = next(s for s in report.students if s.student == "s13")
    assert s13.total is None and s13.partial == 2.0 and s13.rank is None and s13.unscored == 1
    assert s13.sections["III"] is None and s13.sections["I"] == 2.0
    assert [r.question_id for r in s13.under_review] == ["q5"]
    assert any("1 student(s) with unscored answers" in n for n in report.notes)
    q5 = next(q for q in report.questions if q.question_id == "q5")
    assert q5.answers == 13 and q5.scored == 12 and q5.review == 1
    assert q5.review_reasons == {"judge_failed": 1} and q5.methods == {"judge": 13}


def test_per_student_totals_ranks_and_per_question_figures(report):
    x = _expected_matrix()
    by_student = {s.student: s for s in report.students}
    for i, student in enumerate(STUDENTS):
        assert by_student[student].total == pytest.approx(x[i].sum())
    totals = x.sum(axis=1)
    for i, student in enumerate(STUDENTS):  # competition ranking: ties share the best rank
        assert by_student[student].rank == 1 + int((totals > totals[i]).sum())
    assert sorted(report.totals) == sorted(totals.tolist())
    q1 = next(q for q in report.questions if q.question_id == "q1")
    assert q1.full_share == pytest.approx(10 / 13) and q1.zero_share == pytest.approx(3 / 13)
    assert q1.score_counts == {"0": 3, "2": 10}


def test_undefined_figures_are_none_not_zero():
    bank = Bank(name="tiny", questions=[BANK.questions[0], BANK.questions[4]])
    records = [
        _grade("a", "q1", 2.0, 2.0, details={"read_as": "A"}),
        _grade("b", "q1", 2.0, 2.0, details={"read_as": "A"}),
        _grade("a", "q5", 3.0, 5.0),
        _grade("b", "q5", 1.0, 5.0),
    ]
    report = build_report(collect(records, bank))
    q1 = report.questions[0]
    assert q1.items.discrimination is None and q1.items.flags == [ItemFlag.NO_VARIANCE]
    one = build_report(collect(records[:1] + records[2:3], bank))
    assert one.test is None and any("at least two students" in n for n in one.notes)


def test_the_chosen_option_comes_from_the_grade_or_the_answer_text():
    q1, q4 = BANK.get("q1"), BANK.get("q4")
    blank = _grade("a", "q1", 0.0, 2.0, method=Method.RULE)
    blank.grade.review_reasons.append(ReviewReason(code="blank", message="no answer given"))
    assert chosen_option(q1, blank) == BLANK
    assert chosen_option(q1, _grade("a", "q1", 2.0, 2.0, details={"read_as": "A"})) == "A"
    assert chosen_option(q1, _grade("a", "q1", 0.0, 2.0, details={"read_as": None})) == NOT_READ
    assert chosen_option(q4, _grade("a", "q4", 1.0, 1.0, details={"read_as": True})) == "true"
    no_details = _grade("a", "q1", 0.0, 2.0)
    assert chosen_option(q1, no_details) == UNKNOWN
    with_text = AnswerRecord("a-q1", "q1", "a", no_details.grade, "（c）")
    assert chosen_option(q1, with_text) == "C"
    assert chosen_option(q4, AnswerRecord("a-q4", "q4", "a", None, "×")) == "false"
    assert chosen_option(q1, AnswerRecord("a-q1", "q1", "a", None, "不知道")) == NOT_READ


def test_questions_awaiting_the_judge_leave_the_objective_part_analysed():
    """Essays unscored but one (blank, 0 by rule; graded with --judge none): dropping students
    would leave one, so the essay question is left out instead and the rest is analysed for
    everyone."""
    records = [r for r in _records() if r.student != "s13" and r.question_id != "q5"]
    records += [_grade(s, "q5", None, 5.0, method=Method.NONE) for s in STUDENTS[:-1]]
    records.append(_grade(STUDENTS[-1], "q5", 0.0, 5.0, method=Method.RULE))
    report = build_report(collect(records, BANK))
    assert report.test.students == 12 and report.test.items == 5
    assert report.questions[4].items is None
    assert any("1 question(s) with unscored answers" in n for n in report.notes)
    x = np.delete(_expected_matrix(), 4, axis=1)
    total = x.sum(axis=1)
    alpha = 5 / 4 * (1 - x.var(axis=0, ddof=1).sum() / total.var(ddof=1))
    assert report.test.alpha == pytest.approx(alpha)
    assert [s.total is None for s in report.students] == [True] * 11 + [False]
