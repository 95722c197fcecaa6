"""Promoting graded answers to anchors: a new rubric version, never a guess or a duplicate."""

import pytest

from grader.calibrate import HumanScore, promote_anchors
from grader.errors import CalibrationError
from grader.models import Anchor, Criterion, Rubric

RUBRIC = Rubric(
    question_id="q1",
    points=5,
    criteria=[
        Criterion(id="C1", description="names the idea", points=3),
        Criterion(id="C2", description="gives an example", points=2),
    ],
    anchors=[Anchor(id="old", answer="An earlier anchor.", scores={"C1": 3, "C2": 2})],
)


def human(sid="s1", score=4.0, criteria=None, answer=None, line=2, question="q1"):
    return HumanScore(
        submission_id=sid,
        question_id=question,
        score=score,
        criteria={"C1": 3, "C2": 1} if criteria is None else criteria,
        answer=answer,
        line=line,
    )


def test_promote_appends_anchors_and_changes_the_version():
    promoted = promote_anchors(RUBRIC, [human()], {"s1": "Gradient accumulation, e.g. 4 steps."})
    assert promoted.version != RUBRIC.version
    assert RUBRIC.anchors[-1].id == "old"  # the original is untouched
    new = promoted.anchors[-1]
    assert (new.id, new.answer, new.scores) == (
        "s1",
        "Gradient accumulation, e.g. 4 steps.",
        {"C1": 3, "C2": 1},
    )


def test_single_criterion_rubric_takes_the_total():
    single = Rubric(
        question_id="q1", points=5, criteria=[Criterion(id="C1", description="d", points=5)]
    )
    promoted = promote_anchors(single, [human(criteria={}, answer="text")], {}, note="clear")
    assert promoted.anchors[0].scores == {"C1": 4} and promoted.anchors[0].note == "clear"


@pytest.mark.parametrize(
    ("score", "answers", "message"),
    [
        (
            human(criteria={}),
            {"s1": "x"},
            "no points per criterion, and the rubric has 2 criteria: add columns C1, C2",
        ),
        (human(criteria={"C1": 3}, score=3), {"s1": "x"}, "no points for C2"),
        (human(criteria={"C1": 3, "C2": 1, "C9": 0}), {"s1": "x"}, "unknown criterion C9"),
        (human(criteria={"C1": 3, "C2": 2}), {"s1": "x"}, "add up to 5, but the score is 4"),
        (human(criteria={"C1": 4, "C2": 0}), {"s1": "x"}, "C1: 4 exceeds its 3 points"),
        (human(), {}, "no answer text"),
        (human(sid="old"), {"old": "new text"}, "already an anchor of q1"),
        (human(), {"s1": " an  EARLIER anchor "}, "same answer as anchor 'old'"),
        (human(question="q2"), {"s1": "x"}, "answers 'q2', not 'q1'"),
    ],
)
def test_promote_refuses_with_the_csv_line(score, answers, message):
    with pytest.raises(CalibrationError) as info:
        promote_anchors(RUBRIC, [score], answers, human_file="human.csv")
    assert str(info.value).startswith("human.csv:2: submission ")
    assert message in str(info.value)


def test_the_same_answer_twice_in_one_promotion_is_refused():
    with pytest.raises(CalibrationError, match="already an anchor"):
        promote_anchors(RUBRIC, [human(), human(line=3)], {"s1": "x"})
