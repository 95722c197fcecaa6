"""The instructor's CSV and its join with the grades: clear errors, nothing silently dropped."""

import pytest

from grader.calibrate import Scale, pair_scores, read_answers, read_human_scores
from grader.errors import CalibrationError
from grader.models import CriterionScore, Grade, GradeStatus, Method


def write(tmp_path, text, name="human.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def grade(sid, qid="q1", score=3.0, max_score=5.0, criteria=None, status=GradeStatus.GRADED):
    return Grade(
        submission_id=sid,
        question_id=qid,
        status=status,
        score=score if status is GradeStatus.GRADED else None,
        max_score=max_score,
        method=Method.JUDGE,
        criteria=[
            CriterionScore(id=cid, points=p, max_points=m, evidence=f"quote {cid}")
            for cid, (p, m) in (criteria or {}).items()
        ],
    )


def test_reads_scores_criteria_and_answers(tmp_path):
    path = write(
        tmp_path,
        "\ufeffsubmission_id,question_id,score,C1,C2,answer\n"
        's1,q1,3,2,1,"two\nlines"\n'
        "s2,q1,4.5,,,\n",
    )
    s1, s2 = read_human_scores(path)
    assert (s1.submission_id, s1.score, s1.criteria, s1.answer) == (
        "s1",
        3,
        {"C1": 2, "C2": 1},
        "two\nlines",
    )
    assert s1.line == 2
    assert s2.line == 4  # the quoted answer of s1 spans two lines
    assert s2.criteria == {} and s2.answer is None


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("submission_id,score\ns1,3\n", ":1", "missing column(s) question_id"),
        ("submission_id,question_id,score,score\n", ":1", "duplicate column(s) score"),
        (
            "submission_id,question_id,score\ns1,q1,3\ns2,q1,three\n",
            ":3",
            "column score: 'three' is not a number",
        ),
        ("submission_id,question_id,score\ns1,q1,nan\n", ":2", "is not a number"),
        ("submission_id,question_id,score\ns1,q1,-1\n", ":2", "column score: -1 is negative"),
        ("submission_id,question_id,score,C1\ns1,q1,3,x\n", ":2", "column C1: 'x' is not a number"),
        ("submission_id,question_id,score\ns1,q1,3\ns1,q1,4\n", ":3", "already on line 2"),
        ("submission_id,question_id,score\n,q1,3\n", ":2", "column submission_id: empty"),
        ("submission_id,question_id,score\ns1,q1,3,9\n", ":2", "4 cells, the header has 3"),
        ("", ":1", "empty file"),
    ],
)
def test_csv_errors_name_file_line_and_column(tmp_path, text, where, message):
    path = write(tmp_path, text)
    with pytest.raises(CalibrationError) as info:
        read_human_scores(path)
    assert f"human.csv{where}" in str(info.value)
    assert message in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(CalibrationError, match="cannot read human scores"):
        read_human_scores(tmp_path / "nope.csv")


def humans(tmp_path, rows, header="submission_id,question_id,score"):
    return read_human_scores(write(tmp_path, header + "\n" + "\n".join(rows) + "\n"))


def test_pairs_with_criteria_and_counts_what_is_unmatched(tmp_path):
    scores = humans(
        tmp_path,
        ["s1,q1,3,2,1", "s2,q1,4,,", "s3,q1,1,,", "s4,q1,2,,"],
        header="submission_id,question_id,score,C1,C2",
    )
    grades = [
        grade("s1", score=1, criteria={"C1": (1, 3), "C2": (0, 2)}),
        grade("s2", score=2),
        grade("s2", score=4),  # re-graded: the last record counts
        grade("s3", status=GradeStatus.UNSCORED),
        grade("s9", score=5),  # graded by the judge only
    ]
    pairing = pair_scores(scores, grades, human_file="human.csv")
    assert [(p.submission_id, p.human, p.judge) for p in pairing.pairs] == [
        ("s1", 3, 1),
        ("s2", 4, 4),
    ]
    c1, c2 = pairing.pairs[0].criteria
    assert (c1.id, c1.human, c1.judge, c1.max_points, c1.evidence) == ("C1", 2, 1, 3, "quote C1")
    assert (c2.human, c2.judge) == (1, 0)
    assert pairing.human_only == ["s4"]
    assert pairing.judge_unscored == ["s3"]
    assert pairing.judge_only == 1


def test_no_overlap_gives_no_pairs(tmp_path):
    pairing = pair_scores(humans(tmp_path, ["a,q1,3"]), [grade("b")])
    assert pairing.pairs == [] and pairing.human_only == ["a"] and pairing.judge_only == 1


def test_pairing_errors_name_the_csv_line(tmp_path):
    scores = humans(tmp_path, ["s1,q1,3", "s2,q1,6"])
    with pytest.raises(
        CalibrationError, match=r"human.csv:3: column score: 6 exceeds the 5 points"
    ):
        pair_scores(scores, [grade("s1"), grade("s2")], human_file="human.csv")
    with pytest.raises(
        CalibrationError, match=r"human.csv:2: column question_id: 'q1', but the grades"
    ):
        pair_scores(scores[:1], [grade("s1", qid="q2")], human_file="human.csv")
    with pytest.raises(
        CalibrationError, match=r":2: column submission_id: 's1' is not in the submissions"
    ):
        pair_scores(scores[:1], [grade("s1")], human_file="human.csv", answers={"x": "text"})
    with pytest.raises(CalibrationError, match=r":2: column question_id: 'q1' is not in the bank"):
        pair_scores(scores[:1], [grade("s1")], human_file="human.csv", scales={})


def test_criterion_columns_are_checked_against_the_scale(tmp_path):
    header = "submission_id,question_id,score,C1,C3"
    with pytest.raises(
        CalibrationError, match=r":2: column C3: question 'q1' has no criterion 'C3'"
    ):
        pair_scores(
            humans(tmp_path, ["s1,q1,2,1,1"], header),
            [grade("s1", criteria={"C1": (1, 2)})],
            human_file="human.csv",
        )
    scale = {"q1": Scale(max_score=5, criteria={"C1": 2, "C3": 3})}
    with pytest.raises(CalibrationError, match=r"column C1: 2.5 exceeds the criterion's 2 points"):
        pair_scores(humans(tmp_path, ["s1,q1,3,2.5,0.5"], header), [grade("s1")], scales=scale)


def test_bank_scale_overrides_the_grades_and_anchors_are_left_out(tmp_path):
    scores = humans(tmp_path, ["s1,q1,8", "s2,q1,2"])
    grades = [grade("s1", score=9, max_score=None), grade("s2", score=1, max_score=None)]
    pairing = pair_scores(
        scores, grades, scales={"q1": Scale(max_score=10)}, anchors={"q1": {"s2"}}
    )
    assert [(p.submission_id, p.max_score) for p in pairing.pairs] == [("s1", 10)]
    assert pairing.excluded_anchors == ["s2"]
    with pytest.raises(CalibrationError, match="no point scale for question 'q1'"):
        pair_scores(scores, grades)


def test_read_answers_from_a_submissions_file(tmp_path):
    path = write(
        tmp_path,
        '{"id": "s1", "question_id": "q1", "answer": "hello"}\n\n{"id": "s2", "answer": "x"}\n',
        "subs.jsonl",
    )
    assert read_answers(path) == {"s1": "hello", "s2": "x"}
    bad = write(tmp_path, '{"id": "s1"}\n', "bad.jsonl")
    with pytest.raises(CalibrationError, match=r"bad\.jsonl:1"):
        read_answers(bad)
