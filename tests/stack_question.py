"""One true/false-with-explanation question whose reference says 错误, its two-criterion
rubric with the verdict as its conclusion, and a judge verdict giving every point: what the
conclusion tests grade (rules, the cap, the judge's conclusion question)."""

import json

from grader.models import Conclusion, Criterion, Question, QuestionType, Rubric

FALSE = Conclusion(kind="verdict", expected="错误")
Q = Question(id="q1", number="1", section="判断说明", type=QuestionType.SHORT_ANSWER,
             stem="请判断以下叙述是否正确，并做出解释：栈底元素是不能删除的元素",
             answer="错误。栈底元素可以最后删除。", points=4)  # fmt: skip
RUBRIC = Rubric(
    question_id="q1",
    points=4,
    criteria=[
        Criterion(id="C1", description="判断", points=2, key_points=["栈底元素"]),
        Criterion(id="C2", description="解释", points=2, key_points=["最后删除"]),
    ],
    conclusion=FALSE,
)
FULL = json.dumps({"C1": {"evidence": "栈底元素", "rationale": "r", "points": 2},
                   "C2": {"evidence": "最后删除", "rationale": "r", "points": 2},
                   "feedback": "好"}, ensure_ascii=False)  # fmt: skip
