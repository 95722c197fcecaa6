import json

import pytest

from grader.engine.judging.asking import ask
from grader.engine.judging.verdict import parse_verdict, point_choices, verdict_schema
from grader.errors import JudgeProtocolError
from grader.judge.base import Completion, JudgeRequest
from grader.judge.scripted import ScriptedJudge
from grader.models import Criterion, Level, Rubric
from tests.judges import RecordingJudge

RUBRIC = Rubric(
    question_id="q",
    points=5,
    criteria=[
        Criterion(id="C1", description="a", points=3),
        Criterion(id="C2", description="b", points=2,
                  levels=[Level(points=2, descriptor="all"), Level(points=1, descriptor="part")]),
    ],
)  # fmt: skip


def test_schema_is_compact_and_bounded():
    schema = verdict_schema(RUBRIC)
    assert schema["required"] == ["C1", "C2", "feedback"]
    assert schema["properties"]["C1"]["properties"]["points"] == {"enum": [0, 1, 2, 3]}
    assert schema["properties"]["C2"]["properties"]["points"] == {"enum": [0, 1, 2]}
    assert list(schema["properties"]["C1"]["properties"]) == ["evidence", "rationale", "points"]
    strings = [
        p
        for c in ("C1", "C2")
        for p in schema["properties"][c]["properties"].values()
        if p.get("type") == "string"
    ]
    assert all(0 < s["maxLength"] <= 100 for s in strings)
    assert schema["additionalProperties"] is False


def test_half_point_criteria_allow_halves():
    assert point_choices(Criterion(id="C1", description="x", points=1.5)) == [0, 0.5, 1, 1.5]


def test_parse_clips_points_to_the_criterion_range():
    reply = json.dumps(
        {
            "C1": {"evidence": "e", "rationale": "r", "points": 7},
            "C2": {"evidence": "", "rationale": "", "points": -1},
            "feedback": "f",
        }
    )
    verdict = parse_verdict(reply, RUBRIC)
    assert verdict.criteria["C1"].points == 3 and verdict.criteria["C2"].points == 0
    assert verdict.feedback == "f"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [("not json", "not JSON"), ("[1]", "not a JSON object"),
     ('{"C1": {"points": 1}, "feedback": ""}', "C2 is missing"),
     ('{"C1": {"points": "3"}, "C2": {"points": 1}}', "C1: points is not a number"),
     ('{"C1": {"points": true}, "C2": {"points": 1}}', "C1: points is not a number")],
)  # fmt: skip
def test_parse_rejects_invalid_replies_with_a_reason(reply, reason):
    with pytest.raises(JudgeProtocolError, match=reason):
        parse_verdict(reply, RUBRIC)


def request(i, answer="x"):
    return JudgeRequest(id=str(i), group="g", messages=[{"role": "system", "content": "规则"},
                        {"role": "user", "content": answer}], json_schema={}, rubric=RUBRIC, answer=answer)  # fmt: skip


GOOD = '{"C1":{"evidence":"x","rationale":"r","points":1},"C2":{"evidence":"x","rationale":"r","points":2},"feedback":"ok"}'


def test_judge_reasks_invalid_replies_in_batches_and_keeps_order():
    seen = {}

    def script(req):
        seen[req.id] = seen.get(req.id, 0) + 1
        if req.id == "1" and seen[req.id] == 1:
            return "{broken"
        if req.id == "2":
            return "never valid"
        if req.id == "3":
            raise RuntimeError("boom")
        return GOOD

    judge = RecordingJudge(script)
    replies = ask(judge, [request(i) for i in range(4)], max_reasks=2)
    assert [r.verdict is not None for r in replies] == [True, True, False, False]
    assert [r.attempts for r in replies] == [1, 2, 3, 1]
    assert "not JSON" in replies[2].error and "boom" in replies[3].error
    # re-asks go out as a batch, and carry the bad reply and the reason at the end
    assert [len(batch) for batch in judge.calls] == [4, 2, 1]
    reask = judge.calls[1][0]
    assert reask.messages[:2] == request(1).messages
    assert reask.messages[2] == {"role": "assistant", "content": "{broken"}
    assert "无效" in reask.messages[3]["content"]


def test_transient_backend_errors_are_not_reasked():
    judge = ScriptedJudge(lambda r: Completion(error="connection refused", transient=True))
    (reply,) = ask(judge, [request(0)])
    assert reply.verdict is None and reply.transient and reply.attempts == 1
