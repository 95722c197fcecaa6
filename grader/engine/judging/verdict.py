"""The verdict contract: the JSON schema the judge must follow, and reading its reply.

The schema is built per rubric so a small model cannot drift: criterion ids are fixed keys
(short ids — key-point text as keys made a 1.5B model "agree" with the rubric), points are a
small enum of the levels the criterion allows, every string has a short ``maxLength``, and the
quote comes before the points so the judge has to find evidence first.
"""

from __future__ import annotations

import json
import math
from typing import Any

from grader.errors import JudgeProtocolError
from grader.models import Criterion, CriterionVerdict, Rubric, Verdict

EVIDENCE_MAX_CHARS = 30
RATIONALE_MAX_CHARS = 24
FEEDBACK_MAX_CHARS = 40


def point_choices(criterion: Criterion) -> list[float | int]:
    """The points a criterion can award: its level points, else every whole (or half) point."""
    if criterion.levels:
        values = sorted({level.points for level in criterion.levels} | {0.0})
    else:
        step = 1.0 if criterion.points == int(criterion.points) else 0.5
        values = [i * step for i in range(int(criterion.points / step) + 1)]
    return [int(v) if v == int(v) else v for v in values]


def token_budget(rubric: Rubric) -> int:
    """Enough tokens for the longest reply the schema allows (a CJK character can be a token),
    so a verdict is never cut off mid-JSON and re-asked for nothing."""
    per_criterion = 24 + EVIDENCE_MAX_CHARS + RATIONALE_MAX_CHARS
    return 16 + per_criterion * len(rubric.criteria) + FEEDBACK_MAX_CHARS


def verdict_schema(rubric: Rubric) -> dict[str, Any]:
    criterion_schema = {
        c.id: {
            "type": "object",
            "properties": {
                "evidence": {"type": "string", "maxLength": EVIDENCE_MAX_CHARS},
                "rationale": {"type": "string", "maxLength": RATIONALE_MAX_CHARS},
                "points": {"enum": point_choices(c)},
            },
            "required": ["evidence", "rationale", "points"],
            "additionalProperties": False,
        }
        for c in rubric.criteria
    }
    return {
        "type": "object",
        "properties": {
            **criterion_schema,
            "feedback": {"type": "string", "maxLength": FEEDBACK_MAX_CHARS},
        },
        "required": [*criterion_schema, "feedback"],
        "additionalProperties": False,
    }


def parse_verdict(reply: str, rubric: Rubric) -> Verdict:
    """Read a reply into a Verdict with points clipped to each criterion's range.

    Raises JudgeProtocolError with a reason a re-ask can quote back to the judge.
    """
    try:
        data = json.loads(reply)
    except json.JSONDecodeError as exc:
        raise JudgeProtocolError(f"reply is not JSON ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(data, dict):
        raise JudgeProtocolError("reply is not a JSON object")
    criteria = {}
    for criterion in rubric.criteria:
        item = data.get(criterion.id)
        if not isinstance(item, dict):
            raise JudgeProtocolError(f"criterion {criterion.id} is missing")
        points = item.get("points")
        if (
            isinstance(points, bool)
            or not isinstance(points, int | float)
            or not math.isfinite(points)
        ):
            raise JudgeProtocolError(f"criterion {criterion.id}: points is not a number")
        criteria[criterion.id] = CriterionVerdict(
            evidence=str(item.get("evidence", ""))[: EVIDENCE_MAX_CHARS * 2],
            rationale=str(item.get("rationale", ""))[: RATIONALE_MAX_CHARS * 2],
            points=min(max(float(points), 0.0), criterion.points),
        )
    feedback = data.get("feedback", "")
    return Verdict(criteria=criteria, feedback=str(feedback)[: FEEDBACK_MAX_CHARS * 2])
