"""Conclusions the rules cannot read, asked of the judge both ways (``conclusion_judge``):
it decides only when "is it <expected>?" and "does it differ?" disagree by a margin."""

from __future__ import annotations

import pytest

from grader.config import JudgeSettings, Settings
from grader.engine.finish.conclusion import apply_conclusion
from grader.engine.judging.conclusion_judge import MARGIN, Ask, reading_of, requests
from grader.engine.pipeline import Pipeline
from grader.judge.base import LabelScores
from grader.models import Bank, Submission
from tests.judges import RecordingJudge
from tests.stack_question import FALSE, FULL, RUBRIC, Q

NONE = FULL.replace('"points": 2', '"points": 0')
RIGHT, WRONG = "错误，栈底元素可以最后删除", "正确，栈底元素不能最后删除"
UNREAD = "栈底元素等其他元素出栈以后，可以最后删除"  # no verdict word: the rules cannot read it


def asked(p_is: float, p_differs: float):
    """A label script: P(是) for "is it 错误?" and for "does it differ from 错误?"."""

    def script(request):
        p = p_differs if request.id.endswith("/differs") else p_is
        return {"否": 1 - p, "是": p}

    return script


def grade(answers, p_is=0.9, p_differs=0.1, verdict=FULL, rubric=RUBRIC):
    judge = RecordingJudge(lambda r: verdict, label_script=asked(p_is, p_differs))
    pipeline = Pipeline(Bank(name="t", questions=[Q]), {"q1": rubric}, judge,
                        Settings(judge=JudgeSettings(backend="scripted", mode="verdict")))  # fmt: skip
    subs = [Submission(id=f"s{i}", question_id="q1", answer=a) for i, a in enumerate(answers)]
    grades = pipeline.grade_many(subs)
    questions = [r for call in judge.calls for r in call if "/conclusion/" in r.id]
    return grades, questions


def scores(p: float) -> LabelScores:
    return LabelScores(probabilities={"否": 1 - p, "是": p}, mass=1.0)


def test_two_questions_share_the_answer_and_differ_only_in_the_ask():
    is_, differs = requests(Ask("s1", Q, FALSE, UNREAD))
    assert (is_.id, differs.id) == ("s1/conclusion/is", "s1/conclusion/differs")
    assert is_.labels == ("否", "是") and is_.messages[0] == differs.messages[0]
    head = is_.messages[1]["content"][: is_.shared_chars]
    assert differs.messages[1]["content"].startswith(head) and UNREAD in head
    assert "错误" in is_.messages[1]["content"][len(head) :]


@pytest.mark.parametrize(
    "p_is, p_differs, decision",
    [
        (0.95, 0.90, "undecided"),  # the 1.5B's yes to everything decides nothing
        (0.90, 0.90 - MARGIN + 0.01, "undecided"),
        (0.90, 0.20, "match"),
        (0.30, 0.95, "mismatch"),
    ],
)
def test_the_judge_decides_only_by_a_margin(p_is, p_differs, decision):
    reading = reading_of(Ask("s", Q, FALSE, UNREAD), scores(p_is), scores(p_differs))
    assert reading.decision == decision
    if decision != "undecided":
        assert reading.by == "judge" and reading.evidence and reading.evidence in UNREAD
        assert reading.confidence == pytest.approx(abs(p_is - p_differs), abs=1e-3)


def test_a_failed_question_leaves_the_conclusion_undecided():
    failed = LabelScores(error="engine died", transient=True)
    assert reading_of(Ask("s", Q, FALSE, UNREAD), failed, scores(0.1)).decision == "undecided"


def test_only_what_the_rules_cannot_read_is_asked_and_a_wrong_one_caps():
    (right, wrong, unread), questions = grade([RIGHT, WRONG, UNREAD], p_is=0.2, p_differs=0.9)
    assert sorted(r.id for r in questions) == ["s2/conclusion/differs", "s2/conclusion/is"]
    assert right.score == 4 and wrong.score == 0  # the rules read these two
    record = unread.details.conclusion
    assert record is not None and record.decision == "mismatch" and record.by == "judge"
    assert unread.score == 0 and record.capped_from == 4
    assert unread.feedback is not None and unread.feedback.startswith("结论错误：应为「错误」")
    assert "conclusion_undecided" not in [r.code for r in unread.review_reasons]


def test_a_yes_biased_judge_leaves_it_to_review():
    (unread,), questions = grade([UNREAD], p_is=0.96, p_differs=0.9)
    assert len(questions) == 2 and unread.score == 4
    assert unread.details.conclusion is not None
    assert unread.details.conclusion.decision == "undecided"
    assert "conclusion_undecided" in [r.code for r in unread.review_reasons]


def test_a_grade_at_or_under_its_cap_asks_nothing():
    (unread,), questions = grade([UNREAD], verdict=NONE)
    assert unread.score == 0 and questions == []


def test_a_rescore_keeps_the_judges_reading_without_asking_again():
    (unread,), _ = grade([UNREAD], p_is=0.2, p_differs=0.9)
    before = unread.model_copy(update={"score": 3.0})
    again = apply_conclusion(before, RUBRIC, UNREAD)  # no judge at hand: the recorded reading
    assert again.score == 0 and again.details.conclusion is not None
    assert again.details.conclusion.by == "judge"
