import json

import pytest

from grader.engine.judging.draft import _rescale, draft_rubric, draft_schema
from grader.engine.reading.rubrics import rubric_problems
from grader.errors import JudgeProtocolError
from grader.judge.base import Completion
from grader.judge.scripted import ScriptedJudge
from grader.models import Question, QuestionType
from tests.judges import RecordingJudge

Q = Question(id="q", number="1", section="简答题", type=QuestionType.SHORT_ANSWER, stem="简述梯度累积。",
             answer="多个小批次梯度累加，再统一更新，节省显存。", points=5)  # fmt: skip


def test_draft_from_the_judges_proposal_adds_up_and_is_unreviewed():
    proposal = {"criteria": [
        {"description": "梯度累加", "points": 3, "key_points": ["梯度累加"]},
        {"description": "统一更新", "points": 3, "key_points": ["统一更新"]},
        {"description": "节省显存", "points": 1, "key_points": ["显存"]},
    ]}  # fmt: skip
    judge = RecordingJudge(lambda r: json.dumps(proposal, ensure_ascii=False))
    rubric = draft_rubric(Q, judge)
    assert not rubric.reviewed and "drafted by scripted" in rubric.notes
    assert sum(c.points for c in rubric.criteria) == 5
    assert [c.id for c in rubric.criteria] == ["C1", "C2", "C3"]
    assert rubric_problems(rubric, Q) == []
    request = judge.calls[0][0]
    assert request.json_schema == draft_schema(5, 5)
    assert "多个小批次梯度累加" in request.messages[1]["content"]


def test_draft_failures_are_reported():
    with pytest.raises(JudgeProtocolError, match="failed"):
        draft_rubric(Q, ScriptedJudge(lambda r: Completion(error="down")))
    with pytest.raises(JudgeProtocolError, match="not a rubric draft"):
        draft_rubric(Q, ScriptedJudge(lambda r: "{}"))


@pytest.mark.parametrize(
    ("proposed", "points"), [([3, 3, 1], 5), ([1, 1], 10), ([5], 5), ([2, 2, 2, 2, 2], 5)]
)
def test_rescale_keeps_whole_points_that_add_up(proposed, points):
    shares = _rescale([float(p) for p in proposed], points)
    assert sum(shares) == points and all(s >= 1 and s == int(s) for s in shares)
